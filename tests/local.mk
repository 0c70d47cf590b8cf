# tests: build rules (included from the top Makefile.am)

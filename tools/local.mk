# tools: dataset generator and converters (included from the top Makefile.am)

# python: the ctypes binding (included from the top Makefile.am)

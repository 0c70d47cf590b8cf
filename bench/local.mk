# bench: build rules (included from the top Makefile.am)

# python bench
EXTRA_DIST += bench/pytorch_baseline.py bench/compare-pytorch.sh

# coordl-bench (loader helper): per-epoch loader throughput, stall, hits.
bin_PROGRAMS += bench/coordl-bench
bench_coordl_bench_SOURCES = bench/coordl-bench.c
bench_coordl_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/loader
bench_coordl_bench_LDADD = loader/libcoordl-core.la
dist_man_MANS += doc/coordl-bench.1


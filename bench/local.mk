# bench: build rules (included from the top Makefile.am)

# python bench
EXTRA_DIST += bench/pytorch_baseline.py bench/compare-pytorch.sh

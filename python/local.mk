# SPDX-License-Identifier: GPL-2.0-or-later
# python: the ctypes binding (included from the top Makefile.am)
#
# The package is plain Python over the C ABI, installed as data files into
# $(python_sitedir) (configure: --with-python-sitedir; the default is on the
# interpreter's sys.path when prefix=/usr). For another prefix add that
# directory to PYTHONPATH.
coordlpythondir = $(python_sitedir)/coordl
dist_coordlpython_DATA = \
	python/coordl/__init__.py \
	python/coordl/_abi.py \
	python/coordl/checkfreq.py \
	python/coordl/loader.py
# _installed.py records libdir so that an installed package finds the
# installed libcoordl even where libdir is not on the linker's path.
nodist_coordlpython_DATA = python/coordl/_installed.py
python/coordl/_installed.py: Makefile
	$(AM_V_GEN)$(MKDIR_P) python/coordl && \
	{ echo '"""Written by make: where libcoordl was installed."""'; \
	  echo 'LIBDIR = "$(libdir)"'; } >$@
CLEANFILES += python/coordl/_installed.py

# abi-layout prints the C layout of the public structs for abi.py.
check_PROGRAMS += python/test/abi-layout
python_test_abi_layout_SOURCES = python/test/abi-layout.c

PYTHON_TESTS = \
	python/test/abi.py \
	python/test/loader.py \
	python/test/cache.py \
	python/test/group.py \
	python/test/tensors.py \
	python/test/example.py \
	python/test/compare-pytorch.py \
	python/test/checkfreq.py \
	python/test/checkfreq-exact.py \
	python/test/checkfreq-torch.py \
	python/test/checkfreq-ddp.py
UNIT_TESTS += $(PYTHON_TESTS)
EXTRA_DIST += $(PYTHON_TESTS) python/test/taputil.py python/test/ckptjob.py \
	examples/train_resnet_emulated.py examples/train_checkfreq.py
dist_man_MANS += doc/coordl-python.7

# SPDX-License-Identifier: GPL-2.0-or-later
# loader: build rules (included from the top Makefile.am)
#
# libcoordl is built in two layers: a convenience library with every object
# (the unit tests, coordl-pack and coordl-bench link it and may use internal
# coordl__ functions), and the installed shared library on top of it, which
# exports only the public coordl_ names. common/libsyncommon (parsers, file
# helpers, the error helper) is inside both, internal to libcoordl.
noinst_LTLIBRARIES += loader/libcoordl-core.la
loader_libcoordl_core_la_SOURCES = \
	loader/util.c loader/util.h \
	loader/env.c loader/env.h \
	loader/follow.c loader/follow.h \
	loader/profmode.c loader/profmode.h \
	loader/source.c loader/source.h \
	loader/remote.c loader/remote.h loader/s3.c \
	loader/fetch.c loader/fetch.h \
	loader/cache.c loader/cache.h \
	loader/coord.c loader/coord.h \
	loader/grant.c loader/grant.h \
	loader/peer.c loader/peer.h \
	loader/loader.c \
	loader/prep.c loader/prep.h loader/prep_internal.h \
	loader/ckpt.c loader/ckpt_file.c loader/ckpt_policy.c loader/ckpt.h \
	loader/rng.h loader/cuda.h
loader_libcoordl_core_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(LIBJPEG_CFLAGS) $(LIBCURL_CFLAGS) $(CUDA_CPPFLAGS) $(LIBCRYPTO_CFLAGS) $(PMIX_CFLAGS)
loader_libcoordl_core_la_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
loader_libcoordl_core_la_LIBADD = common/libsyncommon.la $(LIBJPEG_LIBS) $(LIBCURL_LIBS) \
	$(CUDA_LIBS) $(PTHREAD_LIBS) $(LIBM) $(LIBRT) $(LIBCRYPTO_LIBS) $(PMIX_LIBS)
if HAVE_CUDA
loader_libcoordl_core_la_SOURCES += loader/cuda.c
endif
EXTRA_DIST += loader/cuda.c

lib_LTLIBRARIES += loader/libcoordl.la
loader_libcoordl_la_SOURCES =
loader_libcoordl_la_LIBADD = loader/libcoordl-core.la
loader_libcoordl_la_LDFLAGS = -version-info 0:0:0 -export-symbols-regex '^coordl_[^_]'

include_HEADERS += include/coordl.h include/coordl_ckpt.h include/synergy_env.h
noinst_HEADERS += include/coordl_peerwire.h
dist_man_MANS += doc/coordl.3 doc/coordl_ckpt.3
pkgconfig_DATA += loader/coordl.pc
DISTCLEANFILES += loader/coordl.pc

# Unit tests: C programs printing TAP, linked with the convenience library.
LOADER_TEST_CPPFLAGS = $(AM_CPPFLAGS) $(LIBJPEG_CFLAGS) $(LIBCURL_CFLAGS)
LOADER_TEST_LDADD = loader/libcoordl-core.la

LOADER_TEST_PROGS = \
	loader/test/env.t \
	loader/test/source.t \
	loader/test/cache.t \
	loader/test/order.t \
	loader/test/pipeline.t \
	loader/test/minio.t \
	loader/test/pack.t \
	loader/test/cuda.t \
	loader/test/follow.t \
	loader/test/multi.t \
	loader/test/grant.t \
	loader/test/profmode.t \
	loader/test/remote.t \
	loader/test/peer.t \
	loader/test/coord.t \
	loader/test/ckpt.t \
	loader/test/ckpt-policy.t
LOADER_TESTS = $(LOADER_TEST_PROGS) loader/test/coordl-bench.sh loader/test/remote-server.sh
# Tests that run worker threads: the TSan build runs these.
LOADER_THREAD_TESTS = \
	loader/test/order.t \
	loader/test/pipeline.t \
	loader/test/minio.t \
	loader/test/cache.t \
	loader/test/follow.t \
	loader/test/multi.t \
	loader/test/grant.t \
	loader/test/peer.t \
	loader/test/coord.t \
	loader/test/profmode.t \
	loader/test/ckpt.t \
	loader/test/remote-server.sh
check_PROGRAMS += $(LOADER_TEST_PROGS)
EXTRA_DIST += loader/test/coordl-bench.sh loader/test/fuzz_source.c loader/test/fuzz_remote.c \
	loader/test/remote-server.sh loader/test/sigv4_check.py
UNIT_TESTS += $(LOADER_TESTS)
THREAD_TESTS += $(LOADER_THREAD_TESTS)
noinst_HEADERS += loader/test/testdata.h

loader_test_env_t_SOURCES = loader/test/env.c
loader_test_env_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_env_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_source_t_SOURCES = loader/test/source.c loader/test/testdata.c
loader_test_source_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_source_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_cache_t_SOURCES = loader/test/cache.c loader/test/testdata.c
loader_test_cache_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_cache_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_order_t_SOURCES = loader/test/order.c loader/test/testdata.c
loader_test_order_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_order_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_pipeline_t_SOURCES = loader/test/pipeline.c loader/test/testdata.c
loader_test_pipeline_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_pipeline_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_minio_t_SOURCES = loader/test/minio.c loader/test/testdata.c
loader_test_minio_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_minio_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_pack_t_SOURCES = loader/test/pack.c loader/test/testdata.c
loader_test_pack_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_pack_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_remote_t_SOURCES = loader/test/remote.c
loader_test_remote_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_remote_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_follow_t_SOURCES = loader/test/follow.c loader/test/testdata.c
loader_test_follow_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_follow_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_multi_t_SOURCES = loader/test/multi.c loader/test/testdata.c
loader_test_multi_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_multi_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_coord_t_SOURCES = loader/test/coord.c loader/test/testdata.c
loader_test_coord_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_coord_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_grant_t_SOURCES = loader/test/grant.c loader/test/testdata.c
loader_test_grant_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_grant_t_LDADD = $(LOADER_TEST_LDADD)
# peer.t plays a hostile UCX process (when UCX is there) against the loader.
loader_test_peer_t_SOURCES = loader/test/peer.c loader/test/testdata.c
loader_test_peer_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS) $(UCX_CFLAGS)
loader_test_peer_t_LDADD = $(LOADER_TEST_LDADD) $(UCX_LIBS)
loader_test_ckpt_t_SOURCES = loader/test/ckpt.c
loader_test_ckpt_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_ckpt_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_ckpt_policy_t_SOURCES = loader/test/ckpt_policy.c
loader_test_ckpt_policy_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_ckpt_policy_t_LDADD = $(LOADER_TEST_LDADD)
loader_test_profmode_t_SOURCES = loader/test/profmode.c loader/test/testdata.c
loader_test_profmode_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_profmode_t_LDADD = $(LOADER_TEST_LDADD)
# The server test (nginx on 127.0.0.1) drives remote-client.
check_PROGRAMS += loader/test/remote-client
loader_test_remote_client_SOURCES = loader/test/remote-client.c
loader_test_remote_client_CPPFLAGS = $(LOADER_TEST_CPPFLAGS)
loader_test_remote_client_LDADD = $(LOADER_TEST_LDADD)
loader/test/remote-server.log: loader/test/remote-client$(EXEEXT) tools/coordl-datagen$(EXEEXT) \
	tools/coordl-pack$(EXEEXT) bench/coordl-bench$(EXEEXT) profiler/synergy-profile$(EXEEXT)
loader_test_cuda_t_SOURCES = loader/test/cuda.c loader/test/testdata.c
loader_test_cuda_t_CPPFLAGS = $(LOADER_TEST_CPPFLAGS) $(CUDA_CPPFLAGS)
loader_test_cuda_t_LDADD = $(LOADER_TEST_LDADD)
# pack.t runs the tool it tests.
loader/test/pack.log: tools/coordl-pack$(EXEEXT)
loader/test/coordl-bench.log: bench/coordl-bench$(EXEEXT) tools/coordl-datagen$(EXEEXT)

# prep tests (prep helper)
# prep.t compiles prep.c itself (not the convenience library) so that it
# depends on nothing but libjpeg and common/. fuzz_prep.c is built on demand only, with
# clang -fsanitize=fuzzer (see the comment at its top).
check_PROGRAMS += loader/test/prep.t
UNIT_TESTS += loader/test/prep.t
noinst_HEADERS += loader/test/prep_jpeg.h
EXTRA_DIST += loader/test/fuzz_prep.c
loader_test_prep_t_SOURCES = loader/test/prep.c loader/prep.c
loader_test_prep_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBJPEG_CFLAGS)
loader_test_prep_t_LDADD = common/libsyncommon.la $(LIBJPEG_LIBS) $(LIBM)

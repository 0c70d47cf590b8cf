# SPDX-License-Identifier: GPL-2.0-or-later
# bench: build rules (included from the top Makefile.am)

# python bench
EXTRA_DIST += bench/pytorch_baseline.py bench/compare-pytorch.sh
# CheckFreq checkpoints against torch.save (issue 27).
EXTRA_DIST += bench/checkfreq.sh bench/checkfreq_bench.py

# coordl-bench (loader helper): per-epoch loader throughput, stall, hits.
bin_PROGRAMS += bench/coordl-bench
bench_coordl_bench_SOURCES = bench/coordl-bench.c
bench_coordl_bench_LDADD = loader/libcoordl-core.la
dist_man_MANS += doc/coordl-bench.1

# cache-shrink (issue 13): how long a live shrink of a shared cache takes
# to give its memory back, directly and through a grant file seen from
# outside (st_blocks), with readers using the cache meanwhile.
noinst_PROGRAMS += bench/cache-shrink
bench_cache_shrink_SOURCES = bench/cache-shrink.c
bench_cache_shrink_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
bench_cache_shrink_LDADD = loader/libcoordl-core.la $(PTHREAD_LIBS)
# coordl-ab.sh: two coordl-bench builds (before/after a change), interleaved.
EXTRA_DIST += bench/coordl-ab.sh

# prep bench (prep helper): prep-bench DIR compares the prep stage with a
# naive full decode + resize, interleaved, per core.
noinst_PROGRAMS += bench/prep-bench
bench_prep_bench_SOURCES = bench/prep-bench.c loader/prep.c
bench_prep_bench_CPPFLAGS = $(AM_CPPFLAGS) $(LIBJPEG_CFLAGS)
bench_prep_bench_LDADD = common/libsyncommon.la $(LIBJPEG_LIBS) $(LIBM)

# sim bench (policy helper)
EXTRA_DIST += bench/sim-bench.sh
# searches with and without coordinated prep in the simulator (issue 15)
EXTRA_DIST += bench/sim-search.sh

# peer bench (issue 14): the partitioned cache, NODES processes on 127.0.0.1.
EXTRA_DIST += bench/peer-bench.sh

# profiler bench: full-profile time and predicted-vs-measured accuracy
# (bench/profiler-accuracy.sh BUILD_DIR prints both tables).
EXTRA_DIST += bench/profiler-accuracy.sh

# profile on the job's first run (issue 17): what the loader's live search
# costs the job, interleaved with plain runs.
EXTRA_DIST += bench/firstrun-cost.sh

# loader benches (loader helper): thread scaling, interleaved; MinIO versus
# the page cache under one memory cgroup limit (root).
EXTRA_DIST += bench/coordl-scaling.sh bench/minio-vs-pagecache.sh

# fault soak of the plugins on a throwaway cluster (root; a short form runs
# as tests/integration/synergy-soak.sh): jobs, faults, overlaps, stuck jobs
# and leftovers.
EXTRA_DIST += bench/soak.sh bench/soak-sampler.py

# remote datasets (issue 16): coordl over HTTP at 0/20/50 ms per request versus
# local disk, one request per worker, and torch with an HTTP Dataset.
EXTRA_DIST += bench/remote-bench.sh

# coordinated prep (issue 15): k jobs over one dataset with and without a
# shared group (SYNERGY_GROUP), interleaved: the group's CPU-seconds per
# epoch and each job's images/s (bench/coordprep.sh DATASET).
EXTRA_DIST += bench/coordprep.sh

# peer read (issue 14): what the partitioned cache's peer tier delivers for
# ~110 KB items between two processes, beside ucx_perftest's ucp_get over
# the same transport, interleaved (bench/peer-read.sh BUILD_DIR).
noinst_PROGRAMS += bench/peer-read
bench_peer_read_SOURCES = bench/peer-read.c
bench_peer_read_CFLAGS = $(AM_CFLAGS) $(PTHREAD_CFLAGS)
bench_peer_read_LDADD = loader/libcoordl-core.la $(PTHREAD_LIBS)
EXTRA_DIST += bench/peer-read.sh

# Job submission throughput with and without the plugins (issue 26):
# bench/submit-rate.sh (root; a throwaway cluster; in the guest for 24.11/26.05).
EXTRA_DIST += bench/submit-rate.sh

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# synergy-trainval.sh: a real training script with a training and a
# validation loader (examples/train_resnet_emulated.py --val, two
# coordl.Loader on two datasets, as training scripts have) runs sized
# under Synergy, and the job's cache grant goes where coordl-python(7)
# says: by default to the training loader (its second epoch is served from
# the cache), none to the validation loader (it reads from storage every
# epoch); with --val-cache job the validation loader has it instead and
# the training loader none.
# Before issue 12 the second loader failed ("cache 'job_N' is in use for
# another dataset or version").
. "${top_srcdir:?}/tests/lib/cluster.sh"
[ -x /usr/bin/python3 ] || skip_all "needs /usr/bin/python3"
/usr/bin/python3 -c 'import numpy' 2>/dev/null || skip_all "needs python3-numpy"
lib=$top_builddir/loader/.libs/libcoordl.so
gen=$top_builddir/tools/coordl-datagen
[ -f "$lib" ] && [ -x "$gen" ] || bail "build libcoordl and tools/coordl-datagen first"
# One GPU: the job may take both cores and its whole cache (1024 MB).
CLUSTER_GPUS=1
cluster_start 1
cluster_put_profile img image
"$gen" --out "$C/train" --classes 4 --images 240 --seed 3 >/dev/null || bail "coordl-datagen failed"
"$gen" --out "$C/val" --classes 4 --images 80 --seed 4 >/dev/null || bail "coordl-datagen failed"
diag "datasets: train $(du -sm "$C/train" | cut -f1) MB, val $(du -sm "$C/val" | cut -f1) MB"

# run_job VALCACHE: the script, two epochs, numpy batches, emulated GPU.
run_job() {
	cluster_sbatch --gres=gpu:1 --synergy-profile=img --wrap "
	echo SYNERGY_ACTIVE=\$SYNERGY_ACTIVE SYNERGY_CACHE_BYTES=\$SYNERGY_CACHE_BYTES
	export PYTHONPATH=$top_srcdir/python COORDL_LIBRARY=$lib PYTHONWARNINGS=always
	exec /usr/bin/python3 $top_srcdir/examples/train_resnet_emulated.py $C/train \
		--val $C/val --val-cache $1 --epochs 2 --batch-size 16 --gpu-rate 20000 \
		--output numpy 2>&1"
}
# col OUT LABEL N: column N of the row labelled LABEL (the last such row).
col() { awk -v l="$2" -v n="$3" '$1 == l { v = $n } END { print v }' "$1"; }

id=$(run_job auto)
test_ok "sbatch --synergy-profile=img accepted" test -n "$id"
st=$(cluster_wait_job "$id" 120)
out=$(cluster_out "$id")
sed 's/^/#   /' "$out" 2>/dev/null
test_ok "the job completed (train + val loaders under Synergy)" test "$st" = COMPLETED
test_ok "it ran Synergy-sized: 2 cores, 1024 MB cache" \
	grep -q "SYNERGY_ACTIVE=1 SYNERGY_CACHE_BYTES=1024M" "$out"
test_ok "no loader failed" bash -c "! grep -qiE 'CoordlError|Traceback|in use for another' '$out'"
test_ok "two training epochs and two validation rows" \
	test "$(grep -cE '^ +[01] ' "$out")/$(grep -cE '^ +val ' "$out")" = 2/2
test_ok "default: the training loader's second epoch is all cache hits" \
	test "$(col "$out" 1 8)" = 100.0
# uncached OUT RE: the two rows whose label matches RE read from storage,
# with no cache hit.
uncached() {
	awk -v re="$2" '$1 ~ re { n++; if ($8 != "0.0" || $9 + 0 <= 0) bad = 1 }
		END { exit bad || n != 2 }' "$1"
}
test_ok "the validation loader has no cache: storage every epoch, no hit" uncached "$out" '^val$'

id=$(run_job job)
st=$(cluster_wait_job "$id" 120)
out=$(cluster_out "$id")
sed 's/^/#   /' "$out" 2>/dev/null
test_ok "--val-cache job: the job completed" test "$st" = COMPLETED
test_ok "the validation loader's second pass is all cache hits" \
	test "$(col "$out" val 8)" = 100.0
test_ok "the training loader ran without a cache" uncached "$out" '^[01]$'
test_ok "no warning or error" bash -c "! grep -qiE 'Warning|CoordlError|Traceback' '$out'"

cluster__wait 20 cluster_leftovers >/dev/null
test_ok "no synergy or job cgroup, no cache file left" cluster_leftovers
done_testing

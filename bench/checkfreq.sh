#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# checkfreq.sh: what CheckFreq checkpoints cost a training loop, against
# torch.save every k iterations and every epoch, and what an interruption
# costs with each.
#
# Usage: bench/checkfreq.sh [--reps N] [--sizes "MB ..."] [--disks "local slow"]
#                           [--step S] [--slow-mbps M] [--kills N] [--epoch-iters E]
#                           [--iters N]
#   defaults: --reps 3 --sizes "256 1024" --disks "local slow" --step 0.1
#             --slow-mbps 100 --kills 3 --epoch-iters 5000 --iters 600
#
# The training loop (bench/checkfreq_bench.py) emulates the GPU: a sleep of
# --step seconds per iteration (forward, backward, optimizer step), with
# the model's state (parameters and momentum, half each) in host memory and
# a real coordl loader decoding the batches. For each state size and disk,
# each repetition runs, interleaved:
#   none       no checkpoints: the baseline iteration time;
#   checkfreq  coordl.CheckFreq, interval chosen online for a 3.5% bound;
#   save@k     torch.save every k iterations, k the interval CheckFreq chose
#              in the same repetition (synchronous; no fsync);
# --iters iterations each. Overhead is the mean iteration time over the
# baseline's (the same repetition's), so it counts every checkpoint the run
# took, the first, measuring one, included. "every epoch" is derived from
# the save@k runs' save time for an epoch of --epoch-iters iterations
# (ImageNet at batch 256 is about 5000): its overhead save_s / (E x iter),
# its expected lost work E/2 iterations.
# "predicted" is CheckFreq's own estimate at the end of its run: what it
# measured a checkpoint to add over k iterations of the time it measured.
# Then --kills times per configuration: a CheckFreq run at the median of
# the intervals it chose is killed -9 at a random iteration and restarted; lost work is the
# iterations redone, resume time what CheckFreq.resume() took (load, verify,
# restore); the same for a torch.save file loaded with torch.load.
#
# Disks: "local" is a directory on the root file system; "slow" an ext4
# image on a loop device (direct I/O) whose writes are limited to
# --slow-mbps MB/s by the blkio controller (root, cgroup v1), as shared
# storage under load. Prints one table; needs /usr/bin/python3 with torch.
set -euo pipefail

reps=3 sizes="256 1024" disks="local slow" step=0.1 slow_mbps=100 kills=3 epoch_iters=5000 iters=600
while [ $# -gt 0 ]; do
	case $1 in
	--reps) reps=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--disks) disks=$2; shift 2 ;;
	--step) step=$2; shift 2 ;;
	--slow-mbps) slow_mbps=$2; shift 2 ;;
	--kills) kills=$2; shift 2 ;;
	--epoch-iters) epoch_iters=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	-h|--help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "checkfreq.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done

top=$(cd "$(dirname "$0")/.." && pwd)
b=${top_builddir:-$top/build}
py=/usr/bin/python3
drv=$top/bench/checkfreq_bench.py
$py -c 'import torch' 2>/dev/null || { echo "checkfreq.sh: $py has no torch" >&2; exit 2; }
[ -x "$b/tools/coordl-datagen" ] || { echo "checkfreq.sh: build first ($b/tools/coordl-datagen)" >&2; exit 2; }
export COORDL_LIBRARY=$b/loader/.libs/libcoordl.so OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

work=$(mktemp -d "${TMPDIR:-/var/tmp}/checkfreq-bench.XXXXXX")
loopdev= throttle= mnt=$work/slow
cleanup() {
	if [ -n "$throttle" ]; then
		echo "$throttle 0" >/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device 2>/dev/null || true
	fi
	if mountpoint -q "$mnt" 2>/dev/null; then umount "$mnt" || umount -l "$mnt"; fi
	[ -z "$loopdev" ] || losetup -d "$loopdev" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$b/tools/coordl-datagen" --out "$work/data" --classes 10 --images 2000 --seed 1 >/dev/null

case " $disks " in *" slow "*)
	[ "$(id -u)" = 0 ] && [ -w /sys/fs/cgroup/blkio/blkio.throttle.write_bps_device ] ||
		{ echo "checkfreq.sh: the slow disk needs root and cgroup v1 blkio (or --disks local)" >&2; exit 2; }
	maxmb=0
	for s in $sizes; do [ "$s" -gt "$maxmb" ] && maxmb=$s; done
	truncate -s $((maxmb * 4 + 1024))M "$work/slow.img"
	mkfs.ext4 -q -F "$work/slow.img"
	loopdev=$(losetup --find --show --direct-io=on "$work/slow.img")
	mkdir -p "$mnt"
	mount -o noatime "$loopdev" "$mnt"
	throttle=$(lsblk -dno MAJ:MIN "$loopdev" | tr -d ' ')
	echo "$throttle $((slow_mbps * 1000000))" >/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device
	;;
esac

dir_for() { if [ "$1" = slow ]; then echo "$mnt/ck"; else echo "$work/ck"; fi; }
field() { $py -c 'import json,sys; v=json.loads(sys.stdin.read())[sys.argv[1]]; print("" if v is None else v)' "$1"; }
stats() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.4g %.4g %.4g", v[1], v[int((NR + 1) / 2)], v[NR]; else printf "- - -" }'; }

res=$work/results
: >"$res"
echo "# $(getconf _NPROCESSORS_ONLN) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)," \
	"$(uname -r); step $step s; slow disk $slow_mbps MB/s; $reps reps; load $(cut -d' ' -f1 /proc/loadavg)" >&2
for size in $sizes; do
	for disk in $disks; do
		d=$(dir_for "$disk")
		for r in $(seq 1 "$reps"); do
			rm -rf "$d"
			# CheckFreq first: the interval it ends with sets save@k.
			out=$($py "$drv" --data "$work/data" --dir "$d" --mode checkfreq --state-mb "$size" \
				--step-s "$step" --iters "$iters")
			k=$(field interval <<<"$out")
			echo "$size $disk checkfreq $out" >>"$res"
			rm -rf "$d"
			out=$($py "$drv" --data "$work/data" --dir "$d" --mode none --state-mb "$size" \
				--step-s "$step" --iters "$iters")
			echo "$size $disk none $out" >>"$res"
			out=$($py "$drv" --data "$work/data" --dir "$d" --mode save --state-mb "$size" \
				--step-s "$step" --iters "$iters" --interval "$k")
			echo "$size $disk save $out" >>"$res"
			rm -rf "$d"
			echo "# $size MB $disk rep $r: k=$k, $iters iterations" >&2
		done
		# Interruptions: kill -9 at a random iteration, resume.
		# ... at the median of the intervals CheckFreq chose.
		k=$(awk -v s="$size" -v d="$disk" '$1 == s && $2 == d && $3 == "checkfreq"' "$res" |
			cut -d' ' -f4- | while read -r j; do field interval <<<"$j"; done | stats |
			cut -d' ' -f2)
		for i in $(seq 1 "$kills"); do
			for mode in checkfreq save; do
				rm -rf "$d"
				mkdir -p "$d"
				kill_at=$(( k + 20 + RANDOM % (2 * k) ))
				log=$work/kill.log
				: >"$log"
				extra=(--interval "$k")
				$py "$drv" --data "$work/data" --dir "$d" --mode "$mode" --state-mb "$size" \
					--step-s "$step" --iters $((kill_at + 1000)) --log "$log" "${extra[@]}" \
					>/dev/null &
				pid=$!
				while :; do
					cur=$(tail -n 1 "$log")
					[ "${cur:-0}" -lt "$kill_at" ] || break
					kill -0 "$pid" 2>/dev/null || break
					sleep 0.02
				done
				kill -9 "$pid" 2>/dev/null || true
				wait "$pid" 2>/dev/null || true
				last=$(tail -n 1 "$log")
				out=$($py "$drv" --data "$work/data" --dir "$d" --mode "$mode" --state-mb "$size" \
					--step-s "$step" --iters $((last + 1000)) --resume --after-resume 2 "${extra[@]}")
				from=$(field resumed_from <<<"$out")
				rs=$(field resume_s <<<"$out")
				echo "$size $disk kill-$mode {\"lost\": $((last - from)), \"resume_s\": $rs, \"k\": $k}" >>"$res"
			done
		done
		rm -rf "$d"
	done
done

# ---------------------------------------------------------------- table
col() { # size disk mode field -> values
	awk -v s="$1" -v d="$2" -v m="$3" '$1 == s && $2 == d && $3 == m' "$res" | cut -d' ' -f4- |
		while read -r j; do field "$4" <<<"$j"; done
}
printf '%-5s %-5s %-15s %5s %-21s %-21s %-21s %s\n' MB disk what k "overhead% min/med/max" \
	"ckpt s min/med/max" "write s min/med/max" "predicted% min/med/max"
for size in $sizes; do
	for disk in $disks; do
		base=$(col "$size" "$disk" none iter_mean | stats | cut -d' ' -f2)
		for mode in checkfreq save; do
			ov=$(col "$size" "$disk" "$mode" iter_mean | awk -v b="$base" '{ print 100 * ($1 - b) / b }' | stats)
			ks=$(col "$size" "$disk" "$mode" interval | stats | cut -d' ' -f2)
			if [ "$mode" = checkfreq ]; then
				cs=$(col "$size" "$disk" checkfreq overhead_s | stats)
				ws=$(col "$size" "$disk" checkfreq persist_s | stats)
				ps=$(col "$size" "$disk" checkfreq predicted | awk '{ print 100 * $1 }' | stats)
			else
				cs=$(col "$size" "$disk" save save_s | stats)
				ws="- - -"
				ps="- - -"
			fi
			printf '%-5s %-5s %-15s %5s %-21s %-21s %-21s %s\n' "$size" "$disk" \
				"$([ "$mode" = save ] && echo "torch.save@k" || echo checkfreq)" "$ks" "$ov" "$cs" \
				"$ws" "$ps"
		done
		ov=$(col "$size" "$disk" save save_s | awk -v b="$base" -v e="$epoch_iters" '{ print 100 * $1 / (e * b) }' | stats)
		printf '%-5s %-5s %-15s %5s %-21s %-21s %-21s %s\n' "$size" "$disk" "epoch (derived)" \
			"$epoch_iters" "$ov" "$(col "$size" "$disk" save save_s | stats)" "- - -" "- - -"
	done
done
echo
printf '%-5s %-5s %-15s %-23s %-21s %-21s\n' MB disk what "lost iters min/med/max" \
	"lost s min/med/max" "resume s min/med/max"
for size in $sizes; do
	for disk in $disks; do
		base=$(col "$size" "$disk" none iter_mean | stats | cut -d' ' -f2)
		for mode in checkfreq save; do
			lost=$(col "$size" "$disk" "kill-$mode" lost | stats)
			lost_s=$(col "$size" "$disk" "kill-$mode" lost | awk -v b="$base" '{ print $1 * b }' | stats)
			rs=$(col "$size" "$disk" "kill-$mode" resume_s | stats)
			printf '%-5s %-5s %-15s %-23s %-21s %-21s\n' "$size" "$disk" \
				"$([ "$mode" = save ] && echo "torch.save@k" || echo checkfreq)" "$lost" "$lost_s" "$rs"
		done
		rs=$(col "$size" "$disk" kill-save resume_s | stats)
		printf '%-5s %-5s %-15s %-23s %-21s %-21s\n' "$size" "$disk" "epoch (derived)" \
			"0 $((epoch_iters / 2)) $epoch_iters" \
			"0 $(awk -v b="$base" -v e="$epoch_iters" 'BEGIN { printf "%.4g %.4g", b * e / 2, b * e }')" "$rs"
	done
done

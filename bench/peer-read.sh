#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# peer-read.sh: the partitioned cache's peer reads (issue 14) beside what UCX
# itself does for the same item size over the same transport, interleaved.
#
#   coordl   bench/peer-read: one process reads ~110 KB items out of another
#            process's MinIO cache through libcoordl's peer tier (read-ahead
#            window of 64 items, THREADS worker threads calling
#            coordl__peer_get(), every item checked, nothing decoded).
#   ucp_get  ucx_perftest -t ucp_get: one-sided gets of SIZE bytes from the
#            server's registered buffer, OUTSTANDING in flight (default 64,
#            the peer tier's window): the same operation coordl uses for an
#            item's bytes, with UCX's own tight loop and a busy-polling
#            responder. The reference for the target.
#   tag_bw   ucx_perftest -t tag_bw: two-sided tagged sends of SIZE bytes, the
#            same window: what the transport streams when the receiver posts
#            buffers (for context: the ceiling of TCP under UCX here).
# Both ends on 127.0.0.1 with UCX_TLS=tcp (so bytes cross loopback TCP
# sockets, not shared memory), unless UCX_TLS is set. Each repetition runs
# the three in turn; the table gives min/median/max MB/s (10^6 bytes/s)
# over repetitions and the ratio of coordl's median to ucp_get's (and the
# median of the per-repetition ratios), with the load average before and
# after.
#
# Usage: bench/peer-read.sh BUILD_DIR [REPS] [SIZE]
# (defaults 7 repetitions, 112640 bytes). Env: ITEMS (node 0's items,
# default 1000), PASSES (default 8: ITEMS*PASSES items read per run),
# THREADS (default 2), OUTSTANDING (default 64), PORT (base port, default
# from the PID), OTHER (another build's bench/peer-read, e.g. before a
# change to loader/peer.c: run in every repetition too, column "other").
set -eu
b=${1:?usage: peer-read.sh BUILD_DIR [REPS] [SIZE]}
reps=${2:-7}
size=${3:-112640}
items=${ITEMS:-1000}
passes=${PASSES:-8}
threads=${THREADS:-2}
out=${OUTSTANDING:-64}
for v in "$reps" "$size" "$items" "$passes" "$threads" "$out"; do
	case "$v" in '' | *[!0-9]* | 0) echo "peer-read: '$v': expected a positive integer" >&2; exit 2 ;; esac
done
pr=$b/bench/peer-read
[ -x "$pr" ] || { echo "peer-read: build $b first (bench/peer-read)" >&2; exit 2; }
other=${OTHER:-}
[ -z "$other" ] || [ -x "$other" ] || { echo "peer-read: OTHER='$other' is not an executable" >&2; exit 2; }
command -v ucx_perftest >/dev/null || { echo "peer-read: ucx_perftest not found (Debian: ucx-utils)" >&2; exit 2; }
export UCX_TLS=${UCX_TLS:-tcp}
port=${PORT:-$((30000 + $$ % 20000))}
n=$((items * passes))
tmp=$(mktemp -d "${TMPDIR:-/tmp}/peer-read.XXXXXX")
srv=
cleanup() {
	[ -z "$srv" ] || kill "$srv" 2>/dev/null || :
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ucx_perftest TEST: prints MB/s (10^6) of the client's overall bandwidth.
perftest() {
	port=$((port + 1))
	ucx_perftest -p "$port" -t "$1" -s "$size" -n "$n" -w 200 -O "$out" -v >"$tmp/srv" 2>&1 &
	srv=$!
	i=0
	while :; do
		if ucx_perftest 127.0.0.1 -p "$port" -t "$1" -s "$size" -n "$n" -w 200 -O "$out" -v \
			>"$tmp/cli" 2>&1; then
			break
		fi
		i=$((i + 1))
		if [ "$i" -ge 50 ]; then
			echo "peer-read: ucx_perftest $1 failed:" >&2
			cat "$tmp/cli" "$tmp/srv" >&2
			exit 1
		fi
		sleep 0.1
	done
	wait "$srv" || :
	srv=
	# The last CSV line: iterations,...,overall_bw (MiB/s),avg_mr,overall_mr.
	awk -F, '/^[0-9]+,/ {bw = $6} END {if (bw == "") exit 1; printf "%.1f\n", bw * 1048576 / 1e6}' "$tmp/cli"
}

# coordl [BINARY]: prints MB/s of bench/peer-read.
coordl() {
	port=$((port + 2))
	"${1:-$pr}" --items "$items" --size "$size" --passes "$passes" --threads "$threads" \
		--port0 "$port" --port1 "$((port + 1))" >"$tmp/pr" 2>&1 ||
		{ echo "peer-read: bench/peer-read failed:" >&2; cat "$tmp/pr" >&2; exit 1; }
	awk '/^peer-read / {for (i = 1; i < NF; i++) if ($i == "MBps") print $(i + 1)}' "$tmp/pr"
}

echo "# peer-read.sh: UCX_TLS=$UCX_TLS, 127.0.0.1, item $size bytes, $n items per run," \
	"$out in flight, coordl $threads worker threads; $(nproc) CPUs"
echo "# $(ucx_info -v 2>/dev/null | sed -n "s/^# *Version /UCX /p")"
echo "# load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$other" ] || echo "# other: $other"
printf '%-4s %10s %10s %10s %8s %10s\n' rep coordl ucp_get tag_bw ratio "${other:+other}"
r=1
while [ "$r" -le "$reps" ]; do
	c=$(coordl)
	g=$(perftest ucp_get)
	t=$(perftest tag_bw)
	o=0
	[ -z "$other" ] || o=$(coordl "$other")
	printf '%-4s %10s %10s %10s %8s %10s\n' "$r" "$c" "$g" "$t" \
		"$(awk -v c="$c" -v g="$g" 'BEGIN {printf "%.2f", c / g}')" "${other:+$o}"
	echo "$c $g $t $(awk -v c="$c" -v g="$g" 'BEGIN {printf "%.4f", c / g}') $o" >>"$tmp/rows"
	r=$((r + 1))
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
mmm() {
	cut -d' ' -f"$1" "$tmp/rows" | sort -g |
		awk -v f="$2" '{a[NR] = $1} END {printf f "/" f "/" f, a[1], a[int((NR + 1) / 2)], a[NR]}'
}
echo "# MB/s (10^6 bytes/s) over $reps repetitions: min/median/max"
printf '%-8s %s\n' coordl "$(mmm 1 %.1f)" ucp_get "$(mmm 2 %.1f)" tag_bw "$(mmm 3 %.1f)"
[ -z "$other" ] || printf '%-8s %s\n' other "$(mmm 5 %.1f)"
printf '%-8s %s\n' ratio "$(mmm 4 %.2f) (coordl/ucp_get per repetition)"
med() { cut -d' ' -f"$1" "$tmp/rows" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "# coordl median / ucp_get median: $(awk -v c="$(med 1)" -v g="$(med 2)" 'BEGIN {printf "%.2f", c / g}')"

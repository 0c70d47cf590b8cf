#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# peer-read.sh: the partitioned cache's peer reads (issues 14, 24) beside
# what loopback TCP itself does for the same requests and item size,
# interleaved.
#
#   coordl   bench/peer-read: one process reads ~110 KB items out of another
#            process's MinIO cache through libcoordl's peer tier (an
#            authenticated TCP connection, read-ahead window of 64 items,
#            THREADS worker threads calling coordl__peer_get(), every item
#            checked, nothing decoded).
#   raw      bench/peer-read --raw: the same two processes over one plain
#            TCP connection, 64 requests in flight, each answered with a
#            header and SIZE bytes from memory (no handshake, no cache, no
#            check): the reference for the target.
#   ucp_get, tag_bw (only when ucx_perftest is installed, Debian's
#            ucx-utils, with UCX_TLS=tcp): UCX's one-sided gets and tagged
#            sends of SIZE bytes, OUTSTANDING in flight, the references of
#            the measurements before issue 24.
# Both ends on 127.0.0.1. Each repetition runs them in turn; the table gives
# min/median/max MB/s (10^6 bytes/s) over repetitions and the ratio of
# coordl's to raw's (per repetition, and median over median), with the load
# average before and after; and the CPU microseconds per item both processes
# used (getrusage, warm-up included: less at the mercy of other load than
# MB/s; "-" for an OTHER that does not report it).
#
# Usage: bench/peer-read.sh BUILD_DIR [REPS] [SIZE]
# (defaults 7 repetitions, 112640 bytes). Env: ITEMS (node 0's items,
# default 1000), PASSES (default 8: ITEMS*PASSES items read per run),
# THREADS (default 2), OUTSTANDING (ucx_perftest's window, default 64), PORT
# (base port, default from the PID), OTHER (another build's bench/peer-read,
# e.g. before a change to loader/peer.c: run in every repetition too, column
# "other").
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
ucx=
! command -v ucx_perftest >/dev/null || ucx=1
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

# coordl [BINARY] [--raw]: prints MB/s of bench/peer-read, and its CPU
# microseconds per item ("-" if it does not say).
coordl() {
	port=$((port + 2))
	bin=${1:-$pr}
	[ $# -eq 0 ] || shift
	"$bin" --items "$items" --size "$size" --passes "$passes" --threads "$threads" \
		--port0 "$port" --port1 "$((port + 1))" "$@" >"$tmp/pr" 2>&1 ||
		{ echo "peer-read: bench/peer-read failed:" >&2; cat "$tmp/pr" >&2; exit 1; }
	awk '/^peer-read / {for (i = 1; i < NF; i++) { if ($i == "MBps") m = $(i + 1); if ($i == "us_per_item") u = $(i + 1) } }
		END {print m, (u == "" ? "-" : u)}' "$tmp/pr"
}

echo "# peer-read.sh: 127.0.0.1, item $size bytes, $n items per run, coordl $threads worker" \
	"threads; $(nproc) CPUs${ucx:+; ucx_perftest with UCX_TLS=$UCX_TLS, $out in flight}"
echo "# load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$other" ] || echo "# other: $other"
printf '%-4s %10s %10s %8s %10s %10s %10s %7s %7s %7s\n' rep coordl raw ratio "${other:+other}" \
	"${ucx:+ucp_get}" "${ucx:+tag_bw}" c_us/it r_us/it "${other:+o_us/it}"
r=1
while [ "$r" -le "$reps" ]; do
	set -- $(coordl)
	c=$1 cu=$2
	set -- $(coordl "$pr" --raw)
	w=$1 wu=$2
	o=0 ou=- g=0 t=0
	if [ -n "$other" ]; then
		set -- $(coordl "$other")
		o=$1 ou=$2
	fi
	[ -z "$ucx" ] || g=$(perftest ucp_get)
	[ -z "$ucx" ] || t=$(perftest tag_bw)
	q=$(awk -v c="$c" -v w="$w" 'BEGIN {printf "%.4f", c / w}')
	printf '%-4s %10s %10s %8.2f %10s %10s %10s %7s %7s %7s\n' "$r" "$c" "$w" "$q" "${other:+$o}" \
		"${ucx:+$g}" "${ucx:+$t}" "$cu" "$wu" "${other:+$ou}"
	echo "$c $w $q $o $g $t $cu $wu $ou" >>"$tmp/rows"
	r=$((r + 1))
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
mmm() {
	cut -d' ' -f"$1" "$tmp/rows" | sort -g |
		awk -v f="$2" '{a[NR] = $1} END {printf f "/" f "/" f, a[1], a[int((NR + 1) / 2)], a[NR]}'
}
echo "# MB/s (10^6 bytes/s) over $reps repetitions: min/median/max"
printf '%-8s %s\n' coordl "$(mmm 1 %.1f)" raw "$(mmm 2 %.1f)"
[ -z "$other" ] || printf '%-8s %s\n' other "$(mmm 4 %.1f)"
[ -z "$ucx" ] || printf '%-8s %s\n' ucp_get "$(mmm 5 %.1f)" tag_bw "$(mmm 6 %.1f)"
printf '%-8s %s\n' ratio "$(mmm 3 %.2f) (coordl/raw per repetition)"
echo "# CPU us per item, both processes: min/median/max"
printf '%-8s %s\n' coordl "$(mmm 7 %.1f)" raw "$(mmm 8 %.1f)"
[ -z "$other" ] || [ "$(cut -d' ' -f9 "$tmp/rows" | sort -u)" = - ] || printf '%-8s %s\n' other "$(mmm 9 %.1f)"
med() { cut -d' ' -f"$1" "$tmp/rows" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
echo "# coordl median / raw median: $(awk -v c="$(med 1)" -v w="$(med 2)" 'BEGIN {printf "%.2f", c / w}')"
[ -z "$other" ] || echo "# coordl median / other median: $(awk -v c="$(med 1)" -v o="$(med 4)" 'BEGIN {printf "%.2f", c / o}')"

# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=sh
# ports.sh: free TCP ports for the test harnesses (sourced by cluster.sh
# and nginx.sh; POSIX sh, as nginx.sh's users run it under dash).
#
# ports_pick USED: print a random port no socket uses at 127.0.0.1 (any
# state, probed with ss) and not among USED (space-separated). It is taken
# below the kernel's ephemeral range (ip_local_port_range), so that no
# outgoing connection can take it between the probe and the daemon's bind;
# above it on a host whose ephemeral range starts too low. Fails after 200
# tries.
ports_pick() {
	ports__used=" $1 " ports__lo=32768 ports__hi=60999 ports__base=10000 ports__i=0
	read -r ports__lo ports__hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null ||
		{ ports__lo=32768 ports__hi=60999; }
	ports__span=$((ports__lo - ports__base))
	if [ "$ports__span" -lt 2000 ]; then
		ports__base=$((ports__hi + 1)) ports__span=$((65535 - ports__hi))
		[ "$ports__span" -ge 2000 ] || { ports__base=20000 ports__span=40000; }
	fi
	while [ "$ports__i" -lt 200 ]; do
		ports__i=$((ports__i + 1))
		ports__p=$((ports__base + $(od -An -N4 -tu4 /dev/urandom) % ports__span))
		case "$ports__used" in *" $ports__p "*) continue ;; esac
		if [ -z "$(ss -Htan "sport = :$ports__p" 2>/dev/null)" ]; then
			echo "$ports__p"
			return 0
		fi
	done
	return 1
}

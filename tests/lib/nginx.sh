# SPDX-License-Identifier: GPL-2.0-or-later
# nginx.sh: a private nginx on 127.0.0.1 serving datasets to coordl, for the
# remote-dataset test and benchmark (sourced).
#
# Debian's nginx-light with libnginx-mod-http-lua: every location can add
# latency with `access_by_lua_block { ngx.sleep(S) }` (a timer, so one
# worker serves many slow requests at once). Everything lives under one
# directory: config, pid, logs, temp files. The master process runs in
# the foreground of a background job; nginx_stop kills that PID and waits
# for it, so nothing is left behind.
#
#   nginx_have                     0 when nginx and its lua module are installed
#   nginx_write_conf DIR PORT BODY [MAIN]  a config with BODY inside http{}
#                                  (MAIN: extra main-context lines)
#   nginx_start DIR                start DIR/nginx.conf; sets NGINX_PID
#   nginx_stop                     stop it (safe to call twice)
#   nginx_port                     a free TCP port on 127.0.0.1
#   nginx_latency_loc PATH ROOT S  a location serving ROOT at /PATH/ after S s

# shellcheck source=tests/lib/ports.sh
. "${top_srcdir:-${srcdir:-.}}/tests/lib/ports.sh"
NGINX_BIN=${NGINX_BIN:-/usr/sbin/nginx}
NGINX_MODULES=${NGINX_MODULES:-/usr/lib/nginx/modules}
NGINX_PID=

nginx_have() {
	[ -x "$NGINX_BIN" ] && [ -f "$NGINX_MODULES/ngx_http_lua_module.so" ] &&
		[ -f "$NGINX_MODULES/ndk_http_module.so" ]
}

nginx__used_ports=
nginx_port() {
	nginx__p=$(ports_pick "$nginx__used_ports") || return 1
	nginx__used_ports="$nginx__used_ports $nginx__p"
	echo "$nginx__p"
}

nginx_latency_loc() {
	cat <<EOF
		location /$1/ {
			alias $2/;
			access_by_lua_block { ngx.sleep($3) }
		}
EOF
}

nginx_write_conf() {
	local dir=$1 port=$2 body=$3 main=${4:-} user=
	mkdir -p "$dir/tmp"
	# As root, nginx's workers would switch to www-data, which cannot read
	# a private temporary directory.
	[ "$(id -u)" = 0 ] && user="user root root;"
	cat >"$dir/nginx.conf" <<EOF
$user
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
load_module $NGINX_MODULES/ndk_http_module.so;
load_module $NGINX_MODULES/ngx_http_lua_module.so;
$main
events { worker_connections 4096; }
http {
	default_type application/octet-stream;
	client_body_temp_path $dir/tmp/body;
	proxy_temp_path $dir/tmp/proxy;
	fastcgi_temp_path $dir/tmp/fastcgi;
	uwsgi_temp_path $dir/tmp/uwsgi;
	scgi_temp_path $dir/tmp/scgi;
	sendfile on;
	tcp_nodelay on;
	keepalive_requests 1000000;
	keepalive_timeout 120s;
	log_format coordl escape=json '{"m":"\$request_method","u":"\$request_uri",'
		'"host":"\$http_host","auth":"\$http_authorization","date":"\$http_x_amz_date",'
		'"sha":"\$http_x_amz_content_sha256","range":"\$http_range",'
		'"tok":"\$http_x_amz_security_token","proto":"\$server_protocol",'
		'"conn":"\$connection","status":"\$status"}';
	access_log off;
$body
}
EOF
	# The listen port goes where the body says 127.0.0.1:PORT.
	sed -i "s/@PORT@/$port/g" "$dir/nginx.conf"
}

nginx_start() {
	local dir=$1 i=0
	"$NGINX_BIN" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
	NGINX_PID=$!
	# Ready when the first listen port accepts connections.
	local port
	port=$(sed -n 's/.*listen 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/nginx.conf" | head -1)
	while [ $i -lt 100 ]; do
		if ! kill -0 "$NGINX_PID" 2>/dev/null; then
			NGINX_PID=
			return 1
		fi
		[ -n "$(ss -Htln "sport = :$port" 2>/dev/null)" ] && return 0
		sleep 0.05
		i=$((i + 1))
	done
	nginx_stop
	return 1
}

nginx_stop() {
	if [ -n "$NGINX_PID" ]; then
		kill "$NGINX_PID" 2>/dev/null
		wait "$NGINX_PID" 2>/dev/null
		NGINX_PID=
	fi
}

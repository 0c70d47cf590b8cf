#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# remote-server.sh: coordl reads datasets from a real HTTP server (nginx
# with the lua module, on 127.0.0.1, started and stopped here) with 50 ms
# of latency per request: an ImageFolder with a manifest, packed shards
# through range GETs, an S3 bucket through ListObjectsV2 (three pages) and
# signed GETs, HTTP/2 over TLS, and file lists of URLs. Checked: the
# batches equal those of the same data on disk (order, labels, pixels,
# sharding, resume, with and without read-ahead); requests go out many at
# once over reused connections; 404s, 5xx, slow responses, corrupt and
# oversized bodies behave as documented; the MinIO cache absorbs remote
# misses; every S3 signature verifies with an independent signer, and
# AWS's published SigV4 example requests are signed exactly as published;
# the Python binding and synergy-profile take URLs.
#
# No Debian package provides an S3 server that runs without a cluster
# (radosgw needs Ceph), so nginx serves the bucket: objects as files, the
# ListObjectsV2 pages as static XML picked by a lua block.
. "${top_srcdir:-.}/tests/lib/tap.sh"
. "${top_srcdir:-.}/tests/lib/nginx.sh"
B=${top_builddir:-.}
S=${top_srcdir:-.}
client="$B/loader/test/remote-client"
gen="$B/tools/coordl-datagen"
pack="$B/tools/coordl-pack"
bench="$B/bench/coordl-bench"
prof="$B/profiler/synergy-profile"
PY=/usr/bin/python3
for x in "$client" "$gen" "$pack" "$bench" "$prof"; do
	[ -x "$x" ] || skip_all "$x not built"
done
nginx_have || skip_all "nginx-light and libnginx-mod-http-lua are not installed (tools/install-deps)"
command -v ss >/dev/null || skip_all "ss (iproute2) is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/remote-server-t.XXXXXX") || exit 1
chmod 755 "$tmp"
cleanup() { nginx_stop; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
unset SYNERGY_THREADS SYNERGY_CACHE_BYTES SYNERGY_CACHE_NAME SYNERGY_CACHE_DIR SYNERGY_PROFILE_MODE
unset AWS_PROFILE AWS_SHARED_CREDENTIALS_FILE AWS_ENDPOINT_URL_S3 AWS_DEFAULT_REGION CURL_CA_BUNDLE

# ---- Data: a small ImageFolder (one name with a space and an '&'), its
# manifest, shards, the same tree as S3 objects with listing pages, a big
# object, file lists of URLs.
"$gen" --out "$tmp/ds" --classes 3 --images 60 --seed 3 --width-range 64-96 --jobs 1 \
	>/dev/null 2>&1 || skip_all "coordl-datagen failed"
cp "$tmp/ds/class001/img0000001.jpg" "$tmp/ds/class001/x&y z.jpg"
"$pack" --manifest -q "$tmp/ds" || skip_all "coordl-pack --manifest failed"
mkdir -p "$tmp/packed" "$tmp/s3/bkt/train" "$tmp/pages" "$tmp/lists" "$tmp/big" "$tmp/bad"
"$pack" -q -s 200K "$tmp/ds" "$tmp/packed/ds.cdx" || skip_all "coordl-pack failed"
cp -r "$tmp/ds/class000" "$tmp/ds/class001" "$tmp/ds/class002" "$tmp/s3/bkt/train/"
head -c 300000 /dev/urandom >"$tmp/big/huge.jpg"
"$gen" --out "$tmp/bad" --classes 1 --images 0 --corrupt 4 --seed 5 --jobs 1 >/dev/null 2>&1
# ListObjectsV2 pages of 25 keys; tokens need percent-encoding in a query.
sed 1d "$tmp/ds/coordl.manifest" | awk -v dir="$tmp/pages" '
	function esc(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); return s }
	{ size[NR] = $1; k = $0; sub(/^[0-9]+ /, "", k); key[NR] = "train/" k }
	END {
		pages = int((NR + 24) / 25)
		for (p = 1; p <= pages; p++) {
			f = dir "/page" p ".xml"
			printf "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>bkt</Name><Prefix>train/</Prefix><MaxKeys>25</MaxKeys>" > f
			if (p < pages)
				printf "<IsTruncated>true</IsTruncated><NextContinuationToken>t/%d+=&amp;</NextContinuationToken>", p + 1 > f
			else
				printf "<IsTruncated>false</IsTruncated>" > f
			for (i = (p - 1) * 25 + 1; i <= NR && i <= p * 25; i++)
				printf "<Contents><Key>%s</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>&quot;0&quot;</ETag><Size>%d</Size><StorageClass>STANDARD</StorageClass></Contents>", esc(key[i]), size[i] > f
			printf "</ListBucketResult>\n" > f
			close(f)
		}
	}'

port=$(nginx_port) && tport=$(nginx_port) || skip_all "no free port"
U=http://127.0.0.1:$port
export AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY='test/Secret+Key=0' \
	AWS_SESSION_TOKEN='token/with+chars=' AWS_REGION=eu-west-3 AWS_ENDPOINT_URL="$U"

# Lists of URLs: six good items and one that is missing (404), slow
# (3 s), too big, or corrupt bodies; and one flaky (503 twice) list.
good() { for i in 0 3 6 9 12 15; do printf '%s/fast/class000/img%07d.jpg 0\n' "$U" "$i"; done; }
{ good; echo "$U/gone/class000/img0000000.jpg 0"; } >"$tmp/lists/gone.txt"
{ good; echo "$U/slow/class000/img0000018.jpg 0"; } >"$tmp/lists/slow.txt"
{ good; echo "$U/big/huge.jpg 0"; } >"$tmp/lists/big.txt"
{ good; for f in "$tmp"/bad/*/*.jpg; do echo "$U/bad/${f#"$tmp/bad/"} 0"; done; } >"$tmp/lists/bad.txt"
# The flaky list lives in the flaky location too: reading it is retried.
for i in 1 4 7 10; do printf 'class001/img%07d.jpg 1\n' "$i"; done >"$tmp/ds/flaky.txt"
{
	for i in 0 1 2 3 4 5; do printf 's3://bkt/train/class%03d/img%07d.jpg %d\n' $((i % 3)) "$i" $((i % 3)); done
} >"$tmp/s3list.txt"

cert=
if command -v openssl >/dev/null 2>&1 &&
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" \
		>/dev/null 2>&1; then
	cert=$tmp/cert.pem
fi
tls=
[ -n "$cert" ] && tls="
	server {
		listen 127.0.0.1:$tport ssl http2;
		ssl_certificate $tmp/cert.pem;
		ssl_certificate_key $tmp/key.pem;
		access_log $tmp/tls.log coordl;
$(nginx_latency_loc ds "$tmp/ds" 0.05)
	}"
auth='if not (ngx.var.http_authorization or ""):find("^AWS4%-HMAC%-SHA256 Credential=AKIDTEST/") then return ngx.exit(403) end'
nginx_write_conf "$tmp/ng" "$port" "
	lua_shared_dict flaky 1m;
	server {
		listen 127.0.0.1:@PORT@;
		access_log $tmp/access.log coordl;
$(nginx_latency_loc ds "$tmp/ds" 0.05)
$(nginx_latency_loc packed "$tmp/packed" 0.05)
		location /fast/ { alias $tmp/ds/; }
		location /lists/ { alias $tmp/lists/; }
		location /big/ { alias $tmp/big/; }
		location /bad/ { alias $tmp/bad/; }
		location /gone/ { return 404; }
		location /flaky/ {
			alias $tmp/ds/;
			access_by_lua_block {
				local n = ngx.shared.flaky:incr(ngx.var.uri, 1, 0)
				if n <= 2 then return ngx.exit(503) end
			}
		}
		location /slow/ { alias $tmp/ds/; access_by_lua_block { ngx.sleep(3) } }
		location = /bkt {
			access_by_lua_block {
				$auth
				local a = ngx.req.get_uri_args()
				if a[\"list-type\"] ~= \"2\" or a.prefix ~= \"train/\" then return ngx.exit(400) end
				local t = a[\"continuation-token\"]
				local page = 1
				if t then page = tonumber(t:match(\"^t/(%d+)%+=&\$\")) end
				if not page then return ngx.exit(400) end
				return ngx.exec(\"/_pages/page\" .. page .. \".xml\")
			}
		}
		location /_pages/ { internal; alias $tmp/pages/; default_type application/xml; }
		location /bkt/ {
			alias $tmp/s3/bkt/;
			access_by_lua_block { $auth ngx.sleep(0.02) }
		}
	}
	server {
		listen 127.0.0.1:@PORT@;
		server_name examplebucket.s3.amazonaws.com;
		access_log $tmp/access.log coordl;
		location / { return 200 '0123456789'; }
	}
$tls"
nginx_start "$tmp/ng" || { cat "$tmp/ng/error.log" >&2; skip_all "nginx did not start"; }

# Lines of the access log from now on (each check truncates it first).
log_reset() { : >"$tmp/access.log"; }
# Connections that carried item requests (reading a listing at open uses
# its own): distinct_conns LOG PATTERN.
distinct_conns() { grep "$2" "$1" | sed -n 's/.*"conn":"\([0-9]*\)".*/\1/p' | sort -u | wc -l; }
stat_of() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1" | sed -n "${3:-1}p"; }

# ---- Same data, same batches.
test_ok "ImageFolder over HTTP (manifest) gives the batches of the same tree on disk" \
	"$client" same --epochs 2 "$tmp/ds" "$U/ds/"
test_ok "... and rank 1 of 2 gets the same shard" \
	"$client" same --epochs 1 --rank 1 --world 2 "$tmp/ds" "$U/ds"
test_ok "... without read-ahead (one request per worker) too" \
	"$client" same --epochs 1 --window -1 "$tmp/ds" "$U/ds/"
log_reset
test_ok "packed shards over HTTP (range GETs) give the batches of the local index" \
	"$client" same --epochs 1 "$tmp/packed/ds.cdx" "$U/packed/ds.cdx"
ranged() { grep -q '"u":"/packed/ds-0' "$tmp/access.log" &&
	! grep '"u":"/packed/ds-0' "$tmp/access.log" | grep -v '"range":"bytes=[0-9]*-[0-9]*".*"status":"206"' | grep -q .; }
test_ok "... every shard read is a range GET answered 206" ranged
log_reset
test_ok "S3 ImageFolder (ListObjectsV2, 3 pages, signed GETs) gives the batches on disk" \
	"$client" same --epochs 1 "$tmp/ds" s3://bkt/train
pages() { [ "$(grep -c '"u":"/bkt?' "$tmp/access.log")" -eq 3 ] &&
	grep -q '"u":"/bkt?continuation-token=t%2F3%2B%3D%26&list-type=2&prefix=train%2F"' "$tmp/access.log"; }
test_ok "... listing read in 3 pages with canonical, encoded queries" pages
test_ok "... the key with a space and an '&' was requested percent-encoded" \
	grep -q '"u":"/bkt/train/class001/x%26y%20z.jpg"' "$tmp/access.log"
sigok() { "$PY" "$S/loader/test/sigv4_check.py" verify "$tmp/access.log" AKIDTEST \
	"$AWS_SECRET_ACCESS_KEY" eu-west-3 >"$tmp/sig.out"; }
test_ok "every S3 request's signature (session token included) verifies with an independent signer" sigok
diag "$(cat "$tmp/sig.out")"
test_ok "a local file list of s3:// URLs reads the same objects" \
	"$client" stats --epochs 1 "$tmp/s3list.txt"
log_reset
test_ok "the independent signer reproduces AWS's published SigV4 examples" \
	"$PY" "$S/loader/test/sigv4_check.py" selftest
test_ok "AWS's published example requests, sent by the loader's S3 code, carry the published signatures" \
	sh -c "'$client' sigv4 $port && '$PY' '$S/loader/test/sigv4_check.py' vector '$tmp/access.log'"
test_ok "resume half way through an epoch continues with exactly the remaining samples" \
	"$client" resume "$U/ds/"

# ---- Concurrency and connection reuse.
log_reset
"$client" stats --epochs 3 --mode raw "$U/ds/" >"$tmp/ra.out" 2>&1
many() { [ "$(distinct_conns "$tmp/access.log" '"u":"/ds/class')" -ge 8 ] &&
	[ "$(stat_of "$tmp/ra.out" window 3)" -ge 8 ]; }
test_ok "read-ahead: the window grows past 8 and requests go out over >= 8 connections at once" many
reuse() { r=$(grep -c '"u":"/ds/class' "$tmp/access.log"); c=$(distinct_conns "$tmp/access.log" '"u":"/ds/class')
	diag "$r requests over $c connections"; [ "$r" -ge $((3 * c)) ]; }
test_ok "connections are reused (>= 3 requests per connection over 3 epochs)" reuse
pct() { awk -v a="$(stat_of "$tmp/ra.out" p50 3)" -v b="$(stat_of "$tmp/ra.out" p99 3)" \
	'BEGIN { exit !(a >= 0.045 && a <= b && b < 5) }'; }
test_ok "request latency percentiles see the 50 ms (p50 >= 45 ms, p50 <= p99)" pct
diag "$(cat "$tmp/ra.out")"
log_reset
"$client" stats --epochs 1 --mode raw --window -1 "$U/ds/" >"$tmp/sync.out" 2>&1
few() { [ "$(distinct_conns "$tmp/access.log" '"u":"/ds/class')" -le 2 ] &&
	[ "$(stat_of "$tmp/sync.out" window)" -eq 0 ]; }
test_ok "io_window=-1: one request per worker at a time (2 workers, <= 2 connections)" few
if [ -n "$cert" ]; then
	h2() { CURL_CA_BUNDLE=$cert "$client" stats --epochs 2 --mode raw "https://127.0.0.1:$tport/ds/" \
		>"$tmp/h2.out" 2>&1 || return 1
		[ "$(grep -c . "$tmp/tls.log")" -ge 120 ] && ! grep -v '"proto":"HTTP/2.0"' "$tmp/tls.log" | grep -q . &&
			[ "$(distinct_conns "$tmp/tls.log" '"u":"/ds/class')" -eq 1 ]; }
	test_ok "HTTPS with HTTP/2: every request over HTTP/2, the items multiplexed over one connection" h2
	notrust() { ! "$client" stats --epochs 1 "https://127.0.0.1:$tport/ds/" >/dev/null 2>"$tmp/err"; }
	test_ok "HTTPS to an untrusted certificate fails with a clear error" notrust
else
	test_skip "openssl cannot make a test certificate: no HTTPS/HTTP2 check"
	test_skip "openssl cannot make a test certificate: no HTTPS/HTTP2 check"
fi

# ---- Failures.
"$client" stats --epochs 2 "$U/lists/gone.txt" >"$tmp/gone.out" 2>&1
gone() { [ "$(stat_of "$tmp/gone.out" samples)" -eq 7 ] && [ "$(stat_of "$tmp/gone.out" corrupt)" -ge 1 ] &&
	grep -q 'last_corrupt=.*/gone/.*HTTP 404' "$tmp/gone.out"; }
test_ok "a 404 is a corrupt item: counted, replaced, named (the epoch is complete)" gone
"$client" stats --epochs 1 "$U/flaky/flaky.txt" >"$tmp/flaky.out" 2>&1
flaky() { [ "$(stat_of "$tmp/flaky.out" corrupt)" -eq 0 ] && [ "$(stat_of "$tmp/flaky.out" retries)" -ge 8 ] &&
	[ "$(stat_of "$tmp/flaky.out" samples)" -eq 4 ]; }
test_ok "5xx are retried with backoff: 503 twice, then every item arrives, none corrupt" flaky
diag "$(cat "$tmp/flaky.out")"
"$client" stats --epochs 1 --deadline 500 "$U/lists/slow.txt" >"$tmp/slow.out" 2>&1
slow() { [ "$(stat_of "$tmp/slow.out" samples)" -eq 7 ] && grep -q 'last_corrupt=.*/slow/.*Timeout.*gave up' "$tmp/slow.out" &&
	awk -v w="$(stat_of "$tmp/slow.out" wall)" 'BEGIN { exit !(w < 2.9) }'; }
test_ok "an item slower than its deadline (0.5 s; the server takes 3 s) is given up and replaced" slow
diag "$(cat "$tmp/slow.out")"
"$client" stats --epochs 1 --max-item 200000 "$U/lists/big.txt" >"$tmp/big.out" 2>&1
big() { [ "$(stat_of "$tmp/big.out" samples)" -eq 7 ] && grep -q 'last_corrupt=.*/big/.*larger than the item cap' "$tmp/big.out"; }
test_ok "an item above max_item_bytes is cut off and counted corrupt" big
"$client" stats --epochs 1 "$U/lists/bad.txt" >"$tmp/bad.out" 2>&1
badbody() { [ "$(stat_of "$tmp/bad.out" samples)" -eq 10 ] && [ "$(stat_of "$tmp/bad.out" corrupt)" -ge 4 ]; }
test_ok "corrupt bodies (truncated, garbage, empty) are corrupt items; the epoch completes" badbody
dead=$(nginx_port)
printf 'http://127.0.0.1:%s/a.jpg 0\nhttp://127.0.0.1:%s/b.jpg 1\n' "$dead" "$dead" >"$tmp/dead.txt"
deadsrv() { ! "$client" stats --epochs 1 --deadline 500 "$tmp/dead.txt" >"$tmp/dead.out" 2>&1 &&
	grep -q 'error=.*127.0.0.1' "$tmp/dead.out"; }
test_ok "a dead server ends the epoch with an error naming it, within seconds" deadsrv
nomani() { ! "$bench" -e 1 "$U/fast/class000/" >/dev/null 2>"$tmp/err" && grep -q 'coordl.manifest.*404' "$tmp/err"; }
test_ok "a missing manifest is an error naming its URL and the 404" nomani
bad_url() { ! "$bench" -e 1 "http://user:pw@127.0.0.1:$port/ds/" >/dev/null 2>"$tmp/err" &&
	grep -q 'credentials in URLs' "$tmp/err" && ! grep -q 'pw' "$tmp/err"; }
test_ok "a URL with a password is refused without printing it" bad_url
nosecret() { AWS_SECRET_ACCESS_KEY=wrong-secret-value "$client" stats --epochs 1 s3://bkt/train >"$tmp/ws.out" 2>&1
	! grep -q 'wrong-secret-value' "$tmp/ws.out"; }
test_ok "credentials never appear in output or errors" nosecret

# ---- Cache, Python, profiler.
log_reset
"$client" stats --epochs 2 --cache 64000000 "$U/ds/" >"$tmp/cache.out" 2>&1
cached() { [ "$(stat_of "$tmp/cache.out" requests 2)" -eq 0 ] && [ "$(stat_of "$tmp/cache.out" misses 2)" -eq 0 ] &&
	[ "$(grep -c '"u":"/ds/class' "$tmp/access.log")" -eq 61 ]; }
test_ok "the MinIO cache absorbs remote misses: epoch 1 sends no request" cached
# A sanitizer build of libcoordl loads into Python only with its runtime
# preloaded (ASan), or not at all (TSan), as python/test/taputil.py does.
lib=$B/loader/.libs/libcoordl.so
pyenv=
case "$(ldd "$lib" 2>/dev/null)" in
*libtsan*) pyenv=skip ;;
*libasan*) pyenv="LD_PRELOAD=$(ldd "$lib" | awk '/libasan/ { print $3 }') ASAN_OPTIONS=detect_leaks=0" ;;
esac
pyurl() { env $pyenv COORDL_LIBRARY="$lib" "$PY" - "$U/ds/" <<'EOF'
import sys
sys.path.insert(0, __import__("os").path.join(__import__("os").environ.get("top_srcdir", "."), "python"))
import coordl
with coordl.Loader(sys.argv[1], batch_size=8, out_size=32, threads=2, io_window=0,
                   output="numpy") as ld:
    n = sum(images.shape[0] for images, labels in ld)
    st = ld.stats()
    assert n == 61 and ld.num_classes == 3, (n, ld.num_classes)
    assert st["requests"] >= 61 and st["req_latency_p50"] >= 0.045, st
EOF
}
if [ "$pyenv" = skip ]; then
	test_skip "libcoordl is built with TSan, which cannot run under an uninstrumented Python"
else
	test_ok "the Python binding takes a URL and reports request latency" pyurl
fi
profile() {
	"$prof" run -q --out "$tmp/prof.json" --key remote --batch-size 8 --size 32 --max-threads 2 \
		--windows 2 --window-batches 2 --check-frac 0 "$U/ds/" >"$tmp/prof.out" 2>&1 || return 1
	"$PY" - "$tmp/prof.json" <<'EOF' || return 1
import json, sys
r = json.load(open(sys.argv[1]))["rates"]
assert 0.04 <= r["fetch_latency_s"] <= 0.5 and r["fetch_concurrency"] > 2, r
EOF
	"$prof" what-if "$tmp/prof.json" --cpus 1 --cache 0 >"$tmp/whatif.out" &&
		grep -q 'remote fetch' "$tmp/whatif.out"
}
test_ok "synergy-profile run profiles a remote dataset: latency and concurrency in the profile, what-if predicts the remote rate" profile
diag "$(cat "$tmp/whatif.out" 2>/dev/null)"

nginx_stop
stopped() { ! kill -0 "$(cat "$tmp/ng/nginx.pid" 2>/dev/null || echo 999999)" 2>/dev/null; }
test_ok "nginx is stopped" stopped
done_testing

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# coordl-datagen.sh: the test-data generator is deterministic (same seed,
# byte-identical tree, whatever --jobs), the seed matters, the tree has the
# promised shape and kinds of files, and bad arguments are refused clearly.
. "${top_srcdir:-.}/tests/lib/tap.sh"
gen="${top_builddir:-.}/tools/coordl-datagen"
[ -x "$gen" ] || skip_all "tools/coordl-datagen not built"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/datagen-t.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

tree_sum() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum) }

test_ok "generates a tree" "$gen" --out "$tmp/a" --classes 4 --images 40 --seed 7 --corrupt 4 --jobs 1
test_ok "same seed again, with more threads" "$gen" --out "$tmp/b" --classes 4 --images 40 --seed 7 --corrupt 4 --jobs 3
test_ok "same seed gives byte-identical files" test "$(tree_sum "$tmp/a")" = "$(tree_sum "$tmp/b")"
test_ok "another seed" "$gen" --out "$tmp/c" --classes 4 --images 40 --seed 8 --corrupt 4
differ() { ! cmp -s "$tmp/a/class000/img0000000.jpg" "$tmp/c/class000/img0000000.jpg"; }
test_ok "a different seed gives different images" differ
count() { find "$tmp/a" -name "$1" -type f | wc -l; }
test_ok "4 class directories" test "$(find "$tmp/a" -mindepth 1 -maxdepth 1 -type d | wc -l)" -eq 4
test_ok "40 images, 10 per class" test "$(count 'img*.jpg')" -eq 40 -a \
	"$(find "$tmp/a/class002" -name 'img*.jpg' | wc -l)" -eq 10
test_ok "4 corrupt files, one of them empty" test "$(count 'corrupt*.jpg')" -eq 4 -a \
	"$(find "$tmp/a" -name 'corrupt*.jpg' -size 0 | wc -l)" -eq 1
jpeg_magic() { for f in "$tmp"/a/class*/img*.jpg; do
	[ "$(head -c 2 "$f" | od -An -tx1 | tr -d ' ')" = ffd8 ] || return 1; done; }
test_ok "every image starts with a JPEG SOI marker" jpeg_magic
# The images include grayscale (index 7) and CMYK (index 13) ones: the SOF
# segment's component count tells them apart (1, 3 and 4).
ncomp() { od -An -tu1 -v "$1" | tr -s ' ' '\n' | awk 'NF { b[n++] = $1 }
	END { for (i = 2; i + 9 < n; i++) if (b[i] == 255 && (b[i+1] == 192 || b[i+1] == 194)) { print b[i+9]; exit } }'; }
test_ok "image 7 is grayscale" test "$(ncomp "$tmp/a/class003/img0000007.jpg")" = 1
test_ok "image 13 is CMYK" test "$(ncomp "$tmp/a/class001/img0000013.jpg")" = 4
test_ok "image 0 is colour" test "$(ncomp "$tmp/a/class000/img0000000.jpg")" = 3
test_ok "--help exits 0" "$gen" --help
# usage_err PATTERN ARGS...: refused, and the message matches PATTERN.
usage_err() { p=$1; shift; ! "$gen" "$@" >/dev/null 2>"$tmp/err" && grep -q -- "$p" "$tmp/err"; }
test_ok "--classes 0 is refused, naming the option" usage_err "^coordl-datagen: --classes" --classes 0 --out "$tmp/x" --images 1 --seed 1
test_ok "--width-range 9-5 is refused" usage_err "^coordl-datagen: --width-range" --width-range 9-5 --out "$tmp/x" --classes 1 --images 1 --seed 1
test_ok "--seed is required, and named as missing" usage_err "missing --seed (" --out "$tmp/x" --classes 1 --images 1
test_ok "nothing but the missing ones is named" usage_err "missing --out --images (" --classes 1 --seed 1
done_testing

#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""sigv4_check.py: an independent AWS Signature V4 signer (Python's hashlib
and hmac, written from AWS's description of the algorithm) that checks the
signatures libcoordl's S3 requests carried, as nginx logged them.

  sigv4_check.py selftest
      sign AWS's published example requests and compare with the published
      signatures (proves this signer right before it judges anything)
  sigv4_check.py vector LOG
      the requests remote-client sigv4 sent: their Authorization headers
      must equal the published ones
  sigv4_check.py verify LOG KEY_ID SECRET REGION
      every request in LOG with an AWS4-HMAC-SHA256 Authorization header
      (and there must be some) is recomputed from what the server received
      and must match, with KEY_ID's credential scope

LOG holds one JSON object per line (nginx log_format coordl in
tests/lib/nginx.sh): method, raw request URI, Host, Authorization and the
x-amz-* and Range headers. Prints one line per problem; exit 0 when all
is well.
"""

import hashlib
import hmac
import json
import sys
import urllib.parse

EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
EX_KEY = "AKIAIOSFODNN7EXAMPLE"
EX_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
EX_DATE = "20130524T000000Z"
EX_HOST = "examplebucket.s3.amazonaws.com"

# From AWS's S3 documentation, "Examples: Signature Calculations in AWS
# Signature Version 4" (header-based authentication): request, signed
# headers, signature.
PUBLISHED = [
    ("GET", "/test.txt", "", {"host": EX_HOST, "range": "bytes=0-9",
                              "x-amz-content-sha256": EMPTY,
                              "x-amz-date": EX_DATE},
     "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
    ("GET", "/", "max-keys=2&prefix=J",
     {"host": EX_HOST, "x-amz-content-sha256": EMPTY, "x-amz-date": EX_DATE},
     "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
    ("GET", "/", "lifecycle",
     {"host": EX_HOST, "x-amz-content-sha256": EMPTY, "x-amz-date": EX_DATE},
     "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"),
]
# From AWS's SigV4 test suite (get-vanilla): another service and secret.
VANILLA = ("GET", "/", "", {"host": "example.amazonaws.com",
                            "x-amz-date": "20150830T123600Z"},
           "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")


def uri_encode(s, keep_slash):
    safe = "-._~" + ("/" if keep_slash else "")
    return urllib.parse.quote(s, safe=safe)


def canonical_query(raw):
    if not raw:
        return ""
    pairs = []
    for part in raw.split("&"):
        k, _, v = part.partition("=")
        pairs.append((uri_encode(urllib.parse.unquote(k), False),
                      uri_encode(urllib.parse.unquote(v), False)))
    return "&".join("%s=%s" % kv for kv in sorted(pairs))


def canonical_path(raw):
    # S3 does not normalise paths: each segment is encoded once.
    return "/".join(uri_encode(urllib.parse.unquote(seg), False)
                    for seg in raw.split("/"))


def signature(secret, method, path, query, headers, signed, payload,
              stamp, region, service):
    canon = "\n".join([method, canonical_path(path), canonical_query(query)] +
                      ["%s:%s" % (h, " ".join(headers[h].split()))
                       for h in signed] +
                      ["", ";".join(signed), payload])
    scope = "%s/%s/%s/aws4_request" % (stamp[:8], region, service)
    sts = "\n".join(["AWS4-HMAC-SHA256", stamp, scope,
                     hashlib.sha256(canon.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (stamp[:8], region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return hmac.new(k, sts.encode(), hashlib.sha256).hexdigest(), scope


def parse_auth(auth):
    """AWS4-HMAC-SHA256 Credential=K/D/R/S/aws4_request, SignedHeaders=a;b,
    Signature=hex -> dict (spaces after commas optional)."""
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return None
    out = {}
    for part in auth[len("AWS4-HMAC-SHA256 "):].split(","):
        k, _, v = part.strip().partition("=")
        out[k] = v
    return out


def selftest():
    bad = 0
    for method, path, query, headers, want in PUBLISHED:
        got, _ = signature(EX_SECRET, method, path, query, headers,
                           sorted(headers), EMPTY, EX_DATE, "us-east-1", "s3")
        if got != want:
            print("selftest: %s %s?%s: %s, published %s"
                  % (method, path, query, got, want))
            bad += 1
    method, path, query, headers, want = VANILLA
    got, _ = signature("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", method,
                       path, query, headers, sorted(headers),
                       EMPTY, "20150830T123600Z", "us-east-1", "service")
    if got != want:
        print("selftest: get-vanilla: %s, published %s" % (got, want))
        bad += 1
    return bad


def log_lines(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)


def vector(path):
    """The two example requests remote-client sent must carry exactly the
    published credential, signed headers and signature."""
    want = {
        "/test.txt": ("host;range;x-amz-content-sha256;x-amz-date",
                      PUBLISHED[0][4]),
        "/?max-keys=2&prefix=J": ("host;x-amz-content-sha256;x-amz-date",
                                  PUBLISHED[1][4]),
    }
    seen = set()
    bad = 0
    for r in log_lines(path):
        if r.get("host") != EX_HOST or r["u"] not in want:
            continue
        a = parse_auth(r.get("auth", ""))
        sh, sig = want[r["u"]]
        cred = "%s/20130524/us-east-1/s3/aws4_request" % EX_KEY
        if not a or a.get("Credential") != cred or \
                a.get("SignedHeaders") != sh or a.get("Signature") != sig:
            print("vector: %s: sent %r, published Credential=%s, "
                  "SignedHeaders=%s, Signature=%s"
                  % (r["u"], r.get("auth"), cred, sh, sig))
            bad += 1
        seen.add(r["u"])
    for u in want:
        if u not in seen:
            print("vector: no request for %s in %s" % (u, path))
            bad += 1
    return bad


def verify(path, key_id, secret, region):
    n = bad = 0
    for r in log_lines(path):
        a = parse_auth(r.get("auth", ""))
        if a is None or r.get("host") == EX_HOST:
            continue
        n += 1
        cred = a.get("Credential", "").split("/")
        signed = a.get("SignedHeaders", "").split(";")
        headers = {"host": r.get("host", ""), "range": r.get("range", ""),
                   "x-amz-content-sha256": r.get("sha", ""),
                   "x-amz-date": r.get("date", ""),
                   "x-amz-security-token": r.get("tok", "")}
        missing = [h for h in signed if h not in headers or not headers[h]]
        path_, _, query = r["u"].partition("?")
        if len(cred) != 5 or cred[0] != key_id or missing:
            print("verify: %s: credential %r, unsigned or missing %s"
                  % (r["u"], a.get("Credential"), missing))
            bad += 1
            continue
        for h in ("host", "x-amz-date", "x-amz-content-sha256"):
            if h not in signed:
                print("verify: %s: %s is not signed" % (r["u"], h))
                bad += 1
        want, scope = signature(secret, r["m"], path_, query, headers, signed,
                                headers["x-amz-content-sha256"],
                                headers["x-amz-date"], region, cred[3])
        if a.get("Signature") != want or "/".join(cred[1:]) != scope:
            print("verify: %s %s: signature %s, expected %s (scope %s)"
                  % (r["m"], r["u"], a.get("Signature"), want, scope))
            bad += 1
    if n == 0:
        print("verify: no signed request in %s" % path)
        return 1
    print("verify: %d signed requests checked, %d bad" % (n, bad))
    return bad


def main(argv):
    if len(argv) >= 1 and argv[0] == "selftest":
        return 1 if selftest() else 0
    if len(argv) == 2 and argv[0] == "vector":
        return 1 if selftest() or vector(argv[1]) else 0
    if len(argv) == 5 and argv[0] == "verify":
        return 1 if selftest() or verify(*argv[1:]) else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
"""s3probe.py: proves tests/fixtures/s3fake.py honest (run with Debian's
python3, which has python3-botocore).

  s3probe.py selfcheck
      s3fake's verifier against AWS's published SigV4 examples (S3 API
      reference: GET Object, ListObjects, PUT Object, a presigned URL and the
      chunked-upload example's seed and three chunk signatures), then against
      requests signed by botocore's S3SigV4Auth / S3SigV4QueryAuth (odd keys,
      query values, header spacing, a session token), each also with a wrong
      secret and a tampered part, which must fail. Prints "ok NAME" / "not ok".

  s3probe.py live URL CA AKID SECRET BUCKET [--vhost DOMAIN] [--token T]
             [--only CASE,CASE...] [--proxy HOST:PORT --proxy-auth ID:SECRET]
      Sends requests signed by botocore (and aws-chunked bodies whose seed
      signature botocore computes) to a running s3fake, well-formed and
      tampered, and prints one line a case: "CASE STATUS CODE". The e2e
      script compares these with what S3 answers. --only runs the cases
      named (streaming-signed, streaming-bad-chunk, get-stream, ...);
      --proxy sends each through an HTTP proxy's CONNECT (CA then names
      the proxy's CA: the egress proxy signing again, r30-proxy-creds).
"""
import base64
import datetime
import hashlib
import http.client
import os
import re
import ssl
import sys
import time
from urllib.parse import urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import s3fake  # noqa: E402

from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402

EX_KEY = "AKIAIOSFODNN7EXAMPLE"
EX_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
EX_NOW = datetime.datetime(2013, 5, 24, tzinfo=datetime.timezone.utc).timestamp()
nfail = 0


def report(name, good):
    global nfail
    print(("ok " if good else "not ok ") + name)
    if not good:
        nfail += 1


def verdict(fn):
    try:
        fn()
        return "ok"
    except s3fake.S3Error as e:
        return e.code


def auth(sig, signed, scope="20130524/us-east-1/s3/aws4_request"):
    return ("AWS4-HMAC-SHA256 Credential=%s/%s,SignedHeaders=%s,Signature=%s"
            % (EX_KEY, scope, signed, sig))


def aws_examples():
    creds = {EX_KEY: (EX_SECRET, None)}
    host = ("Host", "examplebucket.s3.amazonaws.com")
    date = ("x-amz-date", "20130524T000000Z")
    e = s3fake.EMPTY_SHA256

    def v(method, target, headers, body=b""):
        return verdict(lambda: s3fake.verify_request(method, target, headers, body, creds,
                                                     "us-east-1", now=EX_NOW))
    get = [host, ("Range", "bytes=0-9"), ("x-amz-content-sha256", e), date,
           ("Authorization", auth("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
                                  "host;range;x-amz-content-sha256;x-amz-date"))]
    report("AWS example GET Object verifies", v("GET", "/test.txt", get) == "ok")
    report("AWS example GET Object with another Range is refused",
           v("GET", "/test.txt", [(n, "bytes=0-10" if n == "Range" else x) for n, x in get])
           == "SignatureDoesNotMatch")
    lst = [host, ("x-amz-content-sha256", e), date,
           ("Authorization", auth("34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
                                  "host;x-amz-content-sha256;x-amz-date"))]
    report("AWS example ListObjects (query sorted) verifies",
           v("GET", "/?max-keys=2&prefix=J", lst) == "ok")
    report("AWS example ListObjects with another prefix is refused",
           v("GET", "/?max-keys=2&prefix=K", lst) == "SignatureDoesNotMatch")
    body = b"Welcome to Amazon S3."
    put = [("Date", "Fri, 24 May 2013 00:00:00 GMT"), host, date,
           ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
           ("x-amz-content-sha256", hashlib.sha256(body).hexdigest()),
           ("Authorization", auth("98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
                                  "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class"))]
    report("AWS example PUT Object (encoded $ in the key) verifies",
           v("PUT", "/test%24file.text", put, body) == "ok")
    report("AWS example PUT Object with another body is refused (hash)",
           v("PUT", "/test%24file.text", put, body + b"!") == "XAmzContentSHA256Mismatch")
    pre = ("/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE"
           "%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&"
           "X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature="
           "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
    report("AWS example presigned URL verifies", v("GET", pre, [host]) == "ok")
    report("AWS example presigned URL for another key is refused",
           v("GET", pre.replace("/test.txt", "/test2.txt"), [host]) == "SignatureDoesNotMatch")
    late = EX_NOW + 86401
    report("AWS example presigned URL refused once expired", verdict(
        lambda: s3fake.verify_request("GET", pre, [host], b"", creds, "us-east-1", now=late))
        == "AccessDenied")
    # the chunked upload example: 65 KiB of 'a' in a 64 KiB and a 1 KiB chunk
    sigs = ["ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
            "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
            "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"]

    def chunked(sizes, sg):
        return b"".join(b"%x;chunk-signature=%s\r\n%s\r\n" % (n, s.encode(), b"a" * n)
                        for n, s in zip(sizes, sg))
    cbody = chunked([65536, 1024, 0], sigs)
    stream = [("Host", "s3.amazonaws.com"), date, ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
              ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
              ("Content-Encoding", "aws-chunked"), ("x-amz-decoded-content-length", "66560"),
              ("Content-Length", str(len(cbody))),
              ("Authorization", auth("4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
                                     "content-encoding;content-length;host;x-amz-content-sha256;"
                                     "x-amz-date;x-amz-decoded-content-length;x-amz-storage-class"))]
    out = {}

    def run():
        out["r"] = s3fake.verify_request("PUT", "/examplebucket/chunkObject.txt", stream, cbody,
                                         creds, "us-east-1", now=EX_NOW)
    report("AWS example chunked upload: seed and 3 chunk signatures verify",
           verdict(run) == "ok" and out["r"][0] == b"a" * 66560 and out["r"][1]["chunks"] == 3)
    bad = cbody.replace(b"a\r\n400;", b"b\r\n400;")
    report("AWS example chunked upload with one byte changed is refused", verdict(
        lambda: s3fake.verify_request("PUT", "/examplebucket/chunkObject.txt", stream, bad,
                                      creds, "us-east-1", now=EX_NOW)) == "SignatureDoesNotMatch")
    swapped = chunked([65536, 1024, 0], [sigs[0], sigs[2], sigs[1]])
    report("AWS example chunked upload with chunk signatures swapped is refused", verdict(
        lambda: s3fake.verify_request("PUT", "/examplebucket/chunkObject.txt", stream, swapped,
                                      creds, "us-east-1", now=EX_NOW)) == "SignatureDoesNotMatch")
    # the probe's own chunk signer reproduces the example (it is used live below)
    mine = sign_chunks([b"a" * 65536, b"a" * 1024], EX_SECRET, "20130524T000000Z",
                       "20130524/us-east-1/s3/aws4_request", "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
    report("the probe's chunk signer reproduces the AWS example", mine == cbody)


def sign_chunks(chunks, secret, amz_date, scope, seed):
    """aws-chunked body: each chunk's signature chained from seed, then the
    empty final chunk (AWS S3 API reference, sigv4-streaming)."""
    d, region, service, _ = scope.split("/")
    key = s3fake.signing_key(secret, d, region, service)
    out, prev = [], seed
    for c in list(chunks) + [b""]:
        prev = s3fake.hmac_hex(key, s3fake.chunk_string_to_sign(amz_date, scope, prev, c))
        out.append(b"%x;chunk-signature=%s\r\n%s\r\n" % (len(c), prev.encode(), c))
    return b"".join(out)


class StreamingAuth(S3SigV4Auth):
    """botocore's S3 signer with the streaming payload marker as the payload
    hash: botocore computes the seed signature."""

    def payload(self, request):
        return s3fake.STREAM_SIGNED


class TrailerAuth(S3SigV4Auth):
    """botocore's S3 signer with STREAMING-UNSIGNED-PAYLOAD-TRAILER."""

    def payload(self, request):
        return s3fake.STREAM_UNSIGNED_TRAILER


class UnsignedAuth(S3SigV4Auth):
    """botocore's S3 signer with UNSIGNED-PAYLOAD (what it sends over HTTPS
    for streamed uploads and what the AWS CLI sends for PutObject)."""

    def payload(self, request):
        return s3fake.UNSIGNED


def boto_sign(method, url, headers, body, key, secret, region="us-east-1", service="s3",
              token=None, presign=0, signer=None, when=None, unsigned=False):
    """Signs with botocore; returns (target, [(name, value)]). unsigned: the
    payload as botocore signs it over HTTPS when payload signing is off
    (UNSIGNED-PAYLOAD), else its SHA-256."""
    if unsigned:
        signer = UnsignedAuth
    req = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    cr = Credentials(key, secret, token)
    if presign:
        a = S3SigV4QueryAuth(cr, service, region, expires=presign)
    else:
        a = (signer or S3SigV4Auth)(cr, service, region)
        req.context["payload_signing_enabled"] = True
    if when is not None:
        # botocore reads the clock inside add_auth; a request signed "then"
        real = datetime.datetime

        class Then(real):
            @classmethod
            def utcnow(cls):
                return real.utcfromtimestamp(when)
        import botocore.auth as ba
        ba.datetime.datetime = Then
        try:
            a.add_auth(req)
        finally:
            ba.datetime.datetime = real
    else:
        a.add_auth(req)
    p = req.prepare()
    u = urlsplit(p.url)
    target = u.path + ("?" + u.query if u.query else "")
    hdrs = [(k, v if isinstance(v, str) else v.decode()) for k, v in p.headers.items()]
    if not any(k.lower() == "host" for k, _ in hdrs):
        # what the HTTP client adds (botocore signs the same: the port only
        # when it is not the scheme's default)
        port = u.port
        dflt = 443 if u.scheme == "https" else 80
        hdrs.insert(0, ("Host", u.hostname + ("" if port in (None, dflt) else ":%d" % port)))
    return target, hdrs


def boto_cross():
    creds = {"AKCROSS": ("cross/secret+key", None), "AKTOK": ("tok-secret", "SESSIONTOKEN==")}
    now = time.time()
    cases = [
        ("GET", "https://b.s3.test/plain.txt", {}, None),
        ("PUT", "https://127.0.0.1:8443/bkt/dir/a%20b%2Bc~d%21%2A%28%29.txt",
         {"Content-Type": "text/plain", "x-amz-meta-note": "  two   spaces  "}, b"hello"),
        ("GET", "https://127.0.0.1:8443/bkt?list-type=2&prefix=a%2Fb%20c&delimiter=%2F"
         "&encoding-type=url", {}, None),
        ("PUT", "https://127.0.0.1:8443/bkt/%C3%BCml%C3%A4ut/%E2%82%AC.bin?partNumber=2&"
         "uploadId=abc%3D%3D", {}, b"\x00" * 100),
        ("POST", "https://127.0.0.1:8443/bkt/k?uploads", {}, b""),
        ("GET", "https://127.0.0.1:8443/bkt?list-type=2&start-after=k%2B%2B&max-keys=3", {}, None),
    ]
    for i, (m, url, h, body) in enumerate(cases):
        target, hdrs = boto_sign(m, url, h, body, "AKCROSS", "cross/secret+key")
        b = body or b""
        name = "botocore-signed %s %s" % (m, target[:60])
        report(name + " verifies", verdict(lambda: s3fake.verify_request(
            m, target, hdrs, b, creds, "us-east-1", now=now)) == "ok")
        t2, h2 = boto_sign(m, url, h, body, "AKCROSS", "cross/secret+kez")
        report(name + " with a wrong secret is refused", verdict(lambda: s3fake.verify_request(
            m, t2, h2, b, creds, "us-east-1", now=now)) == "SignatureDoesNotMatch")
        pt, ph = boto_sign(m, url, h, None, "AKCROSS", "cross/secret+key", presign=300)
        report(name + " presigned verifies", verdict(lambda: s3fake.verify_request(
            m, pt, ph, b"", creds, "us-east-1", now=now)) == "ok")
    # a session token is signed and checked
    target, hdrs = boto_sign("GET", "https://127.0.0.1:8443/bkt/k", {}, None, "AKTOK",
                             "tok-secret", token="SESSIONTOKEN==")
    report("botocore-signed with a session token verifies", verdict(
        lambda: s3fake.verify_request("GET", target, hdrs, b"", creds, "us-east-1", now=now))
        == "ok")
    target, hdrs = boto_sign("GET", "https://127.0.0.1:8443/bkt/k", {}, None, "AKTOK",
                             "tok-secret", token="OTHERTOKEN==")
    report("botocore-signed with another session token is refused", verdict(
        lambda: s3fake.verify_request("GET", target, hdrs, b"", creds, "us-east-1", now=now))
        == "InvalidToken")


# ---- live ----------------------------------------------------------------

def live(argv):
    url, ca, key, secret, bucket = argv[:5]
    opts = dict(zip(argv[5::2], argv[6::2]))
    token = opts.get("--token")
    u = urlsplit(url)
    ctx = ssl.create_default_context(cafile=ca)

    only = set(opts["--only"].split(",")) if "--only" in opts else None
    run = lambda name: only is None or name in only  # noqa: E731

    def send(method, target, headers, body=b"", host=None):
        if "--proxy" in opts:
            ph, pp = opts["--proxy"].rsplit(":", 1)
            c = http.client.HTTPSConnection(ph, int(pp), context=ctx, timeout=20)
            auth = base64.b64encode(opts.get("--proxy-auth", "").encode()).decode()
            c.set_tunnel(u.hostname, u.port or 443,
                         headers={"Proxy-Authorization": "Basic " + auth})
        else:
            c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=10)
        c.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for k, v in headers:
            if k.lower() != "content-length":
                c.putheader(k, v)
        c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        data = r.read()
        c.close()
        m = re.search(rb"<Code>([^<]*)</Code>", data)
        return r.status, (m.group(1).decode() if m else "-"), data

    base = "%s://%s" % (u.scheme, u.netloc)
    results = []

    def case(name, method, path, headers=None, body=None, k=key, s=secret, region="us-east-1",
             service="s3", tamper=None, when=None, signer=None, send_body=None, host=None,
             tok=token, unsigned=False):
        if not run(name):
            return b""
        full = (("%s://%s.%s:%d" % (u.scheme, bucket, host, u.port)) if host else base) + path
        target, hdrs = boto_sign(method, full, headers or {}, body, k, s, region, service,
                                 tok, signer=signer, when=when, unsigned=unsigned)
        if tamper:
            target, hdrs = tamper(target, hdrs)
        b = send_body if send_body is not None else (body or b"")
        st, code, data = send(method, target, hdrs, b)
        results.append((name, st, code))
        print("%s %d %s" % (name, st, code), flush=True)
        return data

    obj = "/%s/probe/obj.txt" % bucket
    case("put-signed", "PUT", obj, {"Content-Type": "text/plain"}, b"probe body\n")
    data = case("get", "GET", obj)
    if run("get"):
        print("get-body-matches %s" % (data == b"probe body\n"))
    case("wrong-secret", "PUT", obj, body=b"x", s=secret + "x")
    case("unknown-key", "PUT", obj, body=b"x", k="AKIDUNKNOWN000000000")
    case("wrong-region", "GET", obj, region="eu-west-1")
    case("wrong-service", "GET", obj, service="ec2")
    case("stale-date", "GET", obj, when=time.time() - 1200)
    case("tampered-header", "PUT", obj, {"x-amz-meta-owner": "alice"}, b"x",
         tamper=lambda t, h: (t, [(n, "mallory" if n == "x-amz-meta-owner" else v)
                                  for n, v in h]))
    case("tampered-query", "GET", "/%s?list-type=2&prefix=probe%%2F" % bucket,
         tamper=lambda t, h: (t.replace("prefix=probe", "prefix=other"), h))
    case("tampered-body", "PUT", obj, body=b"signed body", send_body=b"other body!")
    case("unsigned-amz-header", "GET", obj,
         tamper=lambda t, h: (t, h + [("x-amz-meta-extra", "1")]))
    case("no-auth", "GET", obj,
         tamper=lambda t, h: (t, [(n, v) for n, v in h if n.lower() != "authorization"]))
    case("auth-dropped-host-signed-other", "GET", obj,
         tamper=lambda t, h: (t, [(n, "evil.test" if n.lower() == "host" else v) for n, v in h]))
    # UNSIGNED-PAYLOAD: the body is not covered, as on S3
    case("unsigned-payload", "PUT", "/%s/probe/unsigned.txt" % bucket, body=b"",
         send_body=b"not hashed", unsigned=True)
    # streaming signed chunks, seed signature by botocore
    payload = [os.urandom(65536), os.urandom(9000), b"tail"]
    whole = b"".join(payload)

    def chunked_body(bad=False):
        def t(target, hdrs):
            hd = dict((n.lower(), v) for n, v in hdrs)
            seed = hd["authorization"].rsplit("Signature=", 1)[1]
            a = s3fake.parse_authorization(hd["authorization"])
            scope = "%s/%s/%s/aws4_request" % (a["date"], a["region"], a["service"])
            body = sign_chunks(payload, secret, hd["x-amz-date"], scope, seed)
            if bad:
                body = body.replace(payload[1][:16], bytes(16), 1)
            stream_body[0] = body
            return target, hdrs
        return t
    stream_body = [b""]
    sh = {"Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(whole))}
    # Content-Length of the encoded body is signed, so compute it first
    enc_len = len(sign_chunks(payload, "x", "20000101T000000Z",
                              "20000101/us-east-1/s3/aws4_request", "0" * 64))
    sh["Content-Length"] = str(enc_len)
    for name, bad in (("streaming-signed", False), ("streaming-bad-chunk", True)):
        if not run(name):
            continue
        tgt_obj = "/%s/probe/stream.bin" % bucket
        target, hdrs = boto_sign("PUT", base + tgt_obj, sh, None, key, secret, token=token,
                                 signer=StreamingAuth)
        target, hdrs = chunked_body(bad)(target, hdrs)
        st, code, _ = send("PUT", target, hdrs, stream_body[0])
        print("%s %d %s" % (name, st, code), flush=True)
    data = case("get-stream", "GET", "/%s/probe/stream.bin" % bucket)
    if run("get-stream"):
        print("stream-body-matches %s" % (data == whole))
    if only is not None:
        return
    # aws-chunked with a trailing checksum (the AWS CLI's form), the checksum
    # right and wrong
    import zlib
    crc = base64.b64encode(zlib.crc32(whole).to_bytes(4, "big")).decode()
    for name, c in (("trailer-crc-ok", crc), ("trailer-crc-wrong", "AAAAAA==")):
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in payload)
        body += b"0\r\nx-amz-checksum-crc32:%s\r\n\r\n" % c.encode()
        th = {"Content-Encoding": "aws-chunked", "x-amz-trailer": "x-amz-checksum-crc32",
              "x-amz-decoded-content-length": str(len(whole)),
              "Content-Length": str(len(body))}
        target, hdrs = boto_sign("PUT", base + "/%s/probe/trailer.bin" % bucket, th, None,
                                 key, secret, token=token, signer=TrailerAuth)
        st, code, _ = send("PUT", target, hdrs, body)
        print("%s %d %s" % (name, st, code), flush=True)
    if "--vhost" in opts:
        case("vhost-put", "PUT", "/probe/vhost.txt", body=b"vhost\n", host=opts["--vhost"])
        data = case("vhost-get", "GET", "/probe/vhost.txt", host=opts["--vhost"])
        print("vhost-body-matches %s" % (data == b"vhost\n"))


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "selfcheck":
        aws_examples()
        boto_cross()
        sys.exit(1 if nfail else 0)
    if len(sys.argv) >= 7 and sys.argv[1] == "live":
        live(sys.argv[2:])
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main()

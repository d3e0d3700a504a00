#!/usr/bin/env python3
"""density.py: the create driver of tests/bench/density/run.sh.

  density.py create URL KEY PREFIX FROM TO CONC
      POST /v1/sessions {"id": PREFIX-i} for i in [FROM, TO) from CONC
      threads (keep-alive, one connection each); prints one JSON line:
      {"n","ok","failed","secs","per_s","p50_ms","p99_ms","max_ms","error"?}
      (error: the first failure's status and body). Exits 1 if any failed.
  density.py delete URL KEY CONC
      DELETE /v1/sessions/ID for every session GET /v1/sessions lists, from
      CONC threads; prints {"n","ok","failed","secs"}.
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse


def pct(v, p):
    return v[min(len(v) - 1, int(len(v) * p))] if v else None


def create(url, key, prefix, lo, hi, conc):
    u = urllib.parse.urlsplit(url)
    todo = list(range(lo, hi))
    mu = threading.Lock()
    ms, errs = [], []

    def worker():
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        while True:
            with mu:
                if not todo:
                    break
                i = todo.pop(0)
            body = json.dumps({"id": "%s-%d" % (prefix, i)})
            t0 = time.monotonic()
            try:
                c.request("POST", "/v1/sessions", body, {
                    "Authorization": "Bearer " + key,
                    "Content-Type": "application/json"})
                r = c.getresponse()
                text = r.read()
                status = r.status
            except (OSError, http.client.HTTPException) as e:
                status, text = 0, str(e).encode()
                c.close()
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
            dt = (time.monotonic() - t0) * 1000
            with mu:
                if status in (200, 201):
                    ms.append(dt)
                else:
                    errs.append("%d %s" % (status, text[:300].decode("utf-8", "replace")))
        c.close()

    t0 = time.monotonic()
    th = [threading.Thread(target=worker) for _ in range(conc)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    secs = time.monotonic() - t0
    ms.sort()
    out = {"n": hi - lo, "ok": len(ms), "failed": len(errs),
           "secs": round(secs, 1),
           "per_s": round(len(ms) / secs, 1) if secs > 0 else 0,
           "p50_ms": round(pct(ms, 0.5), 1) if ms else None,
           "p99_ms": round(pct(ms, 0.99), 1) if ms else None,
           "max_ms": round(ms[-1], 1) if ms else None}
    if errs:
        out["error"] = errs[0]
    print(json.dumps(out), flush=True)
    return 0 if not errs else 1


def delete(url, key, conc):
    u = urllib.parse.urlsplit(url)
    hdr = {"Authorization": "Bearer " + key}
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.request("GET", "/v1/sessions", headers=hdr)
    todo = [s["id"] for s in json.loads(c.getresponse().read())["sessions"]]
    c.close()
    n = len(todo)
    mu = threading.Lock()
    res = {"ok": 0, "failed": 0}

    def worker():
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        while True:
            with mu:
                if not todo:
                    break
                sid = todo.pop()
            try:
                c.request("DELETE", "/v1/sessions/" + urllib.parse.quote(sid), headers=hdr)
                r = c.getresponse()
                r.read()
                good = r.status in (200, 204, 404)
            except (OSError, http.client.HTTPException):
                good = False
                c.close()
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
            with mu:
                res["ok" if good else "failed"] += 1
        c.close()

    t0 = time.monotonic()
    th = [threading.Thread(target=worker) for _ in range(conc)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    print(json.dumps({"n": n, "ok": res["ok"], "failed": res["failed"],
                      "secs": round(time.monotonic() - t0, 1)}), flush=True)
    return 0 if res["failed"] == 0 else 1


def main():
    a = sys.argv[1:]
    if len(a) == 7 and a[0] == "create":
        return create(a[1], a[2], a[3], int(a[4]), int(a[5]), int(a[6]))
    if len(a) == 4 and a[0] == "delete":
        return delete(a[1], a[2], int(a[3]))
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())

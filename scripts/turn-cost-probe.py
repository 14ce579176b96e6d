#!/usr/bin/env python3
"""The breaker's costly turns on `troupe serve` (docs/performance.md, Run AX).

Usage: scripts/turn-cost-probe.py BIN   (BIN a `troupe` binary; run in a scratch folder:
it writes troupe.db there). Prints the time of one turn of each costly pack, and of
the first turns of three sessions of a pack with a ~780 KB rule pattern.
"""
import json, random, subprocess, sys, time, urllib.error, urllib.request

BIN = sys.argv[1]


def bundle(variables=(), rules=(), events=()):
    sc = {"id": "s", "name": "S", "cast": [{"character": "kai"}, {"seat": "guest", "player": True}],
          "openings": [{"id": "o", "text": "Hello."}]}
    for k, v in (("variables", variables), ("rules", rules), ("events", events)):
        if v:
            sc[k] = list(v)
    return {"troupe": "0.1", "kind": "bundle", "scenarios": [sc],
            "characters": [{"id": "kai", "name": "Kai", "fictional": True, "age_band": "adult"}]}


xs = {"id": "xs", "type": "list(int)", "default": list(range(300))}
any_rule = {"id": "any", "priority": -1, "replies": ["any"]}
CASES = [
    ("rule pattern a[a-z]{10000}b, input 100,000 a's",
     bundle(rules=[{"id": "c", "pattern": "a[a-z]{10000}b", "replies": ["c"]}, any_rule]), "a" * 100000),
    ("dynamic pattern: state.h (100,000 a's).matches(input 'a[a-z]{10000}b')",
     bundle(variables=[{"id": "h", "type": "string", "default": "a" * 100000}],
            events=[{"id": "m", "repeat": True, "when": "state.h.matches(last.text)"}]), "a[a-z]{10000}b"),
    ("rule keyword /a[0-9a]{10000}b/, input 100,000 a's",
     bundle(rules=[{"id": "k", "keywords": ["/a[0-9a]{10000}b/"], "replies": ["k"]}, any_rule]), "a" * 100000),
    ("200 events of 90,300 units each",
     bundle(variables=[xs], events=[{"id": f"e{i}", "when": "turn >= 1 && state.xs.exists(x, state.xs.exists(y, x + y < 0))"}
                                    for i in range(200)]), "hi"),
]
random.seed(1)
BIG = "[" + "".join(chr(random.randrange(0x4E00, 0x9FFF)) for _ in range(260000)) + "]x"

tok = subprocess.run([BIN, "serve", "token", "create", "--workspace", "probe", "--database", "troupe.db"],
                     capture_output=True, text=True, check=True).stdout.strip().split()[-1]
srv = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:0", "--database", "troupe.db"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
base = srv.stdout.readline().split()[-1] + "/api/v1/workspaces/probe"


def req(method, path, body=None):
    r = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                               headers={"Authorization": "Bearer " + tok})
    t = time.time()
    try:
        with urllib.request.urlopen(r, timeout=900) as f:
            out = json.loads(f.read() or b"null")
    except urllib.error.HTTPError as e:
        out = {"status": e.code}
    return out, time.time() - t


def session(pack, seed):
    return req("POST", "/sessions", {"pack": pack["hash"], "seed": seed})


try:
    for name, b, text in CASES:
        pack, _ = req("PUT", "/packs", b)
        s, _ = session(pack, 1)
        _, dt = req("POST", f"/sessions/{s['id']}/turns", {"text": text})
        print(f"{name}: one turn {dt:.3f} s", flush=True)
    pack, dt = req("PUT", "/packs", bundle(rules=[{"id": "big", "pattern": BIG, "replies": ["big"]}, any_rule]))
    print(f"PUT /packs, a {len(BIG.encode())}-byte rule pattern: {dt:.2f} s")
    for i in range(3):
        s, dt1 = session(pack, i)
        _, dt2 = req("POST", f"/sessions/{s['id']}/turns", {"text": "hello"})
        print(f"  session {i}: start {dt1:.3f} s, first turn {dt2:.3f} s", flush=True)
finally:
    srv.kill()

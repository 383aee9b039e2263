#!/usr/bin/python3
"""Retrieval behind an outside authorizer against native permissions, in one run.

Two indices of one `cordon serve` hold the same generated chunks (clustered vectors, a
department each): `native` names the department's group in each chunk's ACL; `delegated`
gives every chunk the staff group and asks a real Cerbos server (npm @cerbos/cerbos-linux-x64,
started here) through PlanResources, whose policy lets a user read its department's chunks.
Each reader (one per department) asks the same kNN queries of both, as the planner chooses
(`auto`) and exactly (`exact`): recall@10 of auto against exact, whether the two indices'
exact answers are the same chunks (they must be: the same readable set), and p50/p95 of the
request as the client sees it. The first question of each reader to the delegated index goes
to Cerbos (cold); the rest are answered from the cache (ttl_ms 600000).

Prints a Markdown table; --json FILE writes the figures. Relies on Debian python3 only.
  /usr/bin/python3 bench/http/authorizer.py --size 50000 --dim 64 --departments 20
"""
import argparse
import base64
import json
import os
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CERBOS = os.path.join(ROOT, "tests/http/authorizers/node_modules/@cerbos/cerbos-linux-x64/"
                      "cerbos-linux-x64")
KEY = "bench:bench-secret-0123456789abcdef"
POLICY = """apiVersion: api.cerbos.dev/v1
resourcePolicy:
  version: default
  resource: chunk
  rules:
    - actions: ["read"]
      effect: EFFECT_ALLOW
      roles: ["user"]
      condition:
        match:
          expr: request.resource.attr.department == request.principal.attr.department
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    def __init__(self, url):
        self.url = url
        self.auth = "ApiKey " + base64.b64encode(KEY.encode()).decode()

    def call(self, method, path, body=None, raw=None, ctype="application/json"):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": self.auth, "Content-Type": ctype})
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                out = json.loads(r.read() or b"null")
                status = r.status
        except urllib.error.HTTPError as e:
            out, status = json.loads(e.read() or b"null"), e.code
        return status, out, time.perf_counter() - t0


def start_cerbos(tmp):
    if not os.path.exists(CERBOS):
        sys.exit("authorizer.py: Cerbos is not installed; run make deps (it installs npm "
                 "@cerbos/cerbos-linux-x64 into tests/http/authorizers)")
    os.makedirs(os.path.join(tmp, "policies"))
    with open(os.path.join(tmp, "policies", "chunk.yaml"), "w") as f:
        f.write(POLICY)
    hp, gp = free_port(), free_port()
    conf = os.path.join(tmp, "cerbos.yaml")
    with open(conf, "w") as f:
        f.write(f"server:\n  httpListenAddr: \"127.0.0.1:{hp}\"\n"
                f"  grpcListenAddr: \"127.0.0.1:{gp}\"\n"
                f"storage:\n  driver: disk\n  disk:\n    directory: {tmp}/policies\n")
    p = subprocess.Popen([CERBOS, "server", f"--config={conf}"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{hp}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/_cerbos/health", timeout=1).read()
            return p, url
        except OSError:
            time.sleep(0.1)
    p.kill()
    sys.exit("authorizer.py: Cerbos did not start")


def start_cordon(tmp, binary, cerbos_url):
    with open(os.path.join(tmp, "authorizers.json"), "w") as f:
        json.dump([{"name": "cerbos", "kind": "cerbos", "url": cerbos_url,
                    "ttl_ms": 600000}], f)
    with open(os.path.join(tmp, "serve.conf"), "w") as f:
        f.write(f"authorizers_file = {tmp}/authorizers.json\naccess_log = off\naudit = 0\n")
    env = dict(os.environ, CORDON_BOOTSTRAP_KEY=KEY)
    p = subprocess.Popen([binary, "serve", "--data", os.path.join(tmp, "data"), "--listen",
                          "127.0.0.1:0", "--config", os.path.join(tmp, "serve.conf")],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    for _ in range(50):
        m = re.search(r"\(port (\d+)\)", p.stdout.readline())
        if m:
            return p, Client(f"http://127.0.0.1:{m.group(1)}")
    p.kill()
    sys.exit("authorizer.py: cordon serve did not start")


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=50000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--departments", type=int, default=20)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--bin", default=os.environ.get("CORDON_BIN",
                                                    os.path.join(ROOT, "build/release/cordon")))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="cordon-authorizer-")
    cerbos, cerbos_url = start_cerbos(tmp)
    server, c = start_cordon(tmp, a.bin, cerbos_url)
    try:
        depts = [f"d{i}" for i in range(a.departments)]
        ops = [{"op": "put_group", "id": "staff"},
               {"op": "put_role", "id": "reader",
                "permissions": [{"resource": "collection:*", "action": "*"}]},
               {"op": "grant", "to": "staff", "to_kind": "group", "role": "reader"}]
        for d in depts:
            ops += [{"op": "put_group", "id": d},
                    {"op": "put_subject", "id": "u-" + d, "attributes": {"department": d}},
                    {"op": "add_member", "group": "staff", "member": "u-" + d},
                    {"op": "add_member", "group": d, "member": "u-" + d}]
        st, out, _ = c.call("POST", "/_cordon/model", {"ops": ops})
        assert st == 200, out
        mapping = {"properties": {"department": {"type": "keyword"}, "emb": {
            "type": "dense_vector", "dims": a.dim, "similarity": "l2_norm"}}}
        for name, settings in (("native", {}), ("delegated", {"index": {"cordon": {
                "authorizer": "cerbos"}}})):
            st, out, _ = c.call("PUT", "/" + name, {"settings": settings, "mappings": mapping})
            assert st == 200, out
        centres = [[rng.gauss(0, 1) for _ in range(a.dim)] for _ in range(64)]
        t0 = time.time()
        for start in range(0, a.size, 2000):
            # one index a request: _bulk batches consecutive items of one index
            lines = {"native": [], "delegated": []}
            for i in range(start, min(a.size, start + 2000)):
                ctr = centres[rng.randrange(len(centres))]
                v = [round(x + rng.gauss(0, 0.4), 5) for x in ctr]
                d = depts[rng.randrange(len(depts))]
                for name, acl in (("native", [d]), ("delegated", ["staff"])):
                    lines[name].append(json.dumps({"index": {"_index": name, "_id": f"c{i}"}}))
                    lines[name].append(json.dumps({"department": d, "emb": v,
                                                   "allowed_groups": acl}))
            for name in lines:
                st, out, _ = c.call("POST", "/_bulk",
                                    raw=("\n".join(lines[name]) + "\n").encode(),
                                    ctype="application/x-ndjson")
                assert st == 200 and not out["errors"], out
        print(f"loaded {a.size} chunks into each index in {time.time() - t0:.0f} s",
              file=sys.stderr)
        queries = []
        for _ in range(a.queries):
            ctr = centres[rng.randrange(len(centres))]
            queries.append(([x + rng.gauss(0, 0.4) for x in ctr], depts[rng.randrange(
                len(depts))]))
        lat = {"native": [], "delegated": [], "cold": []}
        recall = {"native": [], "delegated": []}
        same, seen = 0, set()
        for rnd in range(2):  # the first round warms both; the second is timed
            for q, d in queries:
                exact = {}
                for name in ("native", "delegated"):
                    body = {"subject": "u-" + d, "query": {"vector": q}, "k": 10,
                            "mode": "vector"}
                    st, out, dt = c.call("POST", f"/v1/collections/{name}/retrieve", body)
                    assert st == 200, out
                    if name == "delegated" and d not in seen:
                        assert out["authorizer"]["cached"] is False, out["authorizer"]
                        seen.add(d)
                        lat["cold"].append(dt)
                    elif rnd == 1:
                        lat[name].append(dt)
                    auto = [h["id"] for h in out["hits"]]
                    st, out, _ = c.call("POST", f"/v1/collections/{name}/retrieve",
                                        dict(body, strategy="exact"))
                    assert st == 200, out
                    exact[name] = [h["id"] for h in out["hits"]]
                    if rnd == 1:
                        recall[name].append(len(set(auto) & set(exact[name])) /
                                            max(1, len(exact[name])))
                if rnd == 1:
                    same += exact["native"] == exact["delegated"]
        res = {"size": a.size, "dim": a.dim, "departments": a.departments,
               "queries": a.queries,
               "native": {"recall": statistics.mean(recall["native"]),
                          "p50_ms": 1e3 * pct(lat["native"], 0.5),
                          "p95_ms": 1e3 * pct(lat["native"], 0.95)},
               "delegated": {"recall": statistics.mean(recall["delegated"]),
                             "p50_ms": 1e3 * pct(lat["delegated"], 0.5),
                             "p95_ms": 1e3 * pct(lat["delegated"], 0.95),
                             "cold_p50_ms": 1e3 * pct(lat["cold"], 0.5)},
               "exact_equal": same / len(queries)}
        res["p50_ratio"] = res["delegated"]["p50_ms"] / res["native"]["p50_ms"]
        print(f"| index | recall@10 (auto vs exact) | p50 ms | p95 ms |\n|---|---|---|---|")
        for name in ("native", "delegated"):
            r = res[name]
            print(f"| {name} | {r['recall']:.4f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} |")
        print(f"\ndelegated/native p50: {res['p50_ratio']:.2f}; first question of a reader "
              f"(to Cerbos): p50 {res['delegated']['cold_p50_ms']:.2f} ms; exact answers "
              f"equal on {100 * res['exact_equal']:.1f}% of queries")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
        if res["exact_equal"] < 1:
            sys.exit("authorizer.py: the delegated index's exact answers differ from native")
    finally:
        server.terminate()
        server.wait(timeout=120)
        cerbos.terminate()
        cerbos.wait(timeout=30)
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""peers.py: hnswlib and FAISS on the same vectors, queries, permissions and ground truth as
`cordon bench permissions --dump DIR`: unfiltered QPS at recall@10 >= 0.99 (sweeping ef), and
filtered search at every layout and share readable (FAISS: IDSelectorBitmap inside the HNSW
traversal; hnswlib: Debian's 0.6.1 has no filter callback, so post-filtering with a widening pool
up to 1,000 candidates, as cordon's `postfilter`). One query at a time, one search thread.
Relies on Debian python3-numpy, python3-hnswlib, python3-faiss (run with /usr/bin/python3)."""
import argparse
import json
import os
import sys
import time

import numpy as np

try:
    import faiss
    import hnswlib
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.exit(f"peers.py: {e}; install python3-faiss and python3-hnswlib (scripts/deps.sh) and "
             "run with /usr/bin/python3")

K = 10
EF_SWEEP = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
FILTER_EF = [16, 64, 256, 1024]
MAX_CANDIDATES = 1000


def read_fvecs(path):
    raw = np.fromfile(path, dtype=np.int32)
    dim = int(raw[0])
    return raw.reshape(-1, dim + 1)[:, 1:].view(np.float32).copy()


class Dump:
    """The benchmark's dump: vectors, teams, subjects, ground truth (see perm_out.c)."""

    def __init__(self, d, nq):
        with open(os.path.join(d, "meta.json")) as f:
            self.meta = json.load(f)
        m = self.meta
        self.base = read_fvecs(os.path.join(d, "base.fvecs"))
        self.queries = read_fvecs(os.path.join(d, "queries.fvecs"))
        self.nq_all = m["nq"]
        self.nq = min(nq or m["nq"], m["nq"])
        self.teams = [np.fromfile(os.path.join(d, "team_random.u16"), dtype=np.uint16),
                      np.fromfile(os.path.join(d, "team_topical.u16"), dtype=np.uint16)]
        nl, ns = len(m["layouts"]), len(m["shares"])
        self.held = np.fromfile(os.path.join(d, "held.u16"), dtype=np.uint16).reshape(
            nl, self.nq_all, ns, m["max_held"])
        self.truth_ids = np.fromfile(os.path.join(d, "truth_ids.i32"), dtype=np.int32).reshape(
            nl, ns, self.nq_all, K)
        self.truth_dist = np.fromfile(os.path.join(d, "truth_dist.f32"),
                                      dtype=np.float32).reshape(nl, ns, self.nq_all, K)
        self.l2 = m["metric"] == "l2"

    def readable(self, layout, share, q):
        """Boolean mask of the chunks subject (layout, share, q) may read."""
        m = self.meta
        team = self.teams[0 if layout == 0 else 1].astype(np.int64)
        flags = np.zeros(m["teams"] + m["depts"] + m["divs"], dtype=bool)
        flags[self.held[layout, q, share, :m["shares"][share]["count"]]] = True
        return (flags[team] | flags[m["teams"] + team // 10]
                | flags[m["teams"] + m["depts"] + team // 100])

    def dist(self, q, ids):
        v = self.base[ids]
        qv = self.queries[q]
        if self.l2:
            return ((v - qv) ** 2).sum(axis=1)
        return 1.0 - v @ qv

    def recall(self, layout, share, q, ids):
        """Tie-aware recall@10, as the C benchmark: a hit counts when no farther than the k-th."""
        t = self.truth_ids[layout, share, q]
        n = int((t >= 0).sum())
        if n == 0:
            return 1.0
        ids = np.asarray([i for i in ids if i >= 0], dtype=np.int64)
        if len(ids) == 0:
            return 0.0
        kth = self.truth_dist[layout, share, q, n - 1]
        good = int((self.dist(q, ids) <= kth + 1e-4 * abs(kth) + 1e-5).sum())
        return min(good, n) / n


def timed(fn, qs):
    lat = []
    out = []
    for q in qs:
        t0 = time.perf_counter()
        out.append(fn(q))
        lat.append((time.perf_counter() - t0) * 1e3)
    lat = np.array(lat)
    return out, float(len(qs) / (lat.sum() / 1e3)), float(np.percentile(lat, 50)), \
        float(np.percentile(lat, 95))


def build(dump, m, efc, threads):
    n, dim = dump.base.shape
    t0 = time.perf_counter()
    hn = hnswlib.Index(space="l2" if dump.l2 else "ip", dim=dim)
    hn.init_index(max_elements=n, M=m, ef_construction=efc, random_seed=42)
    hn.add_items(dump.base, np.arange(n), num_threads=threads)
    t_hn = time.perf_counter() - t0
    faiss.omp_set_num_threads(threads)
    t0 = time.perf_counter()
    fa = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_L2 if dump.l2 else faiss.METRIC_INNER_PRODUCT)
    fa.hnsw.efConstruction = efc
    fa.add(dump.base)
    t_fa = time.perf_counter() - t0
    faiss.omp_set_num_threads(1)
    return hn, fa, {"hnswlib": t_hn, "faiss": t_fa}


def unfiltered(dump, hn, fa):
    rows = []
    qs = range(dump.nq)
    for lib in ("hnswlib", "faiss"):
        for ef in EF_SWEEP:
            if lib == "hnswlib":
                hn.set_ef(max(ef, K))
                fn = lambda q: hn.knn_query(dump.queries[q:q + 1], k=K, num_threads=1)[0][0]
            else:
                fa.hnsw.efSearch = ef
                fn = lambda q: fa.search(dump.queries[q:q + 1], K)[1][0]
            out, qps, p50, p95 = timed(fn, qs)
            rec = float(np.mean([dump.recall(0, 4, q, ids) for q, ids in zip(qs, out)]))
            rows.append({"lib": lib, "ef": ef, "recall_at_10": rec, "qps": qps, "p50_ms": p50,
                         "p95_ms": p95})
            if rec >= 0.999:
                break
    return rows


def hnswlib_postfilter(dump, hn, mask, q, ef):
    """Widens the pool 10, 40, 160, 640, 1000 until ten readable hits survive the filter."""
    pool = K
    while True:
        hn.set_ef(max(ef, pool))
        ids = hn.knn_query(dump.queries[q:q + 1], k=pool, num_threads=1)[0][0]
        keep = [int(i) for i in ids if mask[i]][:K]
        if len(keep) >= K or pool >= min(MAX_CANDIDATES, len(mask)):
            return keep
        pool = min(pool * 4, MAX_CANDIDATES, len(mask))


def filtered(dump, hn, fa):
    rows = []
    qs = list(range(dump.nq))
    n = dump.base.shape[0]
    for layout, lname in enumerate(dump.meta["layouts"]):
        for share, sh in enumerate(dump.meta["shares"]):
            masks = [dump.readable(layout, share, q) for q in qs]
            sels = [np.packbits(mk, bitorder="little") for mk in masks]
            keep = [faiss.IDSelectorBitmap(n, faiss.swig_ptr(b)) for b in sels]
            for lib in ("faiss", "hnswlib"):
                for ef in FILTER_EF:
                    if lib == "faiss":
                        # FAISS 1.7.3 ignores SearchParametersHNSW.efSearch (measured): the
                        # index's own efSearch is what the traversal uses.
                        fa.hnsw.efSearch = ef

                        def fn(q, ef=ef):
                            p = faiss.SearchParametersHNSW()
                            p.sel = keep[q]
                            p.efSearch = ef
                            return fa.search(dump.queries[q:q + 1], K, params=p)[1][0]
                    else:
                        def fn(q, ef=ef):
                            return hnswlib_postfilter(dump, hn, masks[q], q, ef)
                    out, qps, p50, p95 = timed(fn, qs)
                    rec = float(np.mean([dump.recall(layout, share, q, ids)
                                         for q, ids in zip(qs, out)]))
                    leaks = int(sum(1 for q, ids in zip(qs, out) for i in ids
                                    if i >= 0 and not masks[q][i]))
                    rows.append({"lib": lib, "layout": lname, "readable": sh["readable"],
                                 "ef": ef, "recall_at_10": rec, "qps": qps, "p50_ms": p50,
                                 "p95_ms": p95, "leaks": leaks})
                    print(f"  {lib:8} {lname:10} {sh['readable'] * 100:6.1f}% ef={ef:5} "
                          f"recall {rec:.4f} qps {qps:9.1f} p50 {p50:8.3f} ms", flush=True)
                    if rec >= 0.99:
                        break
    return rows


def first_at(rows, target=0.99):
    """The first row of a sweep reaching the target recall, or None."""
    for r in rows:
        if r["recall_at_10"] >= target:
            return r
    return None


def compare(cordon, un, fi):
    """Prints cordon's figures beside the peers' as ratios of median latency (peer p50 / cordon
    p50, so > 1 means cordon is faster): medians, because the shared machine's stalls land in
    the means."""
    out = {"unfiltered": {}, "filtered": []}
    print("\nratios, peer p50 / cordon p50 (one query at a time; > 1: cordon faster):")
    c = first_at(cordon.get("unfiltered", []))
    for lib in ("hnswlib", "faiss"):
        p = first_at([r for r in un if r["lib"] == lib])
        if c and p:
            out["unfiltered"][lib] = {"cordon_ef": c["ef"], "cordon_p50_ms": c["p50_ms"],
                                      "cordon_qps": c["qps"], "peer_ef": p["ef"],
                                      "peer_p50_ms": p["p50_ms"], "peer_qps": p["qps"],
                                      "ratio": p["p50_ms"] / c["p50_ms"]}
            print(f"unfiltered at recall >= 0.99: cordon ef={c['ef']} p50 {c['p50_ms']:.3f} ms, "
                  f"{lib} ef={p['ef']} p50 {p['p50_ms']:.3f} ms: x{p['p50_ms'] / c['p50_ms']:.2f}")
    print(f"{'layout':10} {'share':>7} {'auto rec':>8} {'auto p50':>9} {'faiss rec':>9} "
          f"{'faiss p50':>9} {'x faiss':>8} {'hnsw rec':>8} {'hnsw p50':>9} {'x hnsw':>7}")
    for r in cordon["rows"]:
        if r["strategy"] != "auto":
            continue
        row = {"layout": r["layout"], "readable": r["readable"], "auto_recall": r["recall_at_10"],
               "auto_p50_ms": r["p50_ms"]}
        line = (f"{r['layout']:10} {r['readable'] * 100:6.1f}% {r['recall_at_10']:8.4f} "
                f"{r['p50_ms']:9.3f}")
        for lib in ("faiss", "hnswlib"):
            sweep = [x for x in fi if x["lib"] == lib and x["layout"] == r["layout"]
                     and x["readable"] == r["readable"]]
            if not sweep:
                line += f" {'-':>9} {'-':>9} {'-':>8}"
                continue
            p = first_at(sweep) or sweep[-1]
            ok = p["recall_at_10"] >= 0.99
            ratio = p["p50_ms"] / r["p50_ms"] if r["p50_ms"] else 0
            row[lib] = {"ef": p["ef"], "recall": p["recall_at_10"], "p50_ms": p["p50_ms"],
                        "reached_099": ok, "ratio": ratio}
            line += (f" {p['recall_at_10']:9.4f} {p['p50_ms']:9.3f} "
                     f"{('x%.1f' % ratio) if ok else 'n/a':>8}")
        out["filtered"].append(row)
        print(line)
    print("(n/a: the peer never reached recall 0.99 at any ef tried; its best is shown)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump", help="directory written by cordon bench permissions --dump")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--queries", type=int, default=0, help="use the first N queries (0 = all)")
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--efc", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2, help="build threads")
    ap.add_argument("--cordon", help="cordon bench permissions JSON of the same dump: ratios")
    ap.add_argument("--from-json", help="skip the runs: print ratios from this earlier --json")
    a = ap.parse_args()
    if a.from_json:
        with open(a.from_json) as f:
            res = json.load(f)
        with open(a.cordon) as f:
            res["ratios"] = compare(json.load(f), res["unfiltered"], res["filtered"])
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
        return
    dump = Dump(a.dump, a.queries)
    print(f"peers on {dump.meta['corpus']}: {dump.base.shape[0]} x {dump.base.shape[1]} "
          f"({dump.meta['metric']}), {dump.nq} queries; hnswlib {hnswlib.__name__}, "
          f"faiss {faiss.__version__}", flush=True)
    hn, fa, build_s = build(dump, a.m, a.efc, a.threads)
    print(f"build: hnswlib {build_s['hnswlib']:.1f} s, faiss {build_s['faiss']:.1f} s",
          flush=True)
    un = unfiltered(dump, hn, fa)
    print("\nunfiltered (one query at a time):")
    print(f"{'lib':8} {'ef':>5} {'recall':>7} {'qps':>9} {'p50 ms':>8}")
    for r in un:
        print(f"{r['lib']:8} {r['ef']:5} {r['recall_at_10']:7.4f} {r['qps']:9.1f} "
              f"{r['p50_ms']:8.3f}")
    print("\nfiltered:", flush=True)
    fi = filtered(dump, hn, fa)
    res = {"corpus": dump.meta["corpus"], "n": int(dump.base.shape[0]),
           "dim": int(dump.base.shape[1]), "metric": dump.meta["metric"], "queries": dump.nq,
           "m": a.m, "efc": a.efc, "build_s": build_s, "faiss_version": faiss.__version__,
           "hnswlib_filter": "postfilter (Debian hnswlib 0.6.1 has no filter callback)",
           "unfiltered": un, "filtered": fi}
    if a.cordon:
        with open(a.cordon) as f:
            res["ratios"] = compare(json.load(f), un, fi)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()

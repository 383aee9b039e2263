#!/usr/bin/python3
"""far_study.py: why subjects whose readable rows lie far from their question are costly, and
which first pass could make their scan cheaper. Reads a `cordon bench permissions --dump DIR`
directory and prints, for every layout and share (100 subjects each):

  rank10   where the 10th readable answer ranks among ALL rows (how deep a neighbourhood search
           has to go before ten readable rows turn up);
  ivf      readable rows an inverted-file scan must score, clusters taken nearest first
           (spherical k-means, n/256 clusters), to hold the whole readable top-10;
  part128  rows to re-score when rows are ranked by their first 128 dimensions only;
  bit1     rows to re-score when rows are ranked by 1-bit codes of randomly rotated vectors
           (sign of each rotated coordinate; inner product estimated as <code, q> / <code, x>);
  bit128   the same with the first 128 rotated coordinates only (a code of 16 bytes, four rows
           to a cache line: a first pass that would read fewer lines than one a row);
  pca128   signs of the first 128 principal components (centred rows), ranked by <code, q>.

Each column gives p50 / p90 / p99 over the subjects. Relies on Debian python3-numpy and
python3-faiss (k-means); run with /usr/bin/python3:

    ./build/release/cordon bench permissions --corpus generated --size 200000 --dim 384 \\
        --int8-scan --dump /tmp/p200k
    /usr/bin/python3 bench/peers/far_study.py /tmp/p200k
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import Dump  # noqa: E402

K = 10


def depth(order_dist, kth):
    """Rows of an ordering to take before it holds K rows no farther than the k-th answer."""
    good = np.nonzero(order_dist <= kth + 1e-4 * abs(kth) + 1e-5)[0]
    return int(good[K - 1] + 1) if len(good) >= K else len(order_dist)


def pct(a):
    p = np.percentile(a, [50, 90, 99])
    return f"{p[0]:.0f} / {p[1]:.0f} / {p[2]:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dump")
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    d = Dump(args.dump, args.queries)
    if d.l2:
        sys.exit("far_study.py: written for cosine dumps (the generated corpora)")
    x = d.base
    n, dim = x.shape
    rng = np.random.default_rng(7)
    import faiss
    km = faiss.Kmeans(dim, max(16, n // 256), niter=10, seed=1, spherical=True, verbose=False)
    km.train(x)
    cent = km.centroids
    home = np.concatenate([np.argmax(x[s:s + 50000] @ cent.T, axis=1)
                           for s in range(0, n, 50000)])
    rot = np.linalg.qr(rng.standard_normal((dim, dim)))[0].astype(np.float32)
    y = x @ rot
    codes = np.where(y > 0, 1.0, -1.0).astype(np.float32) / np.sqrt(dim)
    code_dot_x = (codes * y).sum(axis=1)  # <code, x>: unit rows, so x's own norm is 1
    mu = x.mean(axis=0)
    _, vecs = np.linalg.eigh(np.cov((x[::4] - mu).T))
    pca = vecs[:, ::-1][:, :128].astype(np.float32)
    pcodes = np.where((x - mu) @ pca > 0, 1.0, -1.0).astype(np.float32)
    print(f"{'layout':10s} {'share':>6s} {'readable':>8s}  {'rank10':>18s}  {'ivf':>20s}  "
          f"{'part128':>20s}  {'bit1':>18s}  {'bit128':>20s}  {'pca128':>20s}")
    for li, lname in enumerate(d.meta["layouts"]):
        for si, sh in enumerate(d.meta["shares"]):
            if sh["readable"] >= 1.0 and li > 0:
                continue
            r10, ivf, part, bit, b128, p128 = [], [], [], [], [], []
            for q in range(d.nq):
                ids = np.nonzero(d.readable(li, si, q))[0]
                qv = d.queries[q]
                kth = d.truth_dist[li, si, q, K - 1]
                true = 1.0 - x[ids] @ qv
                r10.append(int((1.0 - x @ qv < kth - 1e-6).sum()))
                rank = np.empty(len(cent), dtype=np.int64)
                rank[np.argsort(-(cent @ qv))] = np.arange(len(cent))
                ivf.append(depth(true[np.argsort(rank[home[ids]], kind="stable")], kth))
                part.append(depth(true[np.argsort(-(x[ids, :128] @ qv[:128]))], kth))
                est = (codes[ids] @ (qv @ rot)) / code_dot_x[ids]
                bit.append(depth(true[np.argsort(-est)], kth))
                est = codes[ids, :128] @ (qv @ rot)[:128]
                b128.append(depth(true[np.argsort(-est, kind="stable")], kth))
                est = pcodes[ids] @ ((qv - mu) @ pca)
                p128.append(depth(true[np.argsort(-est, kind="stable")], kth))
            print(f"{lname:10s} {sh['readable']:6.3f} {len(ids):8d}  {pct(r10):>18s}  "
                  f"{pct(ivf):>20s}  {pct(part):>20s}  {pct(bit):>18s}  {pct(b128):>20s}  "
                  f"{pct(p128):>20s}", flush=True)


if __name__ == "__main__":
    main()

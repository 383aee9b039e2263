#!/usr/bin/python3
"""topics_hnswlib.py: hnswlib's recall@10 on rows drawn from the distribution of cordon's "topics"
generator (bench/bench_gen.c: 64 topics x 16 subtopics, rank-64 topic term scaled 2/sqrt(r),
0.2 isotropic noise, unit length), with numpy's generator: the same distribution, not the same
rows. The first 100 rows are held out as queries; truth by brute force. Answers whether a low
recall at a given ef comes from the data or from cordon's graph, and times hnswlib's queries one
at a time (p50, QPS) beside cordon's unfiltered sweep on its own draw.
Usage: /usr/bin/python3 bench/peers/topics_hnswlib.py [N]   (default 1000000; about 30 min at 1M
on two shared cores). Relies on Debian python3-numpy and python3-hnswlib."""
import sys
import time

import hnswlib
import numpy as np


def topics(rng, n, d=384, n_topics=64, n_sub=16, rank=64):
    ct = rng.standard_normal((n_topics, d), dtype=np.float32)
    cs = ct[:, None, :] + 0.6 * rng.standard_normal((n_topics, n_sub, d), dtype=np.float32)
    basis = rng.standard_normal((n_topics, rank, d), dtype=np.float32)
    scale = (2.0 / np.sqrt(np.arange(1, rank + 1))).astype(np.float32)
    t = rng.integers(0, n_topics, n)
    s = rng.integers(0, n_sub, n)
    x = cs[t, s] + 0.2 * rng.standard_normal((n, d), dtype=np.float32)
    for tt in range(n_topics):
        m = t == tt
        x[m] += (rng.standard_normal((m.sum(), rank), dtype=np.float32) * scale) @ basis[tt]
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    x = topics(np.random.default_rng(7), n + 100)
    q, x = x[:100].copy(), x[100:]
    truth = np.argsort(-(q @ x.T), axis=1)[:, :10]
    index = hnswlib.Index(space="ip", dim=x.shape[1])
    index.init_index(max_elements=len(x), M=16, ef_construction=200, random_seed=1)
    index.set_num_threads(2)
    t0 = time.time()
    index.add_items(x, np.arange(len(x)))
    print(f"n={len(x)} hnswlib build {time.time() - t0:.1f} s", flush=True)
    index.set_num_threads(1)
    for ef in (64, 128, 192, 256, 384, 512):
        index.set_ef(ef)
        labels = np.zeros((len(q), 10), dtype=np.int64)
        lat = []
        for i in range(len(q)):  # one query at a time, as cordon's sweep runs them
            t0 = time.perf_counter()
            labels[i], _ = index.knn_query(q[i : i + 1], k=10)
            lat.append((time.perf_counter() - t0) * 1e3)
        rec = np.mean([len(np.intersect1d(labels[i], truth[i])) / 10 for i in range(len(q))])
        print(f"ef {ef}: recall@10 {rec:.4f} p50 {np.median(lat):.3f} ms "
              f"qps {1e3 / np.mean(lat):.1f}", flush=True)


if __name__ == "__main__":
    main()

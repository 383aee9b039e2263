#!/usr/bin/python3
"""plot.py: recall@10 and p50 latency against the share readable, one PNG per corpus: cordon's
strategies (from `cordon bench permissions --json-out`) beside the peers (from peers.py --json).
For each peer, layout and share the point is the first ef of its sweep that reached recall 0.99,
or its largest ef when none did. Relies on Debian python3-matplotlib (run with /usr/bin/python3).
Usage: plot.py --cordon C.json [--cordon C2.json ...] [--peers P.json] --out docs/perm-NAME.png
(a later --cordon file's rows replace an earlier one's for the same layout, share and strategy)."""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"auto": ("tab:blue", "o", "-"), "prefilter": ("tab:cyan", "s", "-"),
         "postfilter": ("tab:purple", "^", "-"), "naive": ("tab:gray", "x", ":"),
         "faiss": ("tab:red", "D", "--"), "hnswlib": ("tab:orange", "v", "--")}


def peer_points(peers):
    """(lib, layout) -> sorted [(share, recall, p50)] at the chosen ef."""
    last = {}
    for r in peers.get("filtered", []):
        last[(r["lib"], r["layout"], r["readable"])] = r  # sweeps stop at the first >= 0.99
    out = {}
    for (lib, layout, share), r in last.items():
        out.setdefault((lib, layout), []).append((share, r["recall_at_10"], r["p50_ms"]))
    return {k: sorted(v) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cordon", required=True, action="append")
    ap.add_argument("--peers")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cd, merged = None, {}
    for path in a.cordon:
        with open(path) as f:
            doc = json.load(f)
        cd = cd or doc
        for r in doc["rows"]:
            merged[(r["layout"], r["readable"], r["strategy"])] = r
    cd["rows"] = list(merged.values())
    peers = {}
    if a.peers:
        with open(a.peers) as f:
            peers = peer_points(json.load(f))
    layouts = ["random", "aligned", "misaligned"]
    fig, ax = plt.subplots(2, 3, figsize=(15, 8), sharex=True)
    for j, layout in enumerate(layouts):
        for strat in ("auto", "prefilter", "postfilter", "naive"):
            pts = sorted((r["readable"], r["recall_at_10"], r["p50_ms"]) for r in cd["rows"]
                         if r["layout"] == layout and r["strategy"] == strat)
            if not pts:
                continue
            c, m, ls = STYLE[strat]
            ax[0][j].plot([p[0] for p in pts], [p[1] for p in pts], color=c, marker=m,
                          linestyle=ls, label=f"cordon {strat}")
            ax[1][j].plot([p[0] for p in pts], [p[2] for p in pts], color=c, marker=m,
                          linestyle=ls, label=f"cordon {strat}")
        for lib in ("faiss", "hnswlib"):
            pts = peers.get((lib, layout))
            if not pts:
                continue
            c, m, ls = STYLE[lib]
            name = "FAISS IDSelector" if lib == "faiss" else "hnswlib postfilter"
            ax[0][j].plot([p[0] for p in pts], [p[1] for p in pts], color=c, marker=m,
                          linestyle=ls, label=name)
            ax[1][j].plot([p[0] for p in pts], [p[2] for p in pts], color=c, marker=m,
                          linestyle=ls, label=name)
        ax[0][j].set_title(f"{cd['corpus']}: {layout}")
        ax[0][j].set_ylim(-0.02, 1.02)
        ax[0][j].axhline(0.99, color="k", linewidth=0.5)
        ax[1][j].set_yscale("log")
        ax[1][j].set_xscale("log")
        ax[1][j].set_xlabel("share readable")
    ax[0][0].set_ylabel("recall@10")
    ax[1][0].set_ylabel("p50 ms per query (log)")
    ax[0][0].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"cordon bench permissions: {cd['corpus']} ({cd['size']} x {cd['dim']}, "
                 f"{cd['queries']} queries, one at a time)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=80)


if __name__ == "__main__":
    main()

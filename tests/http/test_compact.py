"""cordon serve compacts on its own: a collection whose dead rows (left by replaced and deleted
documents) pass compact_dead_percent and compact_min_dead_rows is compacted at the next check,
with every answer the same and nothing leaked before, during or after; bad values of the keys
stop the server at start."""
import glob
import json
import os
import random
import subprocess
import time

from wire import ROOT, Server, people_model

GROUPS = {"alice": {"eng"}, "bob": {"hr"}, "dave": set()}


def docs_for(rng, lo, hi, tag):
    out = {}
    for i in range(lo, hi):
        out[str(i)] = {"title": "report %d %s %s" % (i, "fox" if i % 3 == 0 else "dog", tag),
                       "emb": [rng.uniform(-1, 1) for _ in range(8)],
                       "allowed_groups": rng.choice([["eng"], ["hr"], ["eng", "hr"], []])}
    return out


def bulk(s, docs):
    lines = []
    for i, d in sorted(docs.items()):
        lines.append('{"index":{"_index":"docs","_id":"%s"}}' % i)
        lines.append(json.dumps(d))
    st, _, b = s.request("POST", "/_bulk?refresh=true", raw=("\n".join(lines) + "\n").encode(),
                         headers={"Content-Type": "application/x-ndjson"})
    assert st == 200 and not b["errors"], b


def answers(s, keys, docs):
    out = []
    for who, (_, _, auth) in sorted(keys.items()):
        for body in ({"query": {"match": {"title": "fox"}}, "size": 200},
                     {"knn": {"field": "emb", "query_vector": [0.1] * 8, "k": 10,
                              "num_candidates": 100}}):
            st, _, r = s.request("POST", "/docs/_search", body, key=auth)
            assert st == 200, r
            for h in r["hits"]["hits"]:
                assert set(docs[h["_id"]]["allowed_groups"]) & GROUPS[who], (who, h["_id"])
            out.append([(h["_id"], h["_score"]) for h in r["hits"]["hits"]])
    return out


def test_the_server_compacts_a_collection_with_enough_dead_rows(tmp_path):
    conf = tmp_path / "cordon.conf"
    conf.write_text("compact_check_s = 1\ncompact_min_dead_rows = 50\n"
                    "compact_dead_percent = 20\n")
    data = str(tmp_path / "data")
    s = Server(data, extra_args=("--config", str(conf)))
    try:
        people_model(s)
        keys = {who: s.key_for(who) for who in GROUPS}
        st, _, b = s.request("PUT", "/docs", {"mappings": {"properties": {
            "title": {"type": "text"},
            "emb": {"type": "dense_vector", "dims": 8, "similarity": "cosine"}}}})
        assert st == 200, b
        rng = random.Random(11)
        docs = docs_for(rng, 0, 300, "first")
        bulk(s, docs)
        time.sleep(1.5)  # a check passes: 300 rows, none dead, nothing to do
        assert not glob.glob(os.path.join(data, "coll-*-g1.vec"))
        again = docs_for(rng, 0, 100, "second")  # 100 of 400 rows dead: 25%
        docs.update(again)
        bulk(s, again)
        st, _, cat = s.request("GET", "/_cat/indices/docs?format=json")
        # the 100 rows left behind, until the compaction (which may have come already)
        assert st == 200 and cat[0]["docs.count"] == "300", cat
        assert cat[0]["docs.deleted"] in ("100", "0"), cat
        before = answers(s, keys, docs)
        # The new generation's files are written before the compaction commits: done is when
        # the dead rows are gone from what the server reports, not when a file appears.
        for _ in range(100):
            st, _, cat = s.request("GET", "/_cat/indices/docs?format=json")
            assert st == 200 and cat[0]["docs.count"] == "300", cat
            if cat[0]["docs.deleted"] == "0":
                break
            assert answers(s, keys, docs) == before
            time.sleep(0.2)
        assert cat[0]["docs.deleted"] == "0", ("no compaction within 20 s", cat)
        assert glob.glob(os.path.join(data, "coll-*-g1.vec"))
        assert answers(s, keys, docs) == before
    finally:
        assert s.stop() == 0, s.stderr
    assert 'compacted "docs": 400 rows -> 300' in s.stderr, s.stderr
    binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
    for bad in ("compact_dead_percent = 100", "compact_check_s = 0",
                "compact_min_dead_rows = 0"):
        conf.write_text(bad + "\n")
        p = subprocess.run([binary, "serve", "--data", data, "--config", str(conf)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2 and bad.split(" ")[0] in p.stderr, (bad, p.stderr)

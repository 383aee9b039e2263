"""kill -9 of cordon serve at random moments of a compaction (_forcemerge) of a collection with
many dead rows: after a restart the collection is exactly as before the compaction (its first
generation's files, every dead row) or exactly as after (the next generation's, the live rows
only), never in part; every answer is the same as before the compaction, no copy of the
database is left behind, and the collection compacts again.

CORDON_COMPACT_KILL_DOCS sets the documents (3,000 here: a compaction of a fraction of a
second; 100,000 make one of seconds, most of it spent copying the database file) and
CORDON_COMPACT_KILL_HTTP_TRIALS the kills (4 here). The counts are printed (pytest -s)."""
import json
import os
import random
import re
import shutil
import signal
import threading
import time

from wire import Server, people_model

DOCS = int(os.environ.get("CORDON_COMPACT_KILL_DOCS", "3000"))
TRIALS = int(os.environ.get("CORDON_COMPACT_KILL_HTTP_TRIALS", "4"))
DIMS = 32
NDJSON = {"Content-Type": "application/x-ndjson"}
ALICE = {"es-security-runas-user": "alice"}  # in eng
BOB = {"es-security-runas-user": "bob"}  # in hr


def doc(rng, i, version):
    return {"title": "note %d %s %s v%d" % (i, "fox" if i % 5 == 0 else "dog",
                                            "amber" if i % 7 == 0 else "slate", version),
            "v": version,
            "emb": [round(rng.uniform(-1, 1), 4) for _ in range(DIMS)],
            "allowed_groups": [["eng"], ["hr"], ["eng", "hr"]][i % 3]}


def bulk(s, lines):
    for at in range(0, len(lines), 2000):
        body = ("\n".join(json.dumps(x) for x in lines[at:at + 2000]) + "\n").encode()
        st, _, b = s.request("POST", "/_bulk", raw=body, headers=NDJSON)
        assert st == 200 and not b["errors"], b


def fill(s, rng):
    """DOCS documents, then 40% of them written again (new vectors, new rows) and 10% deleted:
    half as many dead rows as live ones. The live documents by id."""
    st, _, b = s.request("PUT", "/big", {"mappings": {"properties": {
        "title": {"type": "text"}, "v": {"type": "long"},
        "emb": {"type": "dense_vector", "dims": DIMS, "similarity": "cosine"}}}})
    assert st == 200, b
    live = {}
    lines = []
    for i in range(DOCS):
        live[str(i)] = doc(rng, i, 1)
        lines += [{"index": {"_index": "big", "_id": str(i)}}, live[str(i)]]
    bulk(s, lines)
    lines = []
    for i in rng.sample(range(DOCS), DOCS * 4 // 10):
        live[str(i)] = doc(rng, i, 2)
        lines += [{"index": {"_index": "big", "_id": str(i)}}, live[str(i)]]
    for i in rng.sample(range(DOCS), DOCS // 10):
        if str(i) in live:
            del live[str(i)]
            lines.append({"delete": {"_index": "big", "_id": str(i)}})
    bulk(s, lines)
    st, _, _ = s.request("POST", "/big/_refresh")
    assert st == 200
    return live


def answers(s, live):
    """What alice and bob are answered, every hit checked against the ACL it was written with."""
    groups = {"alice": "eng", "bob": "hr"}
    out = []
    for who, runas in (("alice", ALICE), ("bob", BOB)):
        for body in ({"query": {"match": {"title": "fox amber"}}, "size": 50},
                     {"knn": {"field": "emb", "query_vector": [0.05 * (j % 7) - 0.1
                                                               for j in range(DIMS)],
                              "k": 10, "num_candidates": 200}, "size": 10},
                     {"query": {"match_all": {}}, "size": 0, "track_total_hits": True}):
            st, _, r = s.request("POST", "/big/_search", body, headers=runas)
            assert st == 200, r
            for h in r["hits"]["hits"]:
                d = live.get(h["_id"])
                assert d is not None, (who, h["_id"])  # a deleted document answered
                assert groups[who] in d["allowed_groups"], (who, h["_id"])
                assert h["_source"]["v"] == d["v"], (who, h["_id"])  # an older version
            out.append((r["hits"]["total"]["value"],
                        [(h["_id"], round(h["_score"], 4)) for h in r["hits"]["hits"]]))
    return out


def generations(data):
    """The generations the collections' files on disk belong to."""
    gens = set()
    for name in os.listdir(data):
        m = re.match(r"coll-\d+(?:-g(\d+))?\.", name)
        if m:
            gens.add(int(m.group(1) or 0))
    return gens


def forcemerge_in_thread(s, done):
    def run():
        try:
            st, _, _ = s.request("POST", "/big/_forcemerge")
            done.append(st)
        except OSError:
            pass
    t = threading.Thread(target=run)
    t.start()
    return t


def test_kills_at_random_moments_of_a_compaction(tmp_path):
    rng = random.Random(20261205)
    template = str(tmp_path / "template")
    s = Server(template)
    people_model(s)
    live = fill(s, rng)
    before = answers(s, live)
    assert before[2][0] + before[5][0] == sum(len(d["allowed_groups"]) for d in live.values())
    assert s.stop() == 0, s.stderr
    gens0 = generations(template)
    assert gens0 == {0}, gens0

    # How long a compaction takes here, request included: the kills are spread over it.
    probe = str(tmp_path / "probe")
    shutil.copytree(template, probe)
    s = Server(probe)
    t0 = time.monotonic()
    st, _, b = s.request("POST", "/big/_forcemerge")
    span = time.monotonic() - t0
    assert st == 200, b
    assert answers(s, live) == before
    assert s.stop() == 0, s.stderr
    assert generations(probe) == {1}
    shutil.rmtree(probe)

    outcome = {"before": 0, "after": 0}
    killed = copying = 0
    for trial in range(TRIALS):
        data = str(tmp_path / ("t%d" % trial))
        shutil.copytree(template, data)
        s = Server(data)
        done = []
        t = forcemerge_in_thread(s, done)
        time.sleep(rng.uniform(0, span * 1.2))
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait()
        t.join()
        s.stop()
        killed += not done
        copying += os.path.exists(os.path.join(data, "data.mdb.compact"))
        s = Server(data)
        assert not os.path.exists(os.path.join(data, "data.mdb.compact")), trial
        gens = generations(data)
        assert gens in ({0}, {1}), (trial, gens)  # one generation's files: never in part
        assert not done or gens == {1}, trial  # an acknowledged compaction stands
        outcome["before" if gens == {0} else "after"] += 1
        assert answers(s, live) == before, trial
        st, _, b = s.request("POST", "/big/_forcemerge")  # and it compacts again
        assert st == 200, b
        assert answers(s, live) == before, trial
        assert s.stop() == 0, s.stderr
        assert generations(data) in ({1}, {2}), trial
        shutil.rmtree(data)
    print("compaction kills over HTTP: %d documents, a compaction %.3f s; %d trials, %d killed "
          "before the answer, %d while the database file was copied; %d found as before, %d as "
          "after" % (DOCS, span, TRIALS, killed, copying, outcome["before"], outcome["after"]))
    assert TRIALS == 0 or killed > 0 or span < 0.01

"""kill -9 of cordon serve in the middle of _bulk loads, model changes and compactions (of
acknowledged batches written again, unchanged): after a restart every acknowledged document and
model change is there and searchable, and a batch is there whole or not at all. CORDON_CRASH_TRIALS sets the number of trials (3 here); CORDON_CRASH_POINT_TRIALS the trials at
each chosen point inside the server's writes (chunk and model writes; 2 by default)."""
import json
import os
import random
import signal
import subprocess
import threading
import time

from wire import ROOT, Server, people_model

TRIALS = int(os.environ.get("CORDON_CRASH_TRIALS", "3"))
NDJSON = {"Content-Type": "application/x-ndjson"}


def batch(start, n):
    lines = []
    for i in range(start, start + n):
        lines += [{"index": {"_index": "c", "_id": str(i)}},
                  {"t": "word%d common" % (i % 7), "b": start, "allowed_groups": ["eng"]}]
    return ("\n".join(json.dumps(x) for x in lines) + "\n").encode()


def test_kill_during_bulk_and_model_writes(tmp_path):
    rng = random.Random(9)
    data = str(tmp_path / "data")
    s = Server(data)
    people_model(s)
    st, _, _ = s.request("PUT", "/c", {"mappings": {"properties": {
        "t": {"type": "text"}, "b": {"type": "long"}}}})
    assert st == 200
    acked_batches, acked_subjects, merges = [], [], []
    for trial in range(TRIALS):
        stop = threading.Event()
        next_start = [len(acked_batches) * 1000 + trial * 100000]

        def writer():
            while not stop.is_set():
                start = next_start[0]
                next_start[0] += 50
                try:
                    st, _, b = s.request("POST", "/_bulk", raw=batch(start, 50), headers=NDJSON)
                except OSError:
                    return
                if st == 200 and not b["errors"]:
                    acked_batches.append(start)

        def modeller():
            i = 0
            while not stop.is_set():
                sid = "t%d-%d" % (trial, i)
                try:
                    st, _, _ = s.request("PUT", "/v1/subjects/" + sid, {})
                except OSError:
                    return
                if st == 200:
                    acked_subjects.append(sid)
                i += 1

        def compactor():
            crng = random.Random(trial)
            while not stop.is_set():
                done = list(acked_batches)
                if not done:
                    time.sleep(0.01)
                    continue
                try:  # the same documents again: rows for the compaction to give back
                    s.request("POST", "/_bulk", raw=batch(crng.choice(done), 50), headers=NDJSON)
                    st, _, _ = s.request("POST", "/c/_forcemerge")
                except OSError:
                    return
                if st == 200:
                    merges.append(trial)

        threads = [threading.Thread(target=writer), threading.Thread(target=modeller),
                   threading.Thread(target=compactor)]
        for t in threads:
            t.start()
        time.sleep(0.3 + rng.random() * 0.7)
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait()
        stop.set()
        for t in threads:
            t.join()
        s = Server(data)
        # Every acknowledged batch whole, and no batch in part.
        for start in acked_batches:
            st, _, r = s.request("POST", "/c/_count", {"query": {"term": {"b": start}}},
                                 headers={"es-security-runas-user": "alice"})
            assert st == 200 and r["count"] == 50, (trial, start, r)
        st, _, r = s.request("POST", "/c/_search", {"size": 0, "track_total_hits": True,
                                                   "query": {"match": {"t": "common"}}},
                             headers={"es-security-runas-user": "alice"})
        total = r["hits"]["total"]["value"]
        assert total % 50 == 0 and total >= 50 * len(acked_batches), (total, len(acked_batches))
        st, _, m = s.request("GET", "/v1/model")
        have = {x["id"] for x in m["subjects"]}
        assert set(acked_subjects) <= have
    assert acked_batches and acked_subjects and merges  # the kills landed among them
    assert s.stop() == 0, s.stderr


POINT_TRIALS = int(os.environ.get("CORDON_CRASH_POINT_TRIALS", "2"))
ALICE = {"es-security-runas-user": "alice"}  # in eng
BOB = {"es-security-runas-user": "bob"}  # in hr


def vec(i):
    return [1.0, (i % 13) / 13.0, (i % 7) / 7.0, ((i * 7) % 11) / 11.0]


def vbatch(start, n, group):
    lines = []
    for i in range(start, start + n):
        lines += [{"index": {"_index": "v", "_id": "d%d" % i}},
                  {"t": "tok%d all" % start, "b": start, "emb": vec(i), "allowed_groups": [group]}]
    return ("\n".join(json.dumps(x) for x in lines) + "\n").encode()


def server_writes(s, rng, acked, inflight):
    """Writes through every route that writes chunks until the server dies: _bulk batches of
    vectors and text, single documents, ACL changes of a whole earlier batch, deletes of part of
    one, and compactions. acked gets each acknowledged write, inflight the one being sent."""
    n = len(acked)
    while True:
        r = rng.random()
        start = 100000 + 1000 * n
        try:
            if 0.45 <= r < 0.5 and acked:  # a compaction: rows renumbered, nothing changed
                st, _, b = s.request("POST", "/v/_forcemerge")
                assert st == 200, b
                continue
            if r < 0.5 or not acked:
                op = ("batch", start, 20, rng.choice(["eng", "hr"]))
                op += (tuple("d%d" % i for i in range(start, start + 20)),)
                inflight[:] = [op]
                st, _, b = s.request("POST", "/_bulk", raw=vbatch(start, 20, op[3]), headers=NDJSON)
                ok = st == 200 and not b["errors"]
            elif r < 0.65:
                op = ("doc", start, 1, rng.choice(["eng", "hr"]), ("d%d" % start,))
                inflight[:] = [op]
                st, _, b = s.request("PUT", "/v/_doc/d%d" % start, {
                    "t": "tok%d all" % start, "b": start, "emb": vec(start),
                    "allowed_groups": [op[3]]})
                ok = st in (200, 201)
            else:
                live = sorted(d for d, g in doc_state(acked).items() if g)
                if not live:
                    continue
                d = rng.choice(live)
                start = int(d[1:]) // 1000 * 1000
                if r < 0.85:  # every chunk of its batch to the group it is not in, in one write
                    size = sum(1 for x in live if int(x[1:]) // 1000 * 1000 == start)
                    group = "hr" if doc_state(acked)[d] == "eng" else "eng"
                    op = ("acl", start, 0, group)
                    changes = [{"id": x, "allowed": [group]} for x in live
                               if int(x[1:]) // 1000 * 1000 == start]
                    inflight[:] = [op + (tuple(c["id"] for c in changes),)]
                    st, _, b = s.request("PUT", "/v1/collections/v/acl", {"changes": changes})
                else:  # delete one chunk
                    op = ("delete", start, 0, d)
                    inflight[:] = [op + ((d,),)]
                    st, _, b = s.request("DELETE", "/v/_doc/" + d)
                ok = st == 200
                op = inflight[0]
        except OSError:
            return  # the server is gone: inflight holds what was being sent
        assert ok, (op, st, b)
        acked.append(op)
        inflight[:] = []
        n += 1


def doc_state(acked):
    """Each chunk's group, or None once deleted: the state the acknowledged writes leave."""
    state = {}
    for kind, _, _, group, ids in acked:
        for d in ids:
            state[d] = None if kind == "delete" else group
    return state


def expected(acked):
    """Per batch start: (readable by eng, readable by hr)."""
    out = {}
    for d, g in doc_state(acked).items():
        e, h = out.get(int(d[1:]) // 1000 * 1000, (0, 0))
        out[int(d[1:]) // 1000 * 1000] = (e + (g == "eng"), h + (g == "hr"))
    return out


def check_store(s, acked, inflight):
    """Every acknowledged write is there after the restart, the one in flight whole or not at
    all, and the indexes agree: a batch's token finds all of it as its group's reader and
    none of it as the other's, and each chunk's own vector finds it."""
    want, maybe = expected(acked), expected(acked + inflight)
    for start in set(want) | set(maybe):
        counts = []
        for hdr in (ALICE, BOB):
            st, _, r = s.request("POST", "/v/_count", {"query": {"match": {"t": "tok%d" % start}}},
                                 headers=hdr)
            assert st == 200, r
            counts.append(r["count"])
        assert tuple(counts) in {want.get(start, (0, 0)), maybe.get(start, (0, 0))}, (
            start, counts, want.get(start), maybe.get(start))
    state = doc_state(acked)
    settled = {d for op in inflight for d in op[4]}
    for d, g in sorted(state.items())[::7]:  # found by its own vector through the graph
        if g and d not in settled:
            st, _, r = s.request("POST", "/v/_search", {
                "knn": {"field": "emb", "query_vector": vec(int(d[1:])), "k": 50,
                        "num_candidates": 200}, "size": 50},
                headers=ALICE if g == "eng" else BOB)
            assert st == 200 and d in [h["_id"] for h in r["hits"]["hits"]], (d, r)


def test_kill_at_points_inside_server_writes(tmp_path):
    """cordon serve killed (CORDON_CRASH_AT) at the n-th pass of a point inside its writes: a
    batch's vectors written and not synced, a write committed and memory not yet told, a
    compaction's new files written and nothing committed, and (at the orderly stop's checkpoint
    of the graph, codes and text index, or a key file) a file written under its temporary name;
    then restarted: acknowledged writes all there, the one in
    flight whole or absent, the indexes agreeing with the store."""
    rng = random.Random(17)
    kills = 0
    for point in ("vectors_unsynced", "committed", "file_written", "compact_written"):
        data = str(tmp_path / point)
        s = Server(data)
        people_model(s)
        st, _, b = s.request("PUT", "/v", {"mappings": {"properties": {
            "t": {"type": "text"}, "b": {"type": "long"},
            "emb": {"type": "dense_vector", "dims": 4, "similarity": "cosine"}}}})
        assert st == 200, b
        assert s.stop() == 0, s.stderr
        acked, inflight = [], []
        for trial in range(POINT_TRIALS):
            n = rng.randint(1, 2) if point in ("file_written", "compact_written") else \
                rng.randint(2, 40)
            s = Server(data, env={"CORDON_CRASH_AT": "%s:%d" % (point, n)})
            if point == "file_written":  # writes, then the stop's checkpoints die mid-way
                for _ in range(3):
                    start = 100000 + 1000 * len(acked)
                    group = rng.choice(["eng", "hr"])
                    st, _, b = s.request("POST", "/_bulk", raw=vbatch(start, 20, group),
                                         headers=NDJSON)
                    assert st == 200 and not b["errors"], b
                    acked.append(("batch", start, 20, group,
                                  tuple("d%d" % i for i in range(start, start + 20))))
                s.proc.terminate()
            else:
                server_writes(s, rng, acked, inflight)
            rc = s.proc.wait(timeout=60)
            s.stderr = s.proc.stderr.read()
            assert rc == -signal.SIGKILL, (point, n, rc, s.stderr[-2000:])
            kills += 1
            s = Server(data)
            check_store(s, acked, inflight)
            if inflight:  # settle it: what the restart shows becomes the truth
                op = inflight[0]
                start = op[1]
                st, _, r = s.request("POST", "/v/_count",
                                     {"query": {"match": {"t": "tok%d" % start}}}, headers=ALICE)
                st, _, r2 = s.request("POST", "/v/_count",
                                      {"query": {"match": {"t": "tok%d" % start}}}, headers=BOB)
                if (r["count"], r2["count"]) == expected(acked + inflight).get(start, (0, 0)) \
                        and expected(acked).get(start) != expected(acked + inflight).get(start):
                    acked.append(op)
                inflight.clear()
            assert s.stop() == 0, s.stderr
    assert kills == 4 * POINT_TRIALS


def test_bad_crash_at_is_refused(tmp_path):
    """A CORDON_CRASH_AT that is not POINT:N stops the server at start with a message naming
    the variable and what it takes, and exit status 2."""
    binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
    for bad in ("committed", "committed:0", "committed:x", "nowhere:3", "file_written:2junk"):
        p = subprocess.run([binary, "serve", "--data", str(tmp_path / "d"), "--listen",
                            "127.0.0.1:0"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "CORDON_CRASH_AT": bad, "CORDON_ACCESS_LOG": "off"})
        assert p.returncode == 2, (bad, p.returncode, p.stderr)
        assert "CORDON_CRASH_AT takes POINT:N" in p.stderr and bad in p.stderr, p.stderr


def test_kill_at_points_inside_server_model_writes(tmp_path):
    """cordon serve killed (CORDON_CRASH_AT) inside a permission-model change, once installed in
    memory and nothing stored, once stored and not yet acknowledged; then restarted: every
    acknowledged change there (a batch of two ops: a subject and its membership), the one in
    flight whole or absent, and the history agreeing (is-authorized as of each acknowledged
    revision finds the subject)."""
    rng = random.Random(23)
    kills = 0
    for point in ("model_applied", "model_stored"):
        data = str(tmp_path / point)
        s = Server(data)
        people_model(s)
        assert s.stop() == 0, s.stderr
        acked = []  # (subject, revision)
        for trial in range(POINT_TRIALS):
            n = rng.randint(1, 30)
            s = Server(data, env={"CORDON_CRASH_AT": "%s:%d" % (point, n)})
            while True:
                sid = "m%d-%d" % (trial, len(acked))
                tried = sid
                try:
                    st, _, b = s.request("POST", "/_cordon/model", {"ops": [
                        {"op": "put_subject", "id": sid},
                        {"op": "add_member", "group": "eng", "member": sid}]})
                except OSError:
                    break
                if st != 200:
                    break
                acked.append((sid, b["revision"]))
            rc = s.proc.wait(timeout=60)
            s.stderr = s.proc.stderr.read()
            assert rc == -signal.SIGKILL, (point, n, rc, s.stderr[-2000:])
            kills += 1
            s = Server(data)
            st, _, m = s.request("GET", "/v1/model")
            assert st == 200, m
            subjects = {x["id"] for x in m["subjects"]}
            eng = {x["id"] for g in m["groups"] if g["id"] == "eng" for x in g["members"]}
            for sid, _ in acked:
                assert sid in subjects and sid in eng, (point, sid)
            assert (tried in subjects) == (tried in eng), (point, tried)  # whole or absent
            for sid, rev in (a for a in acked if a[1] is not None):  # as of its own revision
                st, _, d = s.request("POST", "/api/auth/is-authorized", {
                    "subject": sid, "revision": rev,
                    "permission": {"resource": "collection:c", "action": "search"}})
                assert st == 200 and d["data"]["reason"] != "SUBJECT_NOT_FOUND", \
                    (point, sid, rev, d)
            assert s.stop() == 0, s.stderr
            if tried in subjects:  # the change in flight landed: it is part of the truth now
                acked.append((tried, None))
    assert kills == 2 * POINT_TRIALS

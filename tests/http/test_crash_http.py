"""kill -9 of cordon serve in the middle of _bulk loads and model changes: after a restart every
acknowledged document and model change is there and searchable, and a batch is there whole or
not at all. CORDON_CRASH_TRIALS sets the number of trials (3 here)."""
import json
import os
import random
import signal
import threading
import time

from wire import Server, people_model

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
    acked_batches, acked_subjects = [], []
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

        threads = [threading.Thread(target=writer), threading.Thread(target=modeller)]
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
    assert acked_batches and acked_subjects  # the kills did land among acknowledged writes
    assert s.stop() == 0, s.stderr

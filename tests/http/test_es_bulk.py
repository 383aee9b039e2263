"""_bulk over the wire: valid items apply and each failed one is reported on its own; the write
queue answers 429 with Retry-After when full; dynamic mapping from a bulk's documents."""
import json
import threading

from wire import Server, people_model

RUN_AS = {"es-security-runas-user": "alice"}
NDJSON = {"Content-Type": "application/x-ndjson"}


def ndjson(*lines):
    return ("\n".join(json.dumps(x) for x in lines) + "\n").encode()


def test_bulk_mixed_items(server):
    people_model(server)
    st, _, b = server.request("PUT", "/b", {"mappings": {"properties": {
        "t": {"type": "text"}, "n": {"type": "integer"},
        "v": {"type": "dense_vector", "dims": 2}}}})
    assert st == 200, b
    raw = ndjson(
        {"index": {"_index": "b", "_id": "ok1"}}, {"t": "one", "n": 1, "v": [1, 0], "allowed_groups": ["eng"]},
        {"index": {"_index": "b", "_id": "badvec"}}, {"t": "two", "v": [1, 0, 0], "allowed_groups": ["eng"]},
        {"create": {"_index": "b", "_id": "ok1"}}, {"t": "dup", "v": [0, 1], "allowed_groups": ["eng"]},
        {"index": {"_index": "b", "_id": "badnum"}}, {"t": "x", "n": "lots", "v": [0, 1], "allowed_groups": ["eng"]},
        {"index": {"_index": "b", "_id": "ok2"}}, {"t": "three", "v": [0, 1], "allowed_groups": ["eng"]},
        {"delete": {"_index": "b", "_id": "never-was"}},
        {"update": {"_index": "b", "_id": "ok2"}}, {"doc": {"t": "three updated"}},
        {"update": {"_index": "b", "_id": "missing"}}, {"doc": {"t": "nope"}})
    st, _, b = server.request("POST", "/_bulk", raw=raw, headers=NDJSON)
    assert st == 200 and b["errors"] is True
    got = [(list(i)[0], i[list(i)[0]]["status"]) for i in b["items"]]
    assert got == [("index", 201), ("index", 400), ("create", 409), ("index", 400),
                   ("index", 201), ("delete", 404), ("update", 200), ("update", 404)]
    assert b["items"][1]["index"]["error"]["type"] == "mapper_parsing_exception"
    assert b["items"][2]["create"]["error"]["type"] == "version_conflict_engine_exception"
    st, _, c = server.request("POST", "/b/_count", {}, headers=RUN_AS)
    assert c["count"] == 2
    st, _, d = server.request("GET", "/b/_doc/ok2", headers=RUN_AS)
    assert d["_source"]["t"] == "three updated" and d["_source"]["v"] == [0.0, 1.0]
    st, _, d = server.request("GET", "/b/_doc/ok1", headers=RUN_AS)
    assert d["_source"]["t"] == "one"


def test_malformed_action_line_fails_whole_request(server):
    people_model(server)
    raw = ndjson({"index": {"_index": "m", "_id": "1"}}, {"t": "a", "allowed_groups": ["eng"]},
                 {"frobnicate": {"_index": "m"}}, {"t": "b"})
    st, _, b = server.request("POST", "/_bulk", raw=raw, headers=NDJSON)
    assert st == 400 and b["error"]["type"] == "illegal_argument_exception"
    st, _, b = server.request("GET", "/m")
    assert st == 404  # nothing was written, not even the index


def test_dynamic_mapping_from_bulk_is_filterable(server):
    people_model(server)
    raw = ndjson(*sum(([{"index": {"_index": "auto", "_id": str(i)}},
                        {"text": "doc %d" % i, "metadata": {"source": "s%d" % (i % 2), "page": i},
                         "allowed_groups": ["eng"]}] for i in range(10)), []))
    st, _, b = server.request("POST", "/_bulk", raw=raw, headers=NDJSON)
    assert st == 200 and not b["errors"], b
    st, _, m = server.request("GET", "/auto/_mapping")
    props = m["auto"]["mappings"]["properties"]
    assert props["text"]["type"] == "text"
    assert props["metadata"]["properties"]["page"]["type"] == "long"
    q = {"query": {"bool": {"filter": [{"term": {"metadata.source.keyword": "s1"}},
                                       {"range": {"metadata.page": {"gte": 5}}}]}}, "size": 20}
    st, _, r = server.request("POST", "/auto/_search", q, headers=RUN_AS)
    assert st == 200, r
    assert sorted(h["_id"] for h in r["hits"]["hits"]) == ["5", "7", "9"]
    st, _, r = server.request("POST", "/auto/_search", {"query": {"match": {"text": "doc"}}},
                              headers=RUN_AS)
    assert r["hits"]["total"]["value"] == 10


def test_write_queue_full_is_429(tmp_path):
    cfg = tmp_path / "s.conf"
    cfg.write_text("write_queue = 1\n")
    s = Server(str(tmp_path / "data"), extra_args=("--config", str(cfg)))
    try:
        people_model(s)
        st, _, _ = s.request("PUT", "/q", {"mappings": {"properties": {"t": {"type": "text"}}}})
        big = ndjson(*sum(([{"index": {"_index": "q", "_id": str(i)}},
                            {"t": "word " * 200, "allowed_groups": ["eng"]}]
                           for i in range(3000)), []))
        statuses, retry = [], []

        def one():
            st, h, _ = s.request("POST", "/_bulk", raw=big, headers=NDJSON)
            statuses.append(st)
            if st == 429:
                retry.append(h.get("Retry-After"))
        threads = [threading.Thread(target=one) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert 200 in statuses and set(statuses) <= {200, 429}, statuses
        assert 429 in statuses, statuses
        assert all(r == "1" for r in retry)
    finally:
        assert s.stop() == 0


def test_consecutive_deletes_are_one_write(server):
    people_model(server)
    st, _, b = server.request("PUT", "/d", {"mappings": {"properties": {"t": {"type": "text"}}}})
    assert st == 200, b
    raw = ndjson(*sum(([{"index": {"_index": "d", "_id": f"x{i}"}},
                        {"t": f"doc {i}", "allowed_groups": ["eng"]}] for i in range(10)), []))
    st, _, b = server.request("POST", "/_bulk?refresh=true", raw=raw, headers=NDJSON)
    assert st == 200 and not b["errors"], b
    # a key that may search but not write: every delete refused, nothing deleted
    _, _, dave = server.key_for("dave")
    st, _, b = server.request("POST", "/d/_bulk", key=dave, headers=NDJSON,
                              raw=ndjson({"delete": {"_id": "x0"}}, {"delete": {"_id": "x1"}}))
    assert st == 200 and b["errors"] is True
    assert [i["delete"]["status"] for i in b["items"]] == [403, 403]
    raw = ndjson({"delete": {"_index": "d", "_id": "x0"}},
                 {"delete": {"_index": "d", "_id": "x1"}},
                 {"delete": {"_index": "d", "_id": "missing"}},
                 {"delete": {"_index": "d", "_id": "x2"}},
                 {"index": {"_index": "d", "_id": "x3"}}, {"t": "again", "allowed_groups": ["eng"]},
                 {"delete": {"_index": "d", "_id": "x3"}},
                 {"delete": {"_index": "d", "_id": "x4"}},
                 {"delete": {"_index": "d", "_id": "x4"}},  # the same id again: a write of its own
                 {"delete": {"_index": "nope", "_id": "x5"}})
    st, _, b = server.request("POST", "/_bulk", raw=raw, headers=NDJSON)
    assert st == 200, b
    got = [(list(i)[0], i[list(i)[0]]["status"], i[list(i)[0]].get("result")) for i in b["items"]]
    assert got == [("delete", 200, "deleted"), ("delete", 200, "deleted"),
                   ("delete", 404, "not_found"), ("delete", 200, "deleted"),
                   ("index", 200, "updated"), ("delete", 200, "deleted"),
                   ("delete", 200, "deleted"), ("delete", 404, "not_found"),
                   ("delete", 404, None)], got
    assert b["errors"] is True  # the missing index; a not_found delete is no error
    assert b["items"][-1]["delete"]["error"]["type"] == "index_not_found_exception"
    seq = [i[list(i)[0]].get("_seq_no") for i in b["items"]]
    assert seq[0] == seq[1] == seq[2] == seq[3]  # the first four deletes: one write
    assert seq[4] < seq[5] == seq[6] <= seq[7]  # a delete of nothing writes nothing
    st, _, c = server.request("POST", "/d/_count", {}, headers=RUN_AS)
    assert c["count"] == 5
    for i in range(10):
        st, _, d = server.request("GET", f"/d/_doc/x{i}", headers=RUN_AS)
        assert d["found"] == (i >= 5), (i, d)


def test_interleaved_indices_write_in_batches_and_keep_each_index_in_order(server):
    """A body alternating two indices is written index by index (one write per run, not per
    item), each index's items in request order (an index, a delete and an index of one id end
    as the last says), and the answers stay in request order."""
    people_model(server)
    for name in ("p", "q"):
        st, _, b = server.request("PUT", f"/{name}", {"mappings": {"properties": {
            "t": {"type": "text"}}}})
        assert st == 200, b
    lines = []
    for i in range(40):
        for name in ("p", "q"):
            lines += [{"index": {"_index": name, "_id": f"{name}{i}"}},
                      {"t": f"{name} doc {i}", "allowed_groups": ["eng"]}]
    lines += [{"index": {"_index": "p", "_id": "same"}}, {"t": "first", "allowed_groups": ["eng"]},
              {"delete": {"_index": "q", "_id": "q0"}},
              {"delete": {"_index": "p", "_id": "same"}},
              {"index": {"_index": "q", "_id": "q0"}}, {"t": "back", "allowed_groups": ["eng"]},
              {"index": {"_index": "p", "_id": "same"}}, {"t": "last", "allowed_groups": ["eng"]}]
    st, _, b = server.request("POST", "/_bulk", raw=ndjson(*lines), headers=NDJSON)
    assert st == 200 and not b["errors"], b
    items = [i[list(i)[0]] for i in b["items"]]
    want = [f"{n}{i}" for i in range(40) for n in ("p", "q")] + ["same", "q0", "same", "q0",
                                                                 "same"]
    assert [x["_id"] for x in items] == want
    assert [x["_index"] for x in items[:80]] == ["p", "q"] * 40
    # the 40 documents of each index went in as one write: one revision each
    assert len({x["_seq_no"] for x in items[0:80:2]}) == 1
    assert len({x["_seq_no"] for x in items[1:80:2]}) == 1
    assert [x["result"] for x in items[80:]] == ["created", "deleted", "deleted", "created",
                                                 "created"]
    for name, n in (("p", 41), ("q", 40)):
        st, _, c = server.request("POST", f"/{name}/_count", {}, headers=RUN_AS)
        assert c["count"] == n, (name, c)
    st, _, d = server.request("GET", "/p/_doc/same", headers=RUN_AS)
    assert d["_source"]["t"] == "last"
    st, _, d = server.request("GET", "/q/_doc/q0", headers=RUN_AS)
    assert d["_source"]["t"] == "back"

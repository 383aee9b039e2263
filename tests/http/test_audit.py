"""The retrieval audit over the wire: every _search, _doc get, /v1 retrieval and context,
and is-authorized answer is recorded with what it returned; GET /v1/audit finds the records by
subject, returned chunk, request id (X-Opaque-Id), kind and time, pages, and is for
administrators only; a collection's recording turns off; records survive a restart; the
audit can be turned off in the server's config."""
import json
import os
import subprocess
import urllib.parse

from test_v1 import load, READERS, readable
from wire import ROOT


def audit(server, key=None, status=200, **args):
    st, hdrs, b = server.request("GET", "/v1/audit?" + urllib.parse.urlencode(args), key=key)
    assert st == status, b
    return hdrs, b


def search(server, key, body, opaque=None):
    h = {"X-Opaque-Id": opaque} if opaque else {}
    st, hdrs, b = server.request("POST", "/kb/_search", body, key=key, headers=h)
    assert st == 200, b
    return hdrs, b


def test_what_each_subject_was_shown_is_recorded(server):
    docs = load(server)
    keys = {who: server.key_for(who)[2] for who in READERS}
    shown = {}
    for i, who in enumerate(READERS):
        hdrs, b = search(server, keys[who], {"query": {"match": {"text": "alpha"}}, "size": 7},
                         opaque=f"q-{who}")
        ids = [h["_id"] for h in b["hits"]["hits"]]
        assert set(ids) <= readable(docs, who)
        assert "seq=" in hdrs["X-Cordon-Audit"] and "durable=0" in hdrs["X-Cordon-Audit"]
        shown[who] = ids
    for who, ids in shown.items():
        _, b = audit(server, subject=who)
        recs = b["records"]
        assert len(recs) == 1, recs
        r = recs[0]
        assert r["kind"] == "search" and r["collection"] == "kb" and r["mode"] == "text"
        assert [h["id"] for h in r["hits"]] == ids
        assert [h["rank"] for h in r["hits"]] == list(range(1, len(ids) + 1))
        assert r["request_id"] == f"q-{who}" and r["caller"].startswith("key:")
        # every recorded hit was readable by its subject when it was shown
        assert {h["id"] for h in r["hits"]} <= readable(docs, who)
    # which subjects were shown one chunk: exactly those whose hits held it
    for d in docs:
        _, b = audit(server, collection="kb", chunk=d)
        assert sorted(r["subject"] for r in b["records"]) == sorted(
            w for w, ids in shown.items() if d in ids)
    _, b = audit(server, request_id="q-bob")
    assert [r["subject"] for r in b["records"]] == ["bob"]


def test_gets_retrievals_contexts_and_decisions(server):
    docs = load(server)
    hidden = next(d for d in docs if not docs[d]["groups"] & READERS["alice"])
    mine = next(d for d in docs if docs[d]["groups"] & READERS["alice"])
    alice = server.key_for("alice")[2]
    h = {"X-Opaque-Id": "mixed"}
    st, hdrs, _ = server.request("GET", f"/kb/_doc/{mine}", key=alice, headers=h)
    assert st == 200 and "seq=" in hdrs["X-Cordon-Audit"]
    assert server.request("GET", f"/kb/_doc/{hidden}", key=alice, headers=h)[0] == 404
    st, _, r = server.request("POST", "/v1/collections/kb/retrieve",
                              {"query": {"text": "beta"}, "k": 3}, key=alice, headers=h)
    assert st == 200 and r["audit"]["seq"] > 0 and r["audit"]["durable"] is False
    st, _, c = server.request("POST", "/v1/collections/kb/context",
                              {"query": {"text": "gamma"}, "k": 3}, key=alice, headers=h)
    assert st == 200 and c["audit"]["seq"] == r["audit"]["seq"] + 1
    st, dh, d = server.request("POST", "/api/auth/is-authorized",
                               {"permission": {"resource": "collection:kb", "action": "search"}},
                               key=alice, headers=h)
    d = d["data"]
    assert "durable=0" in dh["X-Cordon-Audit"]
    assert st == 200 and d["authorized"] is True
    _, b = audit(server, request_id="mixed")
    kinds = [x["kind"] for x in b["records"]]
    assert kinds == ["get", "get", "search", "context", "authorize"], kinds
    g1, g2, ret, ctx, dec = b["records"]
    assert g1["found"] is True and [x["id"] for x in g1["hits"]] == [mine]
    assert g2["found"] is False and g2["requested"] == hidden and g2["hits"] == []
    assert [x["id"] for x in ret["hits"]] == [x["id"] for x in r["hits"]]
    assert [x["id"] for x in ctx["hits"]] == [x["id"] for x in c["hits"]]
    assert dec["decisions"] == [{"resource": "collection:kb", "authorized": True,
                                 "reason": d["reason"]}]
    _, b = audit(server, kind="get", subject="alice")
    assert len(b["records"]) == 2


def test_paging_time_ranges_and_ndjson(server):
    load(server)
    bob = server.key_for("bob")[2]
    for i in range(12):
        search(server, bob, {"query": {"match": {"text": "delta"}}, "size": 2})
    seen, after = [], 0
    while True:
        _, b = audit(server, subject="bob", limit=5, after=after)
        seen += [r["seq"] for r in b["records"]]
        if b["next_after"] is None:
            break
        after = b["next_after"]
    assert len(seen) == 12 and seen == sorted(seen)
    _, b = audit(server, subject="bob")
    t6 = b["records"][6]["time"]
    _, since = audit(server, subject="bob", since=t6)
    _, until = audit(server, subject="bob", until=t6)
    assert len(since["records"]) + len(until["records"]) == 12
    assert all(r["time"] >= t6 for r in since["records"])
    st, hdrs, text = server.request("GET", "/v1/audit?subject=bob&format=ndjson&limit=4")
    assert st == 200 and hdrs["Content-Type"].startswith("application/x-ndjson")
    lines = [json.loads(x) for x in text.splitlines()]
    assert [x["seq"] for x in lines] == seen[:4]
    assert int(hdrs["X-Audit-Next-After"]) == seen[3]


def test_only_administrators_read_the_audit(server):
    load(server)
    alice = server.key_for("alice")[2]
    _, b = audit(server, key=alice, status=403)
    assert b["error"]["type"] == "security_exception"
    st, _, b = server.request("GET", "/v1/audit", headers={"es-security-runas-user": "alice"})
    assert st == 403  # an admin key running as someone is that someone
    for bad in ({"since": "yesterday"}, {"limit": "20000"}, {"after": "-1"},
                {"chunk": "1"}, {"format": "xml"}):
        _, b = audit(server, status=400, **bad)
        assert b["error"]["type"] == "illegal_argument_exception", bad


def test_collection_recording_off_and_restart(tmp_path):
    from wire import Server
    s = Server(str(tmp_path / "data"))
    try:
        load(s)
        bob = s.key_for("bob")[2]
        search(s, bob, {"query": {"match": {"text": "alpha"}}})
        st, _, b = s.request("PUT", "/v1/audit/collections/kb", {"record": False})
        assert st == 200 and b == {"collection": "kb", "record": False}
        hdrs, _ = search(s, bob, {"query": {"match": {"text": "alpha"}}})
        assert "X-Cordon-Audit" not in hdrs
        assert s.request("PUT", "/v1/audit/collections/nope", {"record": False})[0] == 404
        assert s.request("PUT", "/v1/audit/collections/kb", {"record": 0})[0] == 400
        assert s.request("PUT", "/v1/audit/collections/kb", {"record": False},
                         key=bob)[0] == 403
    finally:
        assert s.stop() == 0, s.stderr
    s = Server(str(tmp_path / "data"))
    try:
        _, b = audit(s, subject="bob")
        assert len(b["records"]) == 1  # the record outlived the restart; the off setting too
        hdrs, _ = search(s, bob, {"query": {"match": {"text": "alpha"}}})
        assert "X-Cordon-Audit" not in hdrs
        shown = b["records"][0]
    finally:
        assert s.stop() == 0, s.stderr
    # the command line reads the same records, and replays them against the history
    binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
    p = subprocess.run([binary, "audit", "--data", str(tmp_path / "data"), "--subject", "bob"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert [json.loads(x) for x in p.stdout.splitlines()] == [shown]
    p = subprocess.run([binary, "audit", "verify", "--data", str(tmp_path / "data")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "0 unreadable when shown" in p.stdout, (p.stdout, p.stderr)


def test_audit_off_in_config(tmp_path):
    from wire import Server
    conf = tmp_path / "cordon.conf"
    conf.write_text("audit = 0\n")
    s = Server(str(tmp_path / "data"), extra_args=("--config", str(conf)))
    try:
        load(s)
        hdrs, _ = search(s, s.key_for("bob")[2], {"query": {"match": {"text": "alpha"}}})
        assert "X-Cordon-Audit" not in hdrs
        _, b = audit(s)
        assert b["records"] == []
    finally:
        assert s.stop() == 0, s.stderr

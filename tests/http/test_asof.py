"""Questions about the past over the wire: /v1/asof/check and /v1/asof/readable by revision
and by time, /v1/explain and /api/auth/is-authorized with `revision` or `as_of`, and
/v1/audit/verify, which replays the audit's records against the permission history, also across
an index deleted and created again. Every answer is checked against the test's own record of
who could read what at each revision."""
import datetime
import os
import subprocess
import time

from test_v1 import load, READERS, readable
from wire import ROOT


def revision(server):
    return server.request("GET", "/_cordon/health", key="")[2]["revision"]


def iso_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_who_could_read_what_then(server):
    docs = load(server)
    r0, t0 = revision(server), iso_now()
    time.sleep(0.01)
    server.model({"op": "remove_member", "group": "eng", "member": "alice"})
    r1 = revision(server)
    before = readable(docs, "alice")
    READERS["alice"] = set()
    try:
        after = readable(docs, "alice")
    finally:
        READERS["alice"] = {"eng"}
    assert before and not after
    for when, want in (({"revision": r0}, before), ({"as_of": t0}, before),
                       ({"revision": r1}, after)):
        st, _, b = server.request("POST", "/v1/asof/readable",
                                  {"collection": "kb", "subject": "alice", **when})
        assert st == 200, b
        assert set(b["ids"]) == want and b["count"] == len(want) and not b["truncated"]
        assert b["revision"] == (r1 if want is after else r0)
        for d in list(docs)[:40]:
            st, _, a = server.request("POST", "/v1/asof/check",
                                      {"collection": "kb", "subject": "alice", "chunk": d,
                                       **when})
            assert st == 200, a
            assert a["readable"] == (d in want), (d, when, a)
            if a["readable"]:
                assert a["reason"] == "READABLE" and a["principal"] == "group:eng"
    st, _, b = server.request("POST", "/v1/asof/readable",
                              {"collection": "kb", "subject": "alice", "revision": r0,
                               "limit": 3})
    assert st == 200 and b["count"] == 3 and b["truncated"] is True
    # who could read one of them over the range, and over its second half only
    some = next(iter(before))
    st, _, b = server.request("POST", "/v1/asof/readers", {"collection": "kb", "chunk": some})
    assert st == 200, b
    could = {r["subject"] for r in b["readers"]}
    assert "alice" in could and b["count"] == len(could)
    assert could == {w for w in READERS if docs[some]["groups"] & READERS[w]}
    st, _, b = server.request("POST", "/v1/asof/readers",
                              {"collection": "kb", "chunk": some, "from": {"revision": r1}})
    assert st == 200 and "alice" not in {r["subject"] for r in b["readers"]}
    st, _, b = server.request("POST", "/v1/asof/readers",
                              {"collection": "kb", "chunk": some, "from": 5})
    assert st == 400
    # explain and is-authorized, as they stood
    some = next(iter(before))
    st, _, x = server.request("POST", "/v1/explain", {"subject": "alice", "collection": "kb",
                                                      "id": some, "revision": r0})
    assert st == 200 and x["readable"] is True and x["revision"] == r0
    st, _, x = server.request("POST", "/v1/explain", {"subject": "alice", "collection": "kb",
                                                      "id": some})
    assert st == 200 and x["readable"] is False  # now
    for when, ok in (({"revision": r0}, True), ({"revision": r1}, False), ({}, False)):
        st, _, b = server.request("POST", "/api/auth/is-authorized",
                                  {"subject": "alice", **when, "permission": {
                                      "resource": "collection:kb", "action": "search"}})
        assert st == 200 and b["data"]["authorized"] is ok, (when, b)


def test_the_audit_replays_clean(server):
    docs = load(server)
    keys = {w: server.key_for(w)[2] for w in READERS}
    answered = 0
    for i in range(30):
        who = list(READERS)[i % 4]
        st, _, b = server.request("POST", "/kb/_search",
                                  {"query": {"match": {"text": "alpha beta"}}, "size": 10},
                                  key=keys[who])
        assert st in (200, 404)  # 404: bob, while out of hr, may not search kb
        answered += st == 200
        if i == 10:  # the world moves under the searches
            server.model({"op": "remove_member", "group": "hr", "member": "bob"})
        if i == 20:
            server.model({"op": "add_member", "group": "hr", "member": "bob"})
    st, _, v = server.request("GET", "/v1/audit/verify?collection=kb")
    assert st == 200, v
    assert v["records"] == answered and answered >= 25 and v["hits"] > 0
    assert v["unreadable"] == 0 and v["unjudged"] == 0 and v["problems"] == []
    assert docs


def test_a_deleted_index_answers_for_the_revisions_it_lived(server):
    """An index deleted and created again under its name: questions about the first one's
    revisions read its chunks, those after read the new one's, and the audit's records of
    searches in both replay clean."""
    docs = load(server)
    alice = server.key_for("alice")[2]
    st, _, b = server.request("POST", "/kb/_search", {"query": {"match": {"text": "alpha"}}},
                              key=alice)
    assert st == 200 and b["hits"]["hits"], b
    r0 = revision(server)
    mine = sorted(readable(docs, "alice"))
    assert mine
    st, _, b = server.request("DELETE", "/kb")
    assert st == 200, b
    r1 = revision(server)
    st, _, b = server.request("PUT", "/kb", {"mappings": {"properties": {"text": {"type": "text"}}}})
    assert st == 200, b
    line = {"text": "alpha", "allowed_groups": ["hr"]}  # the same id, another chunk: hr's
    st, _, b = server.request("PUT", "/kb/_doc/" + mine[0], line)
    assert st in (200, 201), b
    r2 = revision(server)
    st, _, b = server.request("POST", "/kb/_search", {"query": {"match": {"text": "alpha"}}},
                              key=alice)
    assert st == 200 and not b["hits"]["hits"], b  # alice is not in hr
    for rev, want in ((r0, "READABLE"), (r1, "CHUNK_NOT_FOUND"), (r2, "NO_MATCHING_PRINCIPAL")):
        st, _, a = server.request("POST", "/v1/asof/check", {
            "collection": "kb", "subject": "alice", "chunk": mine[0], "revision": rev})
        assert st == 200 and a["reason"] == want, (rev, a)
    st, _, b = server.request("POST", "/v1/asof/readable",
                              {"collection": "kb", "subject": "alice", "revision": r0})
    assert st == 200 and sorted(b["ids"]) == mine, b
    st, _, v = server.request("GET", "/v1/audit/verify?collection=kb")
    assert st == 200 and v["records"] == 2 and v["hits"] > 0, v
    assert v["unreadable"] == 0 and v["unjudged"] == 0, v["problems"][:5]


def test_bad_questions_and_who_may_ask(server):
    load(server)
    alice = server.key_for("alice")[2]
    q = {"collection": "kb", "subject": "alice", "chunk": "1", "revision": 1}
    st, _, b = server.request("POST", "/v1/asof/check", q, key=alice)
    assert st == 403 and b["error"]["type"] == "security_exception"
    assert server.request("GET", "/v1/audit/verify", key=alice)[0] == 403
    for bad in ({"revision": 0}, {"revision": "3"}, {"as_of": "yesterday"},
                {"revision": 2, "as_of": 5}, {"chunk": None}, {"collection": None},
                {"revision": None}):
        body = {k: v for k, v in {**q, **bad}.items() if v is not None}
        st, _, b = server.request("POST", "/v1/asof/check", body)
        assert st == 400 and b["error"]["type"] == "illegal_argument_exception", (bad, b)
    st, _, b = server.request("POST", "/v1/asof/check", {**q, "revision": 10 ** 9})
    assert st == 400  # not reached yet
    early = {k: v for k, v in q.items() if k != "revision"}
    st, _, b = server.request("POST", "/v1/asof/check", {**early, "as_of": "1990-01-01T00:00:00Z"})
    assert st == 404  # nothing written then
    st, _, b = server.request("POST", "/v1/asof/check", {**q, "collection": "nope"})
    assert st == 404
    st, _, b = server.request("POST", "/api/auth/is-authorized",
                              {"subject": "alice", "revision": "x", "permission": {
                                  "resource": "collection:kb", "action": "search"}})
    assert st == 200 and b["data"]["reason"] == "INVALID_REQUEST"


def test_a_server_that_prunes_its_history_still_answers(tmp_path):
    from wire import Server
    conf = tmp_path / "cordon.conf"
    conf.write_text("history_retain_days = 30\n")
    s = Server(str(tmp_path / "data"), extra_args=("--config", str(conf)))
    try:
        docs = load(s)
        r = revision(s)
        st, _, b = s.request("POST", "/v1/asof/readable",
                             {"collection": "kb", "subject": "alice", "revision": r})
        assert st == 200 and set(b["ids"]) == readable(docs, "alice")
    finally:
        assert s.stop() == 0, s.stderr  # SIGTERM ends the hourly wait at once
    conf.write_text("history_retain_days = 99999\n")
    binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
    p = subprocess.run([binary, "serve", "--data", str(tmp_path / "data"), "--config", str(conf)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "history_retain_days" in p.stderr


def test_validity_window_over_http(server):
    """A grant's validity window: granted, listed and revoked by id like any grant; a window that
    ended gives nothing, one that started gives the role, a malformed one is refused."""
    load(server, n=20)
    st, _, b = server.request("PUT", "/v1/subjects/erin", {})
    assert st == 200, b
    st, _, b = server.request("PUT", "/v1/roles/reader", {"permissions": [
        {"resource": "collection:kb", "action": "search"}]})
    assert st == 200, b
    st, _, ended = server.request("POST", "/v1/grants", {
        "to": "erin", "role": "reader", "valid": {"from": "2001-01-01", "until": "2002-01-01"}})
    assert st == 200 and ended["id"].startswith("g"), ended
    st, _, v = server.request("GET", "/v1/subjects/erin/view")
    assert "role:reader" not in v["principals"]
    st, _, started = server.request("POST", "/v1/grants", {
        "to": "erin", "role": "reader", "valid": {"from": "2001-01-01T00:00:00Z"}})
    assert st == 200 and started["id"] != ended["id"], started
    st, _, v = server.request("GET", "/v1/subjects/erin/view")
    assert "role:reader" in v["principals"]
    st, _, lst = server.request("GET", "/v1/grants")
    windows = [x.get("valid") for x in lst["grants"] if x["id"] in (ended["id"], started["id"])]
    assert {"from": "2001-01-01T00:00:00Z", "until": "2002-01-01T00:00:00Z"} in windows
    st, _, b = server.request("DELETE", "/v1/grants/" + started["id"])
    assert st == 200, b
    st, _, v = server.request("GET", "/v1/subjects/erin/view")
    assert "role:reader" not in v["principals"]
    rev = revision(server)
    st, _, b = server.request("POST", "/v1/grants", {
        "to": "erin", "role": "reader", "valid": {"from": "2002-01-01", "until": "2001-01-01"}})
    assert st == 400 and "valid.until" in b["error"]["reason"], b
    assert revision(server) == rev

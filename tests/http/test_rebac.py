"""Relationships through the wire: a Drive-like schema (folders nested five deep, documents
inheriting view from their folders, shares to users and groups, a banned relation that
excludes), tuples written and deleted, and check, lookup-resources (paged), lookup-subjects and
expand answering from the very next request; who may ask; clear errors that change nothing."""
import pytest

SCHEMA = {"types": {
    "user": {},
    "group": {"relations": {"member": ["user", "group#member"]}},
    "folder": {"relations": {"parent": ["folder"], "viewer": ["user", "group#member"]},
               "permissions": {"view": "viewer + parent->view"}},
    "document": {"relations": {"parent": ["folder"], "viewer": ["user", "group#member"],
                               "banned": ["user"]},
                 "permissions": {"view": "(viewer + parent->view) - banned"}}}}


def drive(server):
    st, _, b = server.request("PUT", "/v1/relationships/schema", SCHEMA)
    assert st == 200, b
    writes = ["group:eng#member@user:alice", "group:staff#member@group:eng#member",
              "group:staff#member@user:bob"]
    for depth in range(1, 5):  # f0 > f1 > f2 > f3 > f4
        writes.append(f"folder:f{depth}#parent@folder:f{depth - 1}")
    for d in range(30):
        writes.append(f"document:d{d:02d}#parent@folder:f{d % 5}")
    writes += ["folder:f2#viewer@group:eng#member", "folder:f0#viewer@user:carol",
               "document:d07#banned@user:alice", "document:d00#viewer@group:staff#member"]
    st, _, b = server.request("POST", "/v1/relationships", {"writes": writes})
    assert st == 200 and b["written"] == len(writes), b
    return b["revision"]


def check(server, subject, perm, obj, key=None):
    st, _, b = server.request("POST", "/v1/relationships/check",
                              {"subject": subject, "permission": perm, "object": obj}, key=key)
    assert st == 200, b
    return b["allowed"]


def lookup(server, subject, key=None, **extra):
    st, _, b = server.request("POST", "/v1/relationships/lookup-resources",
                              {"subject": subject, "type": "document", "permission": "view",
                               **extra}, key=key)
    assert st == 200, b
    return b


def test_drive_like_shares_inherit_down_five_levels(server):
    rev = drive(server)
    # f2 is shared with eng: alice reads f2, f3, f4's documents, except the one banning her
    want = sorted(f"d{d:02d}" for d in range(30) if d % 5 >= 2 and d != 7) + ["d00"]
    b = lookup(server, "user:alice")
    assert b["resources"] == sorted(want) and b["revision"] >= rev
    assert check(server, "user:alice", "view", "document:d04")
    assert not check(server, "user:alice", "view", "document:d07")      # banned
    assert not check(server, "user:alice", "view", "document:d01")      # above the share
    assert check(server, "user:carol", "view", "document:d29")          # f0 holds everything
    assert check(server, "user:bob", "view", "document:d00")            # staff via d00
    assert not check(server, "user:bob", "view", "document:d02")
    # paged by the last id of a page
    got, after = [], None
    while True:
        page = lookup(server, "user:alice", limit=4, **({"after": after} if after else {}))
        got += page["resources"]
        after = page.get("next")
        if not after:
            break
    assert got == sorted(want)
    st, _, b = server.request("POST", "/v1/relationships/lookup-subjects",
                              {"object": "document:d12", "permission": "view",
                               "subject_type": "user"})
    assert st == 200 and b["subjects"] == ["user:alice", "user:carol"], b
    st, _, b = server.request("POST", "/v1/relationships/expand",
                              {"object": "document:d07", "permission": "view"})
    assert st == 200 and b["tree"]["expression"]["operation"] == "exclusion", b


def test_an_unshare_applies_to_the_next_request(server):
    drive(server)
    assert check(server, "user:alice", "view", "document:d02")
    st, _, b = server.request("POST", "/v1/relationships",
                              {"deletes": ["folder:f2#viewer@group:eng#member"]})
    assert st == 200 and b["deleted"] == 1
    assert not check(server, "user:alice", "view", "document:d02")
    assert lookup(server, "user:alice")["resources"] == ["d00"]  # staff, through eng
    # a move: f3 now under f1, which nobody shares with alice; carol still sees it via f0
    server.request("POST", "/v1/relationships",
                   {"writes": ["folder:f2#viewer@group:eng#member"]})
    st, _, b = server.request("POST", "/v1/relationships",
                              {"deletes": ["folder:f3#parent@folder:f2"],
                               "writes": ["folder:f3#parent@folder:f1"]})
    assert st == 200
    assert not check(server, "user:alice", "view", "document:d03")
    assert check(server, "user:alice", "view", "document:d02")
    assert check(server, "user:carol", "view", "document:d03")


def test_who_may_ask(server):
    drive(server)
    server.model({"op": "put_subject", "id": "alice"}, {"op": "put_subject", "id": "mallory"})
    _, _, alice = server.key_for("alice")
    assert check(server, "user:alice", "view", "document:d02", key=alice)  # about herself
    st, _, b = server.request("POST", "/v1/relationships/check",
                              {"subject": "user:bob", "permission": "view",
                               "object": "document:d00"}, key=alice)
    assert st == 403
    st, _, b = server.request("POST", "/v1/relationships", {"writes": []}, key=alice)
    assert st == 403
    st, _, b = server.request("POST", "/v1/relationships/lookup-resources",
                              {"subject": "user:alice", "type": "document",
                               "permission": "view"}, key=alice)
    assert st == 200 and "d02" in b["resources"]


@pytest.mark.parametrize("path,body", [
    ("/v1/relationships", {"writes": ["document:d1#view@user:x"]}),       # a permission
    ("/v1/relationships", {"writes": ["document:d1#viewer@folder:f1"]}),  # wrong subject type
    ("/v1/relationships", {"writes": ["document:d1#viewer"]}),
    ("/v1/relationships", {"writes": ["folder:ok#viewer@user:z"], "deletes": [7]}),
    ("/v1/relationships", {"write": []}),
    ("/v1/relationships/schema", {"types": {"doc": {"permissions": {"v": "nothing"}}}}),
    ("/v1/relationships/check", {"subject": "user:a", "permission": "nope",
                                 "object": "document:d1"}),
    ("/v1/relationships/check", {"subject": "user:a", "permission": "view"}),
    ("/v1/relationships/lookup-resources", {"subject": "user:a", "type": "document",
                                            "permission": "view", "limit": 0}),
])
def test_bad_requests_are_refused_and_change_nothing(server, path, body):
    drive(server)
    before = server.request("GET", "/_cordon/model")[2]
    method = "PUT" if path.endswith("schema") else "POST"
    st, _, b = server.request(method, path, body)
    assert st == 400, b
    assert b["error"]["reason"]
    assert server.request("GET", "/_cordon/model")[2] == before
    assert not check(server, "user:z", "view", "folder:ok")


def test_survives_a_restart(tmp_path):
    from wire import Server
    s = Server(str(tmp_path / "data"))
    try:
        drive(s)
        before = lookup(s, "user:alice")["resources"]
    finally:
        assert s.stop() == 0, s.stderr
    s = Server(str(tmp_path / "data"))
    try:
        assert lookup(s, "user:alice")["resources"] == before
        st, _, b = s.request("GET", "/v1/relationships/schema")
        assert st == 200 and b == SCHEMA
    finally:
        assert s.stop() == 0, s.stderr


def test_documents_naming_objects_follow_the_tuples(tmp_path):
    """An index whose documents name an object (object_field): a user reads the documents of
    the folders shared with it, from the next request after a share or an unshare."""
    from wire import Server
    conf = tmp_path / "serve.conf"
    conf.write_text("object_field = drive_id\n")
    s = Server(str(tmp_path / "data"), extra_args=("--config", str(conf)))
    try:
        drive(s)
        s.model({"op": "put_subject", "id": "alice"},
                {"op": "grant", "to": "alice", "permission": {"resource": "collection:*",
                                                              "action": "*"}})
        st, _, b = s.request("PUT", "/files", {"mappings": {"properties": {
            "text": {"type": "text"}}}})
        assert st == 200, b
        lines = []
        for d in range(10):
            lines += [{"index": {"_index": "files", "_id": f"d{d:02d}"}},
                      {"text": "notes", "drive_id": f"document:d{d:02d}"}]
        raw = ("\n".join(__import__("json").dumps(x) for x in lines) + "\n").encode()
        st, _, b = s.request("POST", "/_bulk", raw=raw,
                             headers={"Content-Type": "application/x-ndjson"})
        assert st == 200 and not b["errors"], b

        def found():
            st, _, b = s.request("POST", "/files/_search", {"size": 20},
                                 headers={"es-security-runas-user": "alice"})
            assert st == 200, b
            return sorted(h["_id"] for h in b["hits"]["hits"])

        # f2 is shared with eng (alice): d02..d04 and d07..d09 sit under it; d07 bans her
        assert found() == ["d00", "d02", "d03", "d04", "d08", "d09"]
        s.request("POST", "/v1/relationships", {"deletes": ["folder:f2#viewer@group:eng#member"]})
        assert found() == ["d00"]
        st, _, b = s.request("PUT", "/files/_doc/bad", {"text": "x", "drive_id": "not an object"})
        assert st == 400, b
    finally:
        assert s.stop() == 0, s.stderr

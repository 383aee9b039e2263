"""The cordon API over the wire: /v1 retrieval with completeness and consistency tokens, the
permission model routes, bulk ACL changes, explain, views, and /api/auth/is-authorized."""
import json
import math
import random

from wire import people_model

READERS = {"alice": {"eng"}, "carol": {"eng"}, "bob": {"hr"}, "dave": set()}


def load(server, n=200, dim=8):
    people_model(server)
    st, _, b = server.request("PUT", "/kb", {"mappings": {"properties": {
        "text": {"type": "text"}, "team": {"type": "keyword"},
        "emb": {"type": "dense_vector", "dims": dim, "similarity": "l2_norm"}}}})
    assert st == 200, b
    rng = random.Random(11)
    docs = {}
    lines = []
    for i in range(n):
        groups = rng.choice([["eng"], ["hr"], ["eng", "hr"], []])
        vec = [rng.uniform(-1, 1) for _ in range(dim)]
        words = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(3))
        docs[str(i)] = {"groups": set(groups), "vec": vec, "text": words,
                        "team": "t%d" % (i % 3)}
        lines.append({"index": {"_index": "kb", "_id": str(i)}})
        lines.append({"text": words, "team": "t%d" % (i % 3), "emb": vec,
                      "allowed_groups": groups})
    raw = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    st, _, b = server.request("POST", "/_bulk", raw=raw,
                              headers={"Content-Type": "application/x-ndjson"})
    assert st == 200 and not b["errors"]
    return docs


def retrieve(server, body, who="alice", status=200):
    st, _, b = server.request("POST", "/v1/collections/kb/retrieve", {"subject": who, **body})
    assert st == status, b
    return b


def readable(docs, who):
    return {d for d, x in docs.items() if x["groups"] & READERS[who]}


def test_retrieve_every_mode_and_strategy_as_each_subject(server):
    docs = load(server)
    q = [0.2] * 8
    for who in READERS:
        mine = readable(docs, who)
        exact = sorted(mine, key=lambda d: (math.dist(docs[d]["vec"], q), d))[:10]
        for strategy in ("auto", "exact", "prefilter", "postfilter"):
            r = retrieve(server, {"query": {"vector": q}, "k": 10, "mode": "vector",
                                  "strategy": strategy}, who)
            ids = [h["id"] for h in r["hits"]]
            assert set(ids) <= mine, (who, strategy)
            assert r["readable"] == len(mine)
            if r["complete"]:  # never claims completeness it does not have
                assert ids == exact, (who, strategy, r["plan"])
            if strategy == "exact":
                assert r["complete"] and ids == exact
        r = retrieve(server, {"query": {"text": "alpha"}, "k": 200, "mode": "text"}, who)
        assert {h["id"] for h in r["hits"]} == {d for d in mine if "alpha" in docs[d]["text"]}
        r = retrieve(server, {"query": {"text": "beta", "vector": q}, "k": 10,
                              "fusion": {"method": "rrf"}, "filter": {"term": {"team": "t1"}},
                              "fields": ["team"]}, who)
        for h in r["hits"]:
            assert h["id"] in mine and h["fields"] == {"team": "t1"}
        assert "revision" in r and "took_ms" in r and r["plan"]


def test_revocation_then_min_revision(server):
    docs = load(server)
    # bob may search on his own, so losing hr leaves him the collection but not hr's chunks.
    server.model({"op": "grant", "to": "bob",
                  "permission": {"resource": "collection:kb", "action": "search"}})
    mine = readable(docs, "bob")
    hr_only = [d for d in mine if docs[d]["groups"] == {"hr"}]
    r = retrieve(server, {"query": {"vector": [0.0] * 8}, "k": 200, "strategy": "exact"}, "bob")
    assert {h["id"] for h in r["hits"]} == mine and hr_only
    st, _, b = server.request("POST", "/v1/groups/hr/members", {"remove": ["bob"]})
    assert st == 200, b
    rev = b["revision"]
    r = retrieve(server, {"query": {"vector": [0.0] * 8}, "k": 200, "strategy": "exact",
                          "min_revision": rev}, "bob")
    assert r["revision"] >= rev and r["hits"] == []
    # A revision the directory has not reached: 409 after the bounded wait.
    st, _, b = server.request("POST", "/v1/collections/kb/retrieve",
                              {"subject": "bob", "query": {"text": "alpha"},
                               "min_revision": rev + 1000})
    assert st == 409 and b["error"]["type"] == "revision_not_reached_exception"


def test_model_routes(server):
    load(server, n=20)
    st, _, b = server.request("PUT", "/v1/subjects/erin", {"attributes": {"level": 3}})
    assert st == 200 and b["revision"] > 0
    st, _, b = server.request("PUT", "/v1/groups/ops", {"members": ["erin", "carol"]})
    assert st == 200, b
    st, _, b = server.request("PUT", "/v1/groups/ops", {"members": ["erin"]})  # carol leaves
    st, _, m = server.request("GET", "/v1/model")
    ops = [g for g in m["groups"] if g["id"] == "ops"][0]
    assert ops["members"] == [{"id": "erin", "kind": "subject"}]
    st, _, b = server.request("PUT", "/v1/roles/reader", {"permissions": [
        {"resource": "collection:kb", "action": "search"}]})
    assert st == 200, b
    st, _, g = server.request("POST", "/v1/grants", {"to": "ops", "to_kind": "group",
                                                     "role": "reader"})
    assert st == 200 and g["id"].startswith("g"), g
    st, _, lst = server.request("GET", "/v1/grants")
    assert g["id"] in [x["id"] for x in lst["grants"]]
    st, _, v = server.request("GET", "/v1/subjects/erin/view")
    assert "group:ops" in v["principals"] and "role:reader" in v["principals"]
    st, _, b = server.request("DELETE", "/v1/grants/" + g["id"])
    assert st == 200, b
    st, _, b = server.request("DELETE", "/v1/grants/" + g["id"])
    assert st == 404
    st, _, v = server.request("GET", "/v1/subjects/erin/view")
    assert "role:reader" not in v["principals"]
    # A subject's own key may read its own view, not another's, and may not change the model.
    _, _, alice = server.key_for("alice")
    st, _, _ = server.request("GET", "/v1/subjects/alice/view", key=alice)
    assert st == 200
    st, _, _ = server.request("GET", "/v1/subjects/erin/view", key=alice)
    assert st == 403
    st, _, _ = server.request("PUT", "/v1/subjects/mallory", {}, key=alice)
    assert st == 403
    st, _, b = server.request("PUT", "/v1/groups/ops", {"members": ["nobody-here"]})
    assert st == 404, b
    # The whole model round-trips.
    st, _, m = server.request("GET", "/v1/model")
    st, _, b = server.request("PUT", "/v1/model", m)
    assert st == 200
    st, _, m2 = server.request("GET", "/v1/model")
    assert m2 == m


def test_acl_bulk_and_explain(server):
    docs = load(server, n=30)
    eng_doc = next(d for d, x in docs.items() if x["groups"] == {"eng"})
    st, _, x = server.request("POST", "/v1/explain", {"subject": "bob", "collection": "kb",
                                                      "id": eng_doc})
    assert st == 200 and x["readable"] is False
    st, _, b = server.request("PUT", "/v1/collections/kb/acl", {"changes": [
        {"id": eng_doc, "allowed": ["hr"], "denied": []}]})
    assert st == 200 and b["changed"] == 1, b
    st, _, x = server.request("POST", "/v1/explain", {"subject": "bob", "collection": "kb",
                                                      "id": eng_doc})
    assert x["readable"] is True and x["principal"] == "group:hr"
    r = retrieve(server, {"query": {"vector": docs[eng_doc]["vec"]}, "k": 1, "strategy": "exact",
                          "min_revision": b["revision"]}, "bob")
    assert [h["id"] for h in r["hits"]] == [eng_doc]
    r = retrieve(server, {"query": {"vector": docs[eng_doc]["vec"]}, "k": 30,
                          "strategy": "exact"}, "alice")
    assert eng_doc not in {h["id"] for h in r["hits"]}
    st, _, b = server.request("PUT", "/v1/collections/kb/acl", {"changes": [
        {"id": "no-such", "allowed": ["hr"]}]})
    assert st == 404


def test_is_authorized_reason_codes(server):
    people_model(server)
    server.model({"op": "put_role", "id": "nine-to-five", "permissions": [
        {"resource": "report:*", "action": "read",
         "condition": {"NumericLessThan": {"context.hour": 17}}}]},
                 {"op": "grant", "to": "bob", "role": "nine-to-five"},
                 {"op": "grant", "to": "carol", "permission": {"resource": "ledger:1",
                                                               "action": "read"},
                  "scope": {"type": "tenant", "id": "acme"}})
    _, _, bob = server.key_for("bob")

    def ask(body, key=bob):
        st, _, b = server.request("POST", "/api/auth/is-authorized", body, key=key)
        assert st == 200, b
        assert b["success"] is True
        return b["data"]

    d = ask({"permission": {"resource": "collection:x", "action": "search"}})
    assert d["authorized"] and d["reason"] == "PERMISSION_GRANTED_NO_CONDITION"
    assert d["matchedPermission"]["grantedTo"] == "group:hr"
    d = ask({"permission": {"resource": "report:q3", "action": "read"}, "context": {"hour": 9}})
    assert d["authorized"] and d["reason"] == "PERMISSION_GRANTED_CONDITION_MET"
    assert d["matchedCondition"] and d["evaluatedContext"] == {"hour": 9}
    d = ask({"permission": {"resource": "report:q3", "action": "read"}, "context": {"hour": 20}})
    assert not d["authorized"] and d["reason"] == "PERMISSION_FOUND_CONDITION_NOT_MET"
    d = ask({"permission": {"resource": "vault:1", "action": "open"}})
    assert not d["authorized"] and d["reason"] == "NO_MATCHING_PERMISSION_FOUND"
    d = ask({"permission": {"resource": "nocolon", "action": "read"}})
    assert not d["authorized"] and d["reason"] == "INVALID_REQUEST"
    d = ask({"permission": {"resource": "ledger:1", "action": "read"}, "scope": {"type": "tenant"}})
    assert not d["authorized"] and d["reason"] == "INVALID_SCOPE"
    d = ask({"subject": "ghost", "permission": {"resource": "a:b", "action": "read"}}, key=None)
    assert not d["authorized"] and d["reason"] == "SUBJECT_NOT_FOUND"
    d = ask({"subject": "carol", "permission": {"resource": "ledger:1", "action": "read"},
             "scope": {"tenant": "acme"}}, key=None)
    assert d["authorized"]
    st, _, b = server.request("POST", "/api/auth/is-authorized", raw=b"{not json", key=bob)
    assert st == 400 and b["success"] is False
    st, _, b = server.request("POST", "/api/auth/is-authorized",
                              {"subject": "alice", "permission": {"resource": "a:b",
                                                                  "action": "x"}}, key=bob)
    assert st == 403  # bob's key may not ask for alice
    checks = [{"permission": {"resource": "collection:%d" % i, "action": "search"}}
              for i in range(300)] + [{"permission": {"resource": "vault:1", "action": "open"}}]
    st, _, b = server.request("POST", "/api/auth/is-authorized/batch", {"checks": checks},
                              key=bob)
    assert st == 200 and len(b["data"]["results"]) == 301
    assert all(r["authorized"] for r in b["data"]["results"][:300])
    assert b["data"]["results"][300]["reason"] == "NO_MATCHING_PERMISSION_FOUND"
    st, _, b = server.request("POST", "/api/auth/is-authorized/batch",
                              {"checks": checks * 4}, key=bob)
    assert st == 400


def test_malformed_retrieve_changes_nothing(server):
    load(server, n=10)
    rev = server.request("GET", "/_cordon/health", key="")[2]["revision"]
    for body, typ in [({"query": {"vector": [1, 2]}}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "mode": "vector"}, "illegal_argument_exception"),
                      ({"query": {}, "mode": "vector"}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "k": 0}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "strategy": "fast"}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "bogus": 1}, "parsing_exception"),
                      ({"k": 3}, "parsing_exception"),
                      ({"query": {"text": "a"}, "min_revision": -1}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "ef": 0}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "ef": "64"}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "ef": 100001}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "max_candidates": -5}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "max_candidates": 2.5}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "mode": 1}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "strategy": ["exact"]}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "fusion": "rrf"}, "illegal_argument_exception"),
                      ({"query": {"text": "a"}, "fusion": {"method": 2}}, "illegal_argument_exception")]:
        st, _, b = server.request("POST", "/v1/collections/kb/retrieve", {"subject": "alice", **body})
        assert st == 400 and b["error"]["type"] == typ, (body, b)
        if body.get("query") == {}:  # names what is missing
            assert "needs query.vector" in b["error"]["reason"], b
        if body.get("query") == {"text": "a"} and len(body) == 2:  # names the wrong option
            name = next(k for k in body if k != "query")
            if name not in ("k", "strategy", "bogus", "min_revision") and body[name] != "vector":
                assert "[" + name in b["error"]["reason"], b
    assert server.request("GET", "/_cordon/health", key="")[2]["revision"] == rev
    _, _, alice = server.key_for("alice")
    st, _, b = server.request("POST", "/v1/collections/kb/retrieve",
                              {"subject": "bob", "query": {"text": "a"}}, key=alice)
    assert st == 403
    st, _, b = server.request("POST", "/v1/collections/nope/retrieve",
                              {"query": {"text": "a"}}, key=alice)
    assert st == 404 and b["error"]["type"] == "index_not_found_exception"


def test_misspelt_fields_are_refused_and_change_nothing(server):
    docs = load(server, n=10)
    hr_doc = next(d for d, x in docs.items() if x["groups"] == {"hr"})
    rev = server.request("GET", "/_cordon/health", key="")[2]["revision"]
    for method, path, body in [
            ("PUT", "/v1/collections/kb/acl",
             {"changes": [{"id": hr_doc, "allowed": ["hr"], "deny": ["user:bob"]}]}),
            ("PUT", "/v1/collections/kb/acl", {"changes": [], "dry_run": True}),
            ("PUT", "/v1/subjects/erin", {"atributes": {"level": 3}}),
            ("PUT", "/v1/groups/ops", {"member": ["alice"]}),
            ("POST", "/v1/groups/eng/members", {"added": ["bob"]}),
            ("PUT", "/v1/roles/reader", {"permission": [
                {"resource": "collection:kb", "action": "search"}]})]:
        st, _, b = server.request(method, path, body)
        assert st == 400 and b["error"]["type"] == "parsing_exception", (path, body, b)
    assert server.request("GET", "/_cordon/health", key="")[2]["revision"] == rev
    # bob still reads the chunk the misspelt "deny" named.
    st, _, x = server.request("POST", "/v1/explain", {"subject": "bob", "collection": "kb",
                                                      "id": hr_doc})
    assert st == 200 and x["readable"] is True


def test_is_authorized_scope_that_is_not_strings_is_invalid_scope(server):
    people_model(server)
    server.model({"op": "grant", "to": "carol", "permission": {"resource": "ledger:1",
                                                                "action": "read"},
                  "scope": {"type": "tenant", "id": "7"}})
    for scope in ({"type": "tenant", "id": 7}, {"type": 1, "id": 2}, {"tenant": 7}):
        st, _, b = server.request("POST", "/api/auth/is-authorized",
                                  {"subject": "carol", "scope": scope,
                                   "permission": {"resource": "ledger:1", "action": "read"}})
        assert st == 200 and b["data"]["reason"] == "INVALID_SCOPE", (scope, b)
        assert b["data"]["authorized"] is False and "message" in b["data"]
    st, _, b = server.request("POST", "/api/auth/is-authorized",
                              {"subject": "carol", "scope": {"type": "tenant", "id": "7"},
                               "permission": {"resource": "ledger:1", "action": "read"}})
    assert b["data"]["authorized"] is True


def test_several_operations_apply_all_or_none(server):
    """A route that becomes several model operations (a group's members replaced, an ops list
    to /_cordon/model) applies them as one change: when one fails nothing stays, and the
    revision does not move; when all succeed they take one revision."""
    server.model({"op": "put_subject", "id": "erin"}, {"op": "put_subject", "id": "frank"},
                 {"op": "put_group", "id": "ops"},
                 {"op": "add_member", "group": "ops", "member": "erin"},
                 {"op": "add_member", "group": "ops", "member": "frank"})
    rev = server.request("GET", "/_cordon/health", key="")[2]["revision"]
    before = server.request("GET", "/v1/model")[2]
    st, _, b = server.request("PUT", "/v1/groups/ops", {"members": ["erin", "nobody-here"]})
    assert st == 404 and "none of the 3 operations was applied" in b["error"]["reason"], b
    st, _, b = server.request("POST", "/_cordon/model", {"ops": [
        {"op": "remove_member", "group": "ops", "member": "frank"},
        {"op": "put_group", "id": "new"},
        {"op": "add_member", "group": "new", "member": "nobody"}]})
    assert st == 404 and b["error"]["reason"].startswith("ops[2]: "), b
    assert server.request("GET", "/_cordon/health", key="")[2]["revision"] == rev
    assert server.request("GET", "/v1/model")[2] == before  # frank still in ops, no group new
    st, _, b = server.request("PUT", "/v1/groups/ops", {"members": ["erin"]})
    assert st == 200 and b["revision"] == rev + 1, b
    st, _, b = server.request("POST", "/_cordon/model", {"ops": [
        {"op": "put_group", "id": "new"}, {"op": "add_member", "group": "new", "member": "frank"}]})
    assert st == 200 and b["revision"] == rev + 2, b
    st, _, view = server.request("GET", "/v1/subjects/frank/view")
    assert st == 200 and "group:new" in view["principals"] and "group:ops" not in view["principals"]


def test_retrieve_vector_read_from_the_text_matches_the_parsed_one(server):
    """retrieve and context read query.vector straight from the body's text; the answer must be
    the one the parsed body gives (the same vector written with an escaped key, which the
    text reader leaves to the parser), and bad vectors get the same errors."""
    load(server, n=60)
    rng = random.Random(5)
    for _ in range(5):
        vec = [rng.uniform(-1, 1) for _ in range(8)]
        plain = json.dumps({"subject": "alice", "query": {"vector": vec}, "k": 7,
                            "filter": {"exists": {"field": "text"}}})
        escaped = plain.replace('"vector"', '"vect\\u006fr"', 1)
        for route in ("retrieve", "context"):
            a = server.request("POST", f"/v1/collections/kb/{route}", raw=plain.encode())
            b = server.request("POST", f"/v1/collections/kb/{route}", raw=escaped.encode())
            assert a[0] == b[0] == 200, (a, b)
            assert [(h["id"], h["score"]) for h in a[2]["hits"]] == \
                [(h["id"], h["score"]) for h in b[2]["hits"]]
    for vec, says in (([1e39] + [0.0] * 7, "not a finite number"), ([0.5] * 7, "has 7 dimensions"),
                      ([0.5] * 9, "has 9 dimensions")):
        body = json.dumps({"subject": "alice", "query": {"vector": vec}})
        st, _, b = server.request("POST", "/v1/collections/kb/retrieve", raw=body.encode())
        assert st == 400 and b["error"]["type"] == "illegal_argument_exception", b
        assert says in b["error"]["reason"], b

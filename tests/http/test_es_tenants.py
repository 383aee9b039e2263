"""Tenants, labels and deny permissions through the wire: documents indexed with the
Elasticsearch API carry a tenant and labels (tenant_field, labels_field), subjects of the model
belong to tenants, a role granted within a tenant opens only that tenant's documents, a deny
on a label hides every document carrying it, and is-authorized reports an explicit deny. Every
read path is tried for a leak: _search, _count, GET _doc, _mget and /v1 retrieve."""
import json
import random

import pytest

from wire import Server

DIM = 4


@pytest.fixture
def tserver(tmp_path):
    conf = tmp_path / "serve.conf"
    conf.write_text("tenant_field = org\nlabels_field = labels\n")
    s = Server(str(tmp_path / "data"), extra_args=("--config", str(conf)))
    yield s
    assert s.stop() == 0, s.stderr


def model(server):
    server.model(
        {"op": "put_group", "id": "eng"}, {"op": "put_group", "id": "contractors"},
        {"op": "put_role", "id": "reader",
         "permissions": [{"resource": "collection:*", "action": "*"}]},
        {"op": "put_role", "id": "auditor", "permissions": []},
        {"op": "put_role", "id": "no-secret", "permissions": [
            {"resource": "label:secret", "action": "read", "effect": "deny"}]},
        {"op": "grant", "to": "eng", "to_kind": "group", "role": "reader"},
        {"op": "grant", "to": "contractors", "to_kind": "group", "role": "no-secret"},
        *[{"op": "put_subject", "id": who, "tenants": tenants}
          for who, tenants in (("alice", ["acme"]), ("bob", ["globex"]), ("carol", []),
                               ("dave", ["acme"]), ("erin", ["acme"]))],
        *[{"op": "add_member", "group": "eng", "member": who}
          for who in ("alice", "bob", "carol", "dave", "erin")],
        {"op": "add_member", "group": "contractors", "member": "dave"},
        {"op": "grant", "to": "erin", "role": "auditor",
         "scope": {"type": "tenant", "id": "acme"}})


DOCS = {  # id: (org, allowed, labels)
    "acme-eng": ("acme", ["eng"], []),
    "globex-eng": ("globex", ["eng"], []),
    "shared-eng": (None, ["eng"], []),
    "acme-secret": ("acme", ["eng"], ["secret"]),
    "shared-secret": (None, ["eng"], "secret"),  # one label as a plain string
    "acme-audit": ("acme", ["role:auditor"], []),
    "shared-audit": (None, ["role:auditor"], []),
}

EXPECT = {
    "alice": {"acme-eng", "acme-secret", "shared-eng", "shared-secret"},
    "bob": {"globex-eng", "shared-eng", "shared-secret"},
    "carol": {"shared-eng", "shared-secret"},
    "dave": {"acme-eng", "shared-eng"},
    "erin": {"acme-eng", "acme-secret", "shared-eng", "shared-secret", "acme-audit"},
}


def load(server):
    model(server)
    st, _, b = server.request("PUT", "/kb", {"mappings": {"properties": {
        "text": {"type": "text"},
        "emb": {"type": "dense_vector", "dims": DIM, "similarity": "l2_norm"}}}})
    assert st == 200, b
    lines = []
    for i, (doc, (org, allowed, labels)) in enumerate(sorted(DOCS.items())):
        src = {"text": "quarterly report", "emb": [float(i), 1.0, 0.0, 0.0],
               "allowed_groups": allowed, "labels": labels}
        if org:
            src["org"] = org
        lines += [{"index": {"_index": "kb", "_id": doc}}, src]
    raw = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    st, _, b = server.request("POST", "/_bulk?refresh=true", raw=raw,
                              headers={"Content-Type": "application/x-ndjson"})
    assert st == 200 and not b["errors"], b


def as_(server, who):
    return {"es-security-runas-user": who}


def test_every_read_path_keeps_the_tenant_wall_and_the_labels(tserver):
    load(tserver)
    for who, want in EXPECT.items():
        h = as_(tserver, who)
        st, _, b = tserver.request("POST", "/kb/_search",
                                   {"query": {"match": {"text": "report"}}, "size": 50}, headers=h)
        assert st == 200, b
        assert {x["_id"] for x in b["hits"]["hits"]} == want, who
        assert b["hits"]["total"]["value"] == len(want), who
        st, _, b = tserver.request("POST", "/kb/_search", {"knn": {
            "field": "emb", "query_vector": [0.0, 1.0, 0.0, 0.0], "k": 50,
            "num_candidates": 100}, "size": 50}, headers=h)
        assert st == 200, b
        assert {x["_id"] for x in b["hits"]["hits"]} == want, who
        st, _, b = tserver.request("POST", "/kb/_count", {"query": {"match_all": {}}}, headers=h)
        assert st == 200 and b["count"] == len(want), (who, b)
        st, _, b = tserver.request("POST", "/kb/_mget", {"ids": sorted(DOCS)}, headers=h)
        assert st == 200, b
        assert {d["_id"] for d in b["docs"] if d.get("found")} == want, who
        for doc in DOCS:
            st, _, b = tserver.request("GET", f"/kb/_doc/{doc}", headers=h)
            assert (st == 200) == (doc in want), (who, doc, st)
        st, _, b = tserver.request("POST", "/v1/collections/kb/retrieve", {
            "subject": who, "query": {"vector": [0.0, 1.0, 0.0, 0.0]}, "k": 50,
            "mode": "vector", "strategy": "exact"})
        assert st == 200, b
        assert {x["id"] for x in b["hits"]} == want, who
        assert b["readable"] == len(want), who


def test_model_changes_apply_to_the_next_request(tserver):
    load(tserver)
    h = as_(tserver, "bob")
    st, _, b = tserver.request("PUT", "/v1/subjects/bob", {"tenants": ["globex", "acme"]})
    assert st == 200, b
    st, _, b = tserver.request("GET", "/v1/subjects/bob/view")
    assert st == 200 and {"tenant:acme", "tenant:globex", "group:eng"} <= set(b["principals"]), b
    st, _, b = tserver.request("POST", "/kb/_count", {}, headers=h)
    assert b["count"] == len(EXPECT["bob"]) + 2  # acme-eng and acme-secret
    tserver.model({"op": "grant", "to": "bob", "permission": {
        "resource": "label:secret", "action": "*", "effect": "deny"}})
    st, _, b = tserver.request("POST", "/kb/_search", {"size": 50}, headers=h)
    assert {x["_id"] for x in b["hits"]["hits"]} == {"globex-eng", "shared-eng", "acme-eng"}
    # a deny on the collection hides it, and is-authorized names the deny
    tserver.model({"op": "grant", "to": "bob", "permission": {
        "resource": "collection:kb", "action": "search", "effect": "deny"}})
    st, _, b = tserver.request("POST", "/kb/_search", {}, headers=h)
    assert st == 404, b
    _, _, bob = tserver.key_for("bob")
    st, _, b = tserver.request("POST", "/api/auth/is-authorized", {
        "permission": {"resource": "collection:kb", "action": "search"}}, key=bob)
    assert st == 200 and b["data"]["authorized"] is False, b
    assert b["data"]["reason"] == "PERMISSION_DENIED_EXPLICITLY"
    assert b["data"]["matchedPermission"]["grantedTo"] == "user:bob"


def test_a_bad_tenant_or_label_is_refused_and_changes_nothing(tserver):
    load(tserver)
    for src in ({"text": "x", "emb": [0, 0, 0, 1], "allowed_groups": ["eng"], "org": "a b"},
                {"text": "x", "emb": [0, 0, 0, 1], "allowed_groups": ["eng"], "org": ["a", "b"]},
                {"text": "x", "emb": [0, 0, 0, 1], "allowed_groups": ["eng"], "labels": ["a:b"]},
                {"text": "x", "emb": [0, 0, 0, 1], "allowed_groups": ["eng"], "labels": [3]}):
        st, _, b = tserver.request("PUT", "/kb/_doc/bad", src)
        assert st == 400, (src, b)
        assert "error" in b
    st, _, b = tserver.request("POST", "/kb/_count", {}, headers=as_(tserver, "alice"))
    assert b["count"] == len(EXPECT["alice"])  # nothing was added


def test_the_leak_hunt_over_the_wire(tserver):
    """Random documents of three tenants with random labels, random subjects; each subject's
    _search must return exactly what a separate oracle says it may read."""
    rng = random.Random(1234)
    tenants, groups = ["t0", "t1", "t2"], ["g0", "g1", "g2"]
    subjects = {}
    ops = [{"op": "put_role", "id": "reader",
            "permissions": [{"resource": "collection:*", "action": "*"}]},
           {"op": "put_role", "id": "no-x", "permissions": [
               {"resource": "label:x", "action": "read", "effect": "deny"}]},
           {"op": "put_group", "id": "nox"},
           {"op": "grant", "to": "nox", "to_kind": "group", "role": "no-x"}]
    for g in groups:
        ops += [{"op": "put_group", "id": g},
                {"op": "grant", "to": g, "to_kind": "group", "role": "reader"}]
    for i in range(10):
        who = f"s{i}"
        mine = {"tenants": {t for t in tenants if rng.random() < 0.4},
                "groups": {rng.choice(groups)} | {g for g in groups if rng.random() < 0.3},
                "nox": rng.random() < 0.4}
        subjects[who] = mine
        ops.append({"op": "put_subject", "id": who, "tenants": sorted(mine["tenants"])})
        ops += [{"op": "add_member", "group": g, "member": who} for g in sorted(mine["groups"])]
        if mine["nox"]:
            ops.append({"op": "add_member", "group": "nox", "member": who})
    tserver.model(*ops)
    st, _, b = tserver.request("PUT", "/hunt", {"mappings": {"properties": {
        "text": {"type": "text"}}}})
    assert st == 200, b
    docs, lines = {}, []
    for i in range(80):
        d = {"tenant": rng.choice(tenants + [None]),
             "allowed": {g for g in groups if rng.random() < 0.4},
             "denied": {g for g in groups if rng.random() < 0.1},
             "labels": {"x"} if rng.random() < 0.3 else set()}
        docs[f"d{i}"] = d
        src = {"text": "hunt", "allowed_groups": sorted(d["allowed"]),
               "denied_groups": sorted(d["denied"]), "labels": sorted(d["labels"])}
        if d["tenant"]:
            src["org"] = d["tenant"]
        lines += [{"index": {"_index": "hunt", "_id": f"d{i}"}}, src]
    raw = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    st, _, b = tserver.request("POST", "/_bulk", raw=raw,
                               headers={"Content-Type": "application/x-ndjson"})
    assert st == 200 and not b["errors"], b

    def oracle(who, d):
        s = subjects[who]
        if d["tenant"] and d["tenant"] not in s["tenants"]:
            return False
        if d["denied"] & s["groups"] or (d["labels"] and s["nox"]):
            return False
        return bool(d["allowed"] & s["groups"])

    for who in subjects:
        want = {i for i, d in docs.items() if oracle(who, d)}
        st, _, b = tserver.request("POST", "/hunt/_search", {"size": 100},
                                   headers=as_(tserver, who))
        assert st == 200, b
        got = {x["_id"] for x in b["hits"]["hits"]}
        assert got == want, (who, sorted(got - want), sorted(want - got))

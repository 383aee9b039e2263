"""Collections that delegate to an outside authorizer: a real Cerbos server (npm
@cerbos/cerbos-linux-x64, started here on a policy written here) through its PlanResources
API, and a webhook in the shape of OPA's Data API served by this file. What must hold: every
read path returns exactly what Cerbos's own CheckResources allows among the chunks the model
lets the subject read (never more), kNN at the recall of native permissions, the cache's
age and TTL in every answer, fail closed (503, nothing read) when the service is down, slow or
answers nonsense, the model asked first, and a counter for every outcome."""
import json
import math
import os
import random
import socket
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from wire import ROOT, Server

CERBOS = os.path.join(ROOT, "tests/http/authorizers/node_modules/@cerbos/cerbos-linux-x64/"
                      "cerbos-linux-x64")
DIM = 8

POLICY = """apiVersion: api.cerbos.dev/v1
resourcePolicy:
  version: default
  resource: chunk
  rules:
    - actions: ["read"]
      effect: EFFECT_ALLOW
      roles: ["admin"]
    - actions: ["read"]
      effect: EFFECT_ALLOW
      roles: ["user"]
      condition:
        match:
          any:
            of:
              - expr: request.resource.attr.department == request.principal.attr.department
              - expr: request.resource.attr.owner == request.principal.id
              - expr: request.resource.attr.level < request.principal.attr.clearance
              - expr: hasIntersection(request.resource.attr.teams, request.principal.attr.teams)
              - expr: '"public" in request.resource.attr.tags'
    - actions: ["read"]
      effect: EFFECT_DENY
      roles: ["user"]
      condition:
        match:
          all:
            of:
              - expr: request.resource.attr.secret == true
              - expr: request.resource.attr.level >= 2
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def cerbos(tmp_path_factory):
    if not os.path.exists(CERBOS):
        pytest.skip("the Cerbos server is not installed (make deps installs npm "
                    "@cerbos/cerbos-linux-x64 into tests/http/authorizers)")
    d = tmp_path_factory.mktemp("cerbos")
    (d / "policies").mkdir()
    (d / "policies" / "chunk.yaml").write_text(POLICY)
    http_port, grpc_port = free_port(), free_port()
    (d / "conf.yaml").write_text(
        f"server:\n  httpListenAddr: \"127.0.0.1:{http_port}\"\n"
        f"  grpcListenAddr: \"127.0.0.1:{grpc_port}\"\n"
        f"storage:\n  driver: disk\n  disk:\n    directory: {d / 'policies'}\n")
    proc = subprocess.Popen([CERBOS, "server", f"--config={d / 'conf.yaml'}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{http_port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url + "/_cerbos/health", timeout=1).read()
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail("cerbos exited: " + proc.stderr.read().decode())
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("cerbos did not become healthy")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


class Webhook:
    """A policy service in the shape of OPA's Data API: POST /v1/data/cordon/read with
    {"input": ...} answers {"result": ...}; mode picks the answer."""

    def __init__(self):
        self.mode = "filter"
        self.asked = 0
        self.delay = 0.0
        hook = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(n))
                hook.asked += 1
                hook.last = body
                if hook.delay:
                    time.sleep(hook.delay)
                sub = body["input"]["subject"]
                if self.path != "/v1/data/cordon/read":
                    out, status = {}, 404
                elif hook.mode == "filter":
                    dept = sub["attributes"].get("department")
                    out, status = {"result": {"allow": dept is not None, "filter": {
                        "term": {"department": dept}}}}, 200
                elif hook.mode == "bool":
                    out, status = {"result": sub["id"] != "mallory"}, 200
                elif hook.mode == "undefined":
                    out, status = {}, 200
                elif hook.mode == "garbage":
                    out, status = {"result": {"allow": "yes"}}, 200
                else:
                    out, status = {"error": "boom"}, 500
                data = json.dumps(out).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hook():
    h = Webhook()
    yield h
    h.close()


def start(tmp_path, authorizers):
    f = tmp_path / "authorizers.json"
    f.write_text(json.dumps(authorizers))
    conf = tmp_path / "serve.conf"
    conf.write_text(f"authorizers_file = {f}\n")
    return Server(str(tmp_path / "data"), extra_args=("--config", str(conf)))


PEOPLE = {  # id: (attributes, groups, roles)
    "alice": ({"department": "eng", "teams": ["red"], "clearance": 2}, ["staff"], []),
    "bob": ({"department": "sales", "teams": ["blue", "green"], "clearance": 1}, ["staff"], []),
    "carol": ({"department": "legal", "teams": [], "clearance": 3}, ["staff"], ["admin"]),
    "dave": ({"department": "eng", "teams": ["green"], "clearance": 0}, ["staff"], []),
    "erin": ({"department": "eng", "teams": ["red"], "clearance": 5}, [], []),  # no staff
}


def people(server):
    ops = [{"op": "put_group", "id": "staff"}, {"op": "put_group", "id": "board"},
           {"op": "put_role", "id": "reader",
            "permissions": [{"resource": "collection:*", "action": "*"}]},
           {"op": "put_role", "id": "admin", "permissions": []},
           {"op": "grant", "to": "staff", "to_kind": "group", "role": "reader"},
           {"op": "grant", "to": "board", "to_kind": "group", "role": "reader"}]
    for who, (attrs, groups, roles) in PEOPLE.items():
        ops.append({"op": "put_subject", "id": who, "attributes": attrs})
        ops += [{"op": "add_member", "group": g, "member": who} for g in groups]
        ops += [{"op": "grant", "to": who, "role": r} for r in roles]
    server.model(*ops)


def docs(n, seed):
    rng = random.Random(seed)
    out = {}
    for i in range(n):
        out[f"d{i:03d}"] = {
            "department": rng.choice(["eng", "sales", "legal", "ops"]),
            "owner": rng.choice(list(PEOPLE) + ["zed"]),
            "level": rng.randrange(0, 5),
            "teams": rng.sample(["red", "blue", "green", "gold"], rng.randrange(0, 3)),
            "tags": rng.sample(["public", "draft", "hr"], rng.randrange(0, 2)),
            "secret": rng.random() < 0.3,
            # a few chunks only the board may read: the model's ACL still applies
            "allowed_groups": ["staff"] if rng.random() < 0.9 else ["board"],
            "emb": [rng.uniform(-1, 1) for _ in range(DIM)],
        }
    return out


MAPPING = {"properties": {
    "department": {"type": "keyword"}, "owner": {"type": "keyword"},
    "level": {"type": "integer"}, "teams": {"type": "keyword"}, "tags": {"type": "keyword"},
    "secret": {"type": "boolean"},
    "emb": {"type": "dense_vector", "dims": DIM, "similarity": "l2_norm"}}}


def load(server, index, authorizer, corpus):
    st, _, b = server.request("PUT", f"/{index}", {
        "settings": {"index": {"cordon": {"authorizer": authorizer}}}, "mappings": MAPPING})
    assert st == 200, b
    lines = []
    for i, src in corpus.items():
        lines += [{"index": {"_index": index, "_id": i}}, src]
    raw = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    st, _, b = server.request("POST", "/_bulk?refresh=true", raw=raw,
                              headers={"Content-Type": "application/x-ndjson"})
    assert st == 200 and not b["errors"], b


def cerbos_allows(url, who, corpus):
    """What Cerbos's own CheckResources answers for who on every chunk."""
    attrs, groups, roles = PEOPLE[who]
    principal = {"id": who, "roles": ["user"] + roles,
                 "attr": dict(attrs, groups=groups, tenants=[], collection="kb")}
    allowed = set()
    ids = sorted(corpus)
    for at in range(0, len(ids), 50):
        batch = ids[at:at + 50]
        res = post(url + "/api/check/resources", {"requestId": "t", "principal": principal,
                   "resources": [{"actions": ["read"], "resource": {
                       "kind": "chunk", "id": i, "attr": {
                           k: v for k, v in corpus[i].items()
                           if k not in ("emb", "allowed_groups")}}} for i in batch]})
        for r in res["results"]:
            if r["actions"]["read"] == "EFFECT_ALLOW":
                allowed.add(r["resource"]["id"])
    return allowed


def as_(who):
    return {"es-security-runas-user": who}


def test_cerbos_behind_a_collection_every_read_path(cerbos, tmp_path):
    s = start(tmp_path, [{"name": "cerbos", "kind": "cerbos", "url": cerbos, "ttl_ms": 60000}])
    try:
        people(s)
        corpus = docs(240, 7)
        load(s, "kb", "cerbos", corpus)
        checked = 0
        for who in PEOPLE:
            native = {i for i, d in corpus.items()
                      if set(d["allowed_groups"]) & set(PEOPLE[who][1])}
            want = cerbos_allows(cerbos, who, corpus) & native
            h = as_(who)
            st, _, b = s.request("POST", "/kb/_search",
                                 {"query": {"match_all": {}}, "size": 500}, headers=h)
            if who == "erin":  # outside the model's staff: the collection is not there at all
                assert st == 404, b
                continue
            assert st == 200, b
            got = {x["_id"] for x in b["hits"]["hits"]}
            assert got == want, (who, sorted(got - want), sorted(want - got))
            assert b["hits"]["total"]["value"] == len(want)
            assert b["authorizer"]["name"] == "cerbos" and b["authorizer"]["ttl_ms"] == 60000
            st, _, b = s.request("POST", "/kb/_count", {"query": {"match_all": {}}}, headers=h)
            assert st == 200 and b["count"] == len(want), (who, b)
            assert b["authorizer"]["cached"] is True  # the search asked already
            st, _, b = s.request("POST", "/kb/_mget", {"ids": sorted(corpus)}, headers=h)
            assert st == 200
            assert {d["_id"] for d in b["docs"] if d.get("found")} == want, who
            for i in sorted(corpus)[:60]:
                st, _, b = s.request("GET", f"/kb/_doc/{i}", headers=h)
                assert (st == 200) == (i in want), (who, i, st, b)
                if st == 200:
                    assert b["authorizer"]["name"] == "cerbos"
            # kNN: the exact top-10 among what may be read, as with native permissions
            q = [0.1 * (k + 1) for k in range(DIM)]
            st, _, b = s.request("POST", "/kb/_search", {"knn": {
                "field": "emb", "query_vector": q, "k": 10, "num_candidates": 100},
                "size": 10}, headers=h)
            assert st == 200, b
            exact = sorted(want, key=lambda i: (math.dist(corpus[i]["emb"], q), i))[:10]
            got = [x["_id"] for x in b["hits"]["hits"]]
            assert set(got) <= want
            assert len(set(got) & set(exact)) >= min(10, len(exact)) * 0.99, (who, got, exact)
            st, _, b = s.request("POST", "/v1/collections/kb/retrieve", {
                "subject": who, "query": {"vector": q}, "k": 10, "mode": "vector",
                "strategy": "exact"})
            assert st == 200, b
            assert [x["id"] for x in b["hits"]] == exact
            assert b["authorizer"]["name"] == "cerbos"
            checked += 1
        assert checked == 4
        # a user filter narrows further and the authorizer's filter still applies
        st, _, b = s.request("POST", "/kb/_search", {"query": {"bool": {"filter": [
            {"term": {"department": "ops"}}]}}, "size": 500}, headers=as_("bob"))
        assert st == 200
        for x in b["hits"]["hits"]:
            assert x["_source"]["department"] == "ops"
            assert x["_id"] in cerbos_allows(cerbos, "bob", corpus)
    finally:
        assert s.stop() == 0, s.stderr


def test_a_missing_attribute_never_opens_a_chunk(cerbos, tmp_path):
    """A chunk without `secret` or `level`: Cerbos's plan compares what is not there. cordon
    reads such a comparison as unknown (as SQL reads NULL), so neither a deny rule's negation
    nor an allow admits a chunk on the strength of a missing attribute, while a rule decided by
    the attributes present still decides."""
    s = start(tmp_path, [{"name": "cerbos", "kind": "cerbos", "url": cerbos}])
    try:
        people(s)
        corpus = {
            "full": {"department": "sales", "owner": "zed", "level": 0, "teams": [],
                     "tags": [], "secret": False, "allowed_groups": ["staff"]},
            # the deny rule (secret and level >= 2) is false whatever secret is: readable
            "no-secret-low": {"department": "sales", "owner": "zed", "level": 0, "teams": [],
                              "tags": [], "allowed_groups": ["staff"]},
            # the deny rule hangs on the missing secret: not readable (Cerbos's own check,
            # which skips a rule whose attribute is missing, would allow it)
            "no-secret-high": {"department": "sales", "owner": "zed", "level": 3, "teams": [],
                               "tags": [], "allowed_groups": ["staff"]},
            "no-level": {"department": "ops", "owner": "zed", "teams": [], "tags": [],
                         "secret": False, "allowed_groups": ["staff"]},
        }
        for i, d in enumerate(corpus.values()):
            d["emb"] = [float(i)] * DIM
        load(s, "kb", "cerbos", corpus)
        st, _, b = s.request("POST", "/kb/_search", {"query": {"match_all": {}}},
                             headers=as_("bob"))
        assert st == 200, b
        assert {x["_id"] for x in b["hits"]["hits"]} == {"full", "no-secret-low"}
        # carol is an admin in the model, and Cerbos allows admins everything
        st, _, b = s.request("POST", "/kb/_search", {"query": {"match_all": {}}},
                             headers=as_("carol"))
        assert {x["_id"] for x in b["hits"]["hits"]} == set(corpus)
    finally:
        assert s.stop() == 0, s.stderr


def test_cache_age_and_ttl_and_model_changes(hook, tmp_path):
    s = start(tmp_path, [{"name": "opa", "kind": "opa", "url": hook.url, "path": "cordon/read",
                          "ttl_ms": 1500}])
    try:
        people(s)
        load(s, "kb", "opa", docs(80, 3))
        h = as_("alice")
        st, _, b = s.request("POST", "/kb/_search", {"query": {"match_all": {}}, "size": 100},
                             headers=h)
        assert st == 200, b
        assert b["authorizer"] == {"name": "opa", "cached": False, "age_ms": 0, "ttl_ms": 1500}
        assert {x["_source"]["department"] for x in b["hits"]["hits"]} == {"eng"}
        asked = hook.asked
        assert hook.last["input"]["subject"]["groups"] == ["staff"]
        assert hook.last["input"]["collection"] == "kb"
        time.sleep(0.2)
        st, _, b = s.request("POST", "/kb/_search", {"query": {"match_all": {}}}, headers=h)
        assert b["authorizer"]["cached"] is True and 150 <= b["authorizer"]["age_ms"] < 1500
        assert hook.asked == asked
        # the model changes the question: a new answer at once, not the cached one
        s.model({"op": "put_subject", "id": "alice", "attributes": {"department": "sales"}})
        st, _, b = s.request("POST", "/kb/_search", {"query": {"match_all": {}}, "size": 100},
                             headers=h)
        assert b["authorizer"]["cached"] is False and hook.asked == asked + 1
        assert {x["_source"]["department"] for x in b["hits"]["hits"]} == {"sales"}
        # past the TTL the service is asked again
        time.sleep(1.6)
        st, _, b = s.request("POST", "/kb/_search", {"query": {"match_all": {}}}, headers=h)
        assert b["authorizer"]["cached"] is False and hook.asked == asked + 2
        # a subject the model keeps out is not asked about (and sees no collection)
        st, _, b = s.request("POST", "/kb/_search", {"query": {"match_all": {}}},
                             headers=as_("erin"))
        assert st == 404 and hook.asked == asked + 2
    finally:
        assert s.stop() == 0, s.stderr


def test_answers_of_every_shape(hook, tmp_path):
    s = start(tmp_path, [{"name": "opa", "kind": "opa", "url": hook.url, "path": "cordon/read",
                          "ttl_ms": 0}])
    try:
        people(s)
        corpus = docs(40, 5)
        load(s, "kb", "opa", corpus)
        staff = {i for i, d in corpus.items() if "staff" in d["allowed_groups"]}
        q = {"query": {"match_all": {}}, "size": 100}
        hook.mode = "bool"
        st, _, b = s.request("POST", "/kb/_search", q, headers=as_("bob"))
        assert {x["_id"] for x in b["hits"]["hits"]} == staff  # true: what the model allows
        assert b["authorizer"]["cached"] is False
        s.model({"op": "put_subject", "id": "mallory"},
                {"op": "add_member", "group": "staff", "member": "mallory"})
        st, _, b = s.request("POST", "/kb/_search", q, headers=as_("mallory"))
        assert st == 200 and b["hits"]["hits"] == []  # false: nothing
        hook.mode = "undefined"
        st, _, b = s.request("POST", "/kb/_search", q, headers=as_("bob"))
        assert st == 200 and b["hits"]["hits"] == []  # no result: the policy allowed nothing
        for mode in ("garbage", "error"):
            hook.mode = mode
            st, _, b = s.request("POST", "/kb/_search", q, headers=as_("bob"))
            assert st == 503, (mode, b)
            assert b["error"]["type"] == "authorizer_unavailable_exception"
            assert "hits" not in b
            st, _, b = s.request("GET", "/kb/_doc/" + sorted(staff)[0], headers=as_("bob"))
            assert st == 503, b
    finally:
        assert s.stop() == 0, s.stderr


def test_fail_closed_when_down_or_slow_and_counted(hook, tmp_path):
    dead = free_port()
    s = start(tmp_path, [
        {"name": "slow", "kind": "opa", "url": hook.url, "path": "cordon/read",
         "timeout_ms": 200, "ttl_ms": 0},
        {"name": "down", "kind": "cerbos", "url": f"http://127.0.0.1:{dead}"}])
    try:
        people(s)
        load(s, "slowkb", "slow", docs(20, 1))
        load(s, "downkb", "down", docs(20, 2))
        hook.delay = 1.0
        t0 = time.monotonic()
        st, _, b = s.request("POST", "/slowkb/_search", {"query": {"match_all": {}}},
                             headers=as_("alice"))
        assert st == 503 and b["error"]["type"] == "authorizer_unavailable_exception", b
        assert "slow" in b["error"]["reason"]
        assert time.monotonic() - t0 < 0.9  # the bound, not the service's pace
        hook.delay = 0
        st, _, b = s.request("POST", "/downkb/_search", {"query": {"match_all": {}}},
                             headers=as_("alice"))
        assert st == 503 and "down" in b["error"]["reason"], b
        st, _, b = s.request("POST", "/v1/collections/downkb/retrieve", {
            "subject": "alice", "query": {"vector": [0.0] * DIM}, "k": 5, "mode": "vector"})
        assert st == 503, b
        st, _, b = s.request("POST", "/slowkb/_search", {"query": {"match_all": {}}},
                             headers=as_("alice"))
        assert st == 200 and b["hits"]["hits"]
        st, _, text = s.request("GET", "/metrics")
        assert st == 200
        lines = {ln.rsplit(" ", 1)[0]: int(ln.rsplit(" ", 1)[1]) for ln in text.splitlines()
                 if ln.startswith("cordon_authorizer_answers_total{")}
        assert lines['cordon_authorizer_answers_total{authorizer="slow",outcome="timeout"}'] == 1
        assert lines['cordon_authorizer_answers_total{authorizer="slow",outcome="filtered"}'] == 1
        assert lines['cordon_authorizer_answers_total{authorizer="down",outcome="unavailable"}'] \
            == 2
    finally:
        assert s.stop() == 0, s.stderr


def test_configuration_errors_are_said(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"name": "x", "kind": "cerbos", "url": "ftp://h"}]))
    conf = tmp_path / "serve.conf"
    conf.write_text(f"authorizers_file = {bad}\n")
    binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
    p = subprocess.run([binary, "serve", "--data", str(tmp_path / "d"), "--listen",
                        "127.0.0.1:0", "--config", str(conf)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0 and "authorizers[0]: url must be" in p.stderr, p.stderr
    (tmp_path / "ok").mkdir()
    s = start(tmp_path / "ok", [])
    try:
        st, _, b = s.request("PUT", "/kb", {"settings": {"index.cordon.authorizer": "nobody"},
                                             "mappings": MAPPING})
        assert st == 400 and "authorizer" in b["error"]["reason"], b
        st, _, b = s.request("GET", "/kb")
        assert st == 404  # nothing was created
    finally:
        assert s.stop() == 0, s.stderr


def test_a_delegated_permission_is_decided_by_cerbos_and_the_webhook(cerbos, hook, tmp_path):
    """is-authorized: a permission carrying "authorizer" is asked of it only when nothing
    else in the model decides; Cerbos's CheckResources (resource kind: the resource's type)
    and the OPA-shaped service (input.resource) answer, the answer says who decided and how
    fresh; a deny in the model still wins, and a dead service denies."""
    s = start(tmp_path, [
        {"name": "cerbos", "kind": "cerbos", "url": cerbos, "ttl_ms": 60000},
        {"name": "opa", "kind": "opa", "url": hook.url, "path": "cordon/read", "ttl_ms": 0},
        {"name": "dead", "kind": "opa", "url": f"http://127.0.0.1:{free_port()}",
         "path": "x", "timeout_ms": 200}])
    try:
        people(s)
        s.model({"op": "put_role", "id": "chunk-reader", "permissions": [
                    {"resource": "chunk:*", "action": "read", "authorizer": "cerbos"},
                    {"resource": "ticket:*", "action": "close", "authorizer": "opa"},
                    {"resource": "vault:*", "action": "open", "authorizer": "dead"}]},
                {"op": "grant", "to": "staff", "to_kind": "group", "role": "chunk-reader"},
                {"op": "grant", "to": "bob", "permission": {
                    "resource": "chunk:pinned", "action": "read"}},
                {"op": "grant", "to": "alice", "permission": {
                    "resource": "chunk:banned", "action": "*", "effect": "deny"}})
        keys = {who: s.key_for(who)[2] for who in ("alice", "bob", "dave")}
        corpus = docs(30, 11)
        for who, key in keys.items():
            allowed = cerbos_allows(cerbos, who, corpus)
            for i, d in corpus.items():
                attrs = {k: v for k, v in d.items() if k not in ("emb", "allowed_groups")}
                st, _, b = s.request("POST", "/api/auth/is-authorized", {
                    "permission": {"resource": f"chunk:{i}", "action": "read"},
                    "context": {"resource": attrs}}, key=key)
                assert st == 200, b
                got = b["data"]
                assert got["authorized"] is (i in allowed), (who, i, got)
                assert got["reason"] == ("PERMISSION_GRANTED_BY_AUTHORIZER" if i in allowed
                                         else "PERMISSION_DENIED_BY_AUTHORIZER")
                assert got["authorizer"]["name"] == "cerbos"
                assert got["matchedPermission"]["resource"] == "chunk:*"
        # the model decides first: an unconditional allow is not asked about, a deny wins
        st, _, b = s.request("POST", "/api/auth/is-authorized", {
            "permission": {"resource": "chunk:pinned", "action": "read"}}, key=keys["bob"])
        assert b["data"]["reason"] == "PERMISSION_GRANTED_NO_CONDITION", b
        assert "authorizer" not in b["data"]
        st, _, b = s.request("POST", "/api/auth/is-authorized", {
            "permission": {"resource": "chunk:banned", "action": "read"},
            "context": {"resource": {"department": "eng"}}}, key=keys["alice"])
        assert b["data"]["reason"] == "PERMISSION_DENIED_EXPLICITLY", b
        # the webhook sees the resource and the context
        hook.mode = "bool"
        asked = hook.asked
        st, _, b = s.request("POST", "/api/auth/is-authorized", {
            "permission": {"resource": "ticket:9", "action": "close"},
            "context": {"resource": {"queue": "ops"}, "hour": 3}}, key=keys["dave"])
        assert b["data"]["authorized"] is True and hook.asked == asked + 1, b
        assert hook.last["input"]["resource"] == {"type": "ticket", "id": "9",
                                                 "attributes": {"queue": "ops"}}
        assert hook.last["input"]["context"]["hour"] == 3
        assert hook.last["input"]["action"] == "close"
        hook.mode = "undefined"
        st, _, b = s.request("POST", "/api/auth/is-authorized", {
            "permission": {"resource": "ticket:9", "action": "close"}}, key=keys["dave"])
        assert b["data"]["reason"] == "PERMISSION_DENIED_BY_AUTHORIZER", b
        st, _, b = s.request("POST", "/api/auth/is-authorized", {
            "permission": {"resource": "vault:1", "action": "open"}}, key=keys["dave"])
        assert st == 200 and b["data"]["authorized"] is False, b
        assert b["data"]["reason"] == "AUTHORIZER_UNAVAILABLE"
        # the batch asks each delegated decision
        hook.mode = "bool"
        st, _, b = s.request("POST", "/api/auth/is-authorized/batch", {
            "subject": "dave", "checks": [
                {"permission": {"resource": "ticket:1", "action": "close"}},
                {"permission": {"resource": "vault:2", "action": "open"}},
                {"permission": {"resource": "chunk:x", "action": "write"}}]})
        assert st == 200, b
        assert [r["reason"] for r in b["data"]["results"]] == [
            "PERMISSION_GRANTED_BY_AUTHORIZER", "AUTHORIZER_UNAVAILABLE",
            "NO_MATCHING_PERMISSION_FOUND"]
    finally:
        assert s.stop() == 0, s.stderr

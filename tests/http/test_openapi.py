"""The OpenAPI description against the server: GET /v1/openapi.json answers docs/api/openapi.json
byte for byte without a key, its paths are the route table's under /v1 and /api/auth (parsed
from src/http/router.c) and no other, and real answers of every route fit the schemas it gives
them, no undocumented field included. (tests/http/node/openapi.test.mjs validates the document
itself with an OpenAPI validator.)"""
import json
import os
import re
import urllib.request

from wire import ROOT, people_model

DOC = os.path.join(ROOT, "docs", "api", "openapi.json")
ROUTER = os.path.join(ROOT, "src", "http", "router.c")
ROUTE = re.compile(r'\{"(GET|HEAD|POST|PUT|PATCH|DELETE)", "(/[^"]*)", (\w+), ([01]), ([01])\}')


def routes():
    """(method, template, open) of every route in the table, in its order."""
    text = open(ROUTER).read()
    table = text[text.index("static const route_t routes[]"):]
    table = table[:table.index("};")]
    found = [(m, t, o == "1") for m, t, _, _, o in ROUTE.findall(table)]
    assert len(found) == table.count("{\"") > 50, "the route table's shape changed"
    return found


def shape(path):
    return re.sub(r"\{[^}]*\}", "{}", path)


def ours(path):
    return path.startswith("/v1/") or path.startswith("/api/auth/")


def operations(doc):
    for path, item in doc["paths"].items():
        for method, op in item.items():
            yield method.upper(), path, op


def test_served_without_a_key_byte_for_byte(server):
    raw = open(DOC, "rb").read()
    with urllib.request.urlopen(server.url + "/v1/openapi.json", timeout=30) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].split(";")[0] == "application/json"
        body = r.read()
    assert body == raw
    doc = json.loads(body)
    assert doc["openapi"].startswith("3.")


def test_paths_are_the_route_table_under_v1_and_api_auth():
    doc = json.load(open(DOC))
    table = {(m, shape(t)) for m, t, _ in routes() if ours(t)}
    described = {(m, shape(p)) for m, p, _ in operations(doc) if ours(p)}
    assert table - described == set(), "routes the document lacks"
    assert described - table == set(), "documented routes the server does not have"
    # The admin routes it describes exist too, and what needs no key says so.
    everything = {(m, shape(t)): o for m, t, o in routes()}
    for m, p, op in operations(doc):
        assert (m, shape(p)) in everything, (m, p)
        assert (op.get("security") == []) == everything[(m, shape(p))], (m, p)
        assert op["responses"] and op["operationId"]


# ---- Real answers against the documented schemas. ----

def deref(doc, node):
    while isinstance(node, dict) and "$ref" in node:
        target = doc
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def check(doc, schema, value, where, problems):
    """Appends to problems where value does not fit schema (the subset of OpenAPI 3.0 schemas
    docs/api/openapi.json uses; a response's object may not carry a field it does not
    describe)."""
    schema = deref(doc, schema)
    if value is None:
        if not schema.get("nullable") and "type" in schema:
            problems.append(f"{where}: null")
        return
    for sub in schema.get("allOf", []):
        check(doc, dict(deref(doc, sub), additionalProperties=True), value, where, problems)
    if "oneOf" in schema:
        fits = 0
        for sub in schema["oneOf"]:
            p = []
            check(doc, sub, value, where, p)
            fits += not p
        if fits != 1:
            problems.append(f"{where}: fits {fits} of oneOf")
    t = schema.get("type")
    if t == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif t == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif t:
        ok = isinstance(value, TYPES[t])
    else:
        ok = True
    if not ok:
        problems.append(f"{where}: {value!r} is not {t}")
        return
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} not in {schema['enum']}")
    if isinstance(value, dict) and t == "object":
        props = dict(schema.get("properties", {}))
        for sub in schema.get("allOf", []):
            props.update(deref(doc, sub).get("properties", {}))
        for k in schema.get("required", []):
            if k not in value:
                problems.append(f"{where}: no {k}")
        for k, v in value.items():
            if k in props:
                check(doc, props[k], v, f"{where}.{k}", problems)
            elif not schema.get("additionalProperties", False) and props:
                problems.append(f"{where}: undocumented field {k}")
    if isinstance(value, list) and "items" in schema:
        for n, v in enumerate(value):
            check(doc, schema["items"], v, f"{where}[{n}]", problems)


def conforms(doc, method, path, status, body):
    """Problems of one answer against the document's response for (method, path, status)."""
    for m, p, op in operations(doc):
        if m == method and re.fullmatch(re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(p)), path):
            assert str(status) in op["responses"], f"{method} {path}: {status} undocumented"
            resp = deref(doc, op["responses"][str(status)])
            schema = resp["content"]["application/json"]["schema"]
            problems = []
            check(doc, schema, body, f"{method} {path} {status}", problems)
            return problems
    raise AssertionError(f"{method} {path} is not documented")


def test_answers_fit_the_documented_schemas(server):
    doc = json.load(open(DOC))
    people_model(server)
    st, _, b = server.request("PUT", "/kb", {"mappings": {"properties": {
        "title": {"type": "text"}, "text": {"type": "text"}, "doc_id": {"type": "keyword"},
        "chunk": {"type": "integer"}, "emb": {"type": "dense_vector", "dims": 2}}}})
    assert st == 200, b
    lines = []
    for i, (text, groups) in enumerate([("alpha one", ["eng"]), ("alpha two", ["eng"]),
                                        ("beta", ["hr"])]):
        lines += [{"index": {"_index": "kb", "_id": f"c{i}"}},
                  {"title": "T", "text": text, "doc_id": "d", "chunk": i, "emb": [1, i + 1],
                   "allowed_groups": groups}]
    raw = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    st, _, b = server.request("POST", "/_bulk", raw=raw,
                              headers={"Content-Type": "application/x-ndjson"})
    assert st == 200 and not b["errors"]
    _, _, alice = server.key_for("alice")
    st, _, k = server.request("POST", "/_security/api_key",
                              {"name": "idp", "cordon": {"principals": ["group:eng"]}})
    idp = "ApiKey " + k["encoded"]
    calls = [
        ("POST", "/v1/collections/kb/retrieve", {"query": {"text": "alpha"}}, alice),
        ("POST", "/v1/collections/kb/retrieve",
         {"subject": "bob", "query": {"text": "beta", "vector": [1, 1]},
          "fusion": {"method": "linear"}, "fields": ["title"]}, None),
        ("POST", "/v1/collections/kb/retrieve", {"query": {"text": "a"}, "bogus": 1}, alice),
        ("POST", "/v1/collections/kb/retrieve", {"query": {"text": "a"}, "min_revision": 10**6},
         alice),
        ("POST", "/v1/collections/nope/retrieve", {"query": {"text": "a"}}, alice),
        ("POST", "/v1/collections/kb/context", {"query": {"text": "alpha"}}, alice),
        ("POST", "/v1/collections/kb/context", {"query": {"text": "alpha"}, "format": "json"},
         alice),
        ("PUT", "/v1/collections/kb/acl", {"changes": [{"id": "c2", "allowed": ["hr"]}]}, None),
        ("PUT", "/v1/subjects/erin", {"attributes": {"level": 1}}, None),
        ("PUT", "/v1/subjects/erin", {}, alice),
        ("PUT", "/v1/groups/ops", {"members": ["erin"]}, None),
        ("PUT", "/v1/groups/ops", {"members": ["group:ops"]}, None),
        ("POST", "/v1/groups/ops/members", {"add": ["alice"], "remove": ["erin"]}, None),
        ("PUT", "/v1/roles/reader", {"permissions": [{"resource": "collection:kb",
                                                      "action": "search"}]}, None),
        ("POST", "/v1/grants", {"to": "ops", "to_kind": "group", "role": "reader"}, None),
        ("GET", "/v1/grants", None, None),
        ("GET", "/v1/subjects/alice/view", None, alice),
        ("GET", "/v1/subjects/nobody/view", None, None),
        ("POST", "/v1/explain", {"subject": "bob", "collection": "kb", "id": "c0"}, None),
        ("GET", "/v1/model", None, None),
        ("POST", "/api/auth/is-authorized",
         {"permission": {"resource": "collection:kb", "action": "search"}}, alice),
        ("POST", "/api/auth/is-authorized", {"permission": {"resource": "x", "action": "y"},
                                             "context": [1]}, alice),
        ("POST", "/api/auth/is-authorized/batch",
         {"checks": [{"permission": {"resource": "collection:kb", "action": "search"}}]}, alice),
        ("POST", "/api/auth/is-authorized", "{not json", alice),
        ("POST", "/api/auth/is-authorized", {"subject": 5}, None),
        ("POST", "/api/auth/is-authorized/batch", {"checks": [{}] * 1001}, alice),
        ("POST", "/api/auth/is-authorized",
         {"permission": {"resource": "a:b", "action": "c"}}, idp),
        ("POST", "/_security/api_key", {"name": "k", "cordon": {"subject": "bob"}}, None),
        ("GET", "/_security/api_key", None, None),
        ("DELETE", "/_security/api_key", {"ids": ["k0000000000000000"]}, None),
        ("GET", "/_security/_authenticate", None, alice),
        ("GET", "/_cordon/model", None, None),
        ("POST", "/_cordon/model", {"op": "put_subject", "id": "zed"}, None),
        ("POST", "/_cordon/model", {"op": "put_subject", "id": "zed"}, alice),
        ("GET", "/_cordon/health", None, ""),
        ("GET", "/v1/model", None, ""),
        ("GET", "/v1/relationships/schema", None, None),
        ("POST", "/v1/relationships/check", {"subject": "user:a", "permission": "view",
                                             "object": "doc:1"}, None),
        ("PUT", "/v1/relationships/schema", {"types": {"user": {}, "doc": {
            "relations": {"viewer": ["user"]}, "permissions": {"view": "viewer"}}}}, None),
        ("GET", "/v1/relationships/schema", None, None),
        ("POST", "/v1/relationships", {"writes": ["doc:1#viewer@user:a", "doc:2#viewer@user:a"]},
         None),
        ("POST", "/v1/relationships", {"writes": ["doc:1#view@user:a"]}, None),
        ("POST", "/v1/relationships/check", {"subject": "user:a", "permission": "view",
                                             "object": "doc:1"}, None),
        ("POST", "/v1/relationships/check", {"subject": "user:a", "permission": "view",
                                             "object": "doc:1"}, alice),
        ("POST", "/v1/relationships/lookup-resources",
         {"subject": "user:a", "type": "doc", "permission": "view", "limit": 1}, None),
        ("POST", "/v1/relationships/lookup-subjects",
         {"object": "doc:1", "permission": "view", "subject_type": "user"}, None),
        ("POST", "/v1/relationships/expand", {"object": "doc:1", "permission": "view"}, None),
        ("PUT", "/v1/relationships/schema", {"types": {"user": {}}}, None),
    ]
    problems, statuses = [], set()
    for method, path, body, key in calls:
        raw = body.encode() if isinstance(body, str) else None
        st, _, b = server.request(method, path, None if raw else body, key=key, raw=raw)
        statuses.add(st)
        problems += conforms(doc, method, path, st, b)
    st, _, g = server.request("GET", "/v1/grants")
    gid = g["grants"][0]["id"]
    for path in ("/v1/grants/" + gid, "/v1/grants/" + gid, "/v1/roles/reader",
                 "/v1/groups/ops", "/v1/subjects/erin"):
        st, _, b = server.request("DELETE", path)
        statuses.add(st)
        problems += conforms(doc, "DELETE", path, st, b)
    assert problems == [], "\n".join(problems)
    assert {200, 400, 401, 403, 404, 409} <= statuses

"""Every error class of the Elasticsearch API answers with Elasticsearch's status and error
type, and changes nothing; a revocation is visible to the very next request."""
import json
import os
import subprocess

from wire import ROOT, people_model

MAPPING = {"mappings": {"properties": {
    "title": {"type": "text"}, "n": {"type": "long"},
    "emb": {"type": "dense_vector", "dims": 3, "similarity": "cosine"}}}}


def make_docs(server):
    people_model(server)
    st, _, b = server.request("PUT", "/docs", MAPPING)
    assert st == 200, b
    st, _, b = server.request("PUT", "/docs/_doc/1", {
        "title": "first", "n": 1, "emb": [1, 0, 0], "allowed_groups": ["eng"]})
    assert st == 201, b


def count_as(server, who):
    st, _, b = server.request("POST", "/docs/_count", {}, headers={"es-security-runas-user": who})
    assert st == 200, b
    return b["count"]


def err_type(body):
    return body["error"]["type"]


def test_auth_errors(server):
    make_docs(server)
    st, h, b = server.request("GET", "/", key="")
    assert st == 401 and err_type(b) == "security_exception"
    assert "ApiKey" in h.get("WWW-Authenticate", "")
    assert h.get("X-Elastic-Product") == "Elasticsearch"
    st, _, b = server.request("GET", "/", key="ApiKey bm9wZTpub3BlLW5vcGUtbm9wZS1ub3Bl")
    assert st == 401 and err_type(b) == "security_exception"
    st, _, b = server.request("GET", "/", key="Garbage")
    assert st == 401
    # A key bound to alice may not run as bob.
    _, _, alice = server.key_for("alice")
    st, _, b = server.request("POST", "/docs/_search", {}, key=alice,
                              headers={"es-security-runas-user": "bob"})
    assert st == 403 and err_type(b) == "security_exception"
    # An admin key without a subject reads nothing without run-as.
    st, _, b = server.request("POST", "/docs/_search", {})
    assert st == 403 and err_type(b) == "security_exception"


def test_revoked_key_denied_next_request(server):
    """The server remembers a key's verified secret: revoking it over HTTP, or with the CLI
    from another process, still denies the very next request."""
    make_docs(server)
    kid, _, alice = server.key_for("alice")
    for _ in range(3):
        st, _, _ = server.request("POST", "/docs/_search", {}, key=alice)
        assert st == 200
    st, _, b = server.request("DELETE", "/_security/api_key", {"ids": [kid]})
    assert st == 200 and b["invalidated_api_keys"] == [kid]
    st, _, b = server.request("POST", "/docs/_search", {}, key=alice)
    assert st == 401
    kid2, _, alice2 = server.key_for("alice", name="second")
    for _ in range(3):
        st, _, _ = server.request("POST", "/docs/_search", {}, key=alice2)
        assert st == 200
    binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
    subprocess.run([binary, "keys", "revoke", "--data", server.data, kid2], check=True,
                   capture_output=True)
    st, _, b = server.request("POST", "/docs/_search", {}, key=alice2)
    assert st == 401


def test_bad_requests_change_nothing(server):
    make_docs(server)
    before = count_as(server, "alice")
    cases = [
        ("PUT", "/docs/_doc/2", b'{"title": "x", ', "parsing_exception", 400),
        ("PUT", "/docs/_doc/2", json.dumps({"title": "x", "emb": [1, 0],
                                            "allowed_groups": ["eng"]}).encode(),
         "mapper_parsing_exception", 400),
        ("PUT", "/docs/_doc/2", json.dumps({"title": "x", "n": "many", "emb": [1, 0, 0],
                                            "allowed_groups": ["eng"]}).encode(),
         "mapper_parsing_exception", 400),
        ("PUT", "/docs/_doc/3", json.dumps({"title": "x", "emb": [1, 0, 0], "emb.sub": "y",
                                            "allowed_groups": ["eng"]}).encode(),
         "mapper_parsing_exception", 400),
        ("PUT", "/docs/_create/1", json.dumps({"title": "again", "emb": [0, 1, 0],
                                               "allowed_groups": ["eng"]}).encode(),
         "version_conflict_engine_exception", 409),
        ("POST", "/docs/_search", json.dumps({"query": {"match": {"title": "x"}},
                                              "bogus": 1}).encode(), "parsing_exception", 400),
        ("POST", "/docs/_search", json.dumps({"from": 9995, "size": 10}).encode(),
         "illegal_argument_exception", 400),
        ("POST", "/docs/_search", json.dumps({"knn": {"field": "emb", "query_vector": [1, 0],
                                                      "k": 3}}).encode(),
         "illegal_argument_exception", 400),
        ("POST", "/docs/_search", ("[" * 200 + "]" * 200).encode(),
         "x_content_parse_exception", 400),
        ("GET", "/nosuch/_search", b"{}", "index_not_found_exception", 404),
        ("DELETE", "/_cat/indices", b"", "method_not_allowed", 405),
        ("GET", "/_nonsense/route", b"", "illegal_argument_exception", 400),
        # found by fuzzing: a query type cordon lacks was a 500, a path or argument that is
        # not UTF-8 once decoded a 500 ("out of memory"), an _mget without docs leaked memory
        ("POST", "/docs/_search", json.dumps({"query": {"m*tch": {"title": "x"}}}).encode(),
         "parsing_exception", 400),
        ("GET", "/docs/_doc/1%ff%fe", b"", "illegal_argument_exception", 400),
        ("GET", "/docs/_doc/1?_source_includes=%c3%28", b"", "illegal_argument_exception", 400),
        ("POST", "/_mget", json.dumps({"docn": [{"_index": "docs"}]}).encode(),
         "action_request_validation_exception", 400),
        ("POST", "/_mget", json.dumps({"docs": [{"_index": "docs"}]}).encode(),
         "action_request_validation_exception", 400),
    ]
    for method, path, raw, typ, status in cases:
        st, h, b = server.request(method, path, raw=raw,
                                  headers={"es-security-runas-user": "alice"})
        assert st == status, (path, st, b)
        assert err_type(b) == typ, (path, b)
        assert h.get("X-Elastic-Product") == "Elasticsearch"
    assert count_as(server, "alice") == before
    st, _, b = server.request("GET", "/docs/_doc/1", headers={"es-security-runas-user": "alice"})
    assert b["_source"]["title"] == "first"


def test_ids_starting_with_underscore_route_as_ids(server):
    """One _bulk-generated id in 64 starts with '_': it must read, update and delete as an id
    (only index names may not start with '_')."""
    make_docs(server)
    alice = {"es-security-runas-user": "alice"}
    st, _, b = server.request("PUT", "/docs/_doc/_u1", {"title": "under", "n": 2, "emb": [0, 1, 0],
                                                        "allowed_groups": ["eng"]})
    assert st == 201, b
    st, _, b = server.request("GET", "/docs/_doc/_u1", headers=alice)
    assert st == 200 and b["_id"] == "_u1" and b["_source"]["title"] == "under", b
    st, _, b = server.request("POST", "/docs/_update/_u1", {"doc": {"n": 3}})
    assert st == 200, b
    st, _, b = server.request("DELETE", "/docs/_doc/_u1")
    assert st == 200 and b["result"] == "deleted", b
    st, _, b = server.request("GET", "/docs/_doc/_u1", headers=alice)
    assert st == 404 and b["found"] is False, b


def test_vector_path_longer_than_a_name_is_refused_not_cut(server):
    mapping = {"mappings": {"properties": {"a" * 100: {"properties": {
        "e" * 40: {"type": "dense_vector", "dims": 3}}}}}}
    st, _, b = server.request("PUT", "/long", mapping)
    assert st == 400 and err_type(b) == "mapper_parsing_exception", b
    assert "longer than 128 bytes" in b["error"]["reason"]
    st, _, _ = server.request("GET", "/long")
    assert st == 404


def test_body_over_limit_is_413(tmp_path):
    from wire import Server
    cfg = tmp_path / "server.conf"
    cfg.write_text("max_body_bytes = 1kb\n")
    s = Server(str(tmp_path / "data"), extra_args=("--config", str(cfg)))
    try:
        st, _, b = s.request("PUT", "/big", raw=b'{"a": "' + b"x" * 5000 + b'"}')
        assert st == 413 and err_type(b) == "content_too_long_exception"
        st, _, b = s.request("GET", "/big")
        assert st == 404
    finally:
        assert s.stop() == 0


def test_hidden_index_reads_as_missing(server):
    make_docs(server)
    server.model({"op": "put_subject", "id": "eve"})
    _, _, eve = server.key_for("eve")
    st, _, hidden = server.request("GET", "/docs/_search", {}, key=eve)
    st2, _, missing = server.request("GET", "/nosuch/_search", {}, key=eve)
    assert st == st2 == 404
    assert hidden["error"]["type"] == missing["error"]["type"] == "index_not_found_exception"
    st, _, b = server.request("GET", "/docs/_doc/1", key=eve)
    assert st == 404


def test_hidden_doc_is_404_like_missing(server):
    make_docs(server)
    st, _, b = server.request("GET", "/docs/_doc/1", headers={"es-security-runas-user": "bob"})
    st2, _, b2 = server.request("GET", "/docs/_doc/404", headers={"es-security-runas-user": "bob"})
    assert st == st2 == 404 and b["found"] is False and b2["found"] is False


def test_revocation_visible_to_next_request(server):
    make_docs(server)
    # alice may search on her own too, so losing eng leaves her the index but not the document.
    server.model({"op": "grant", "to": "alice",
                  "permission": {"resource": "collection:docs", "action": "search"}})
    assert count_as(server, "alice") == 1
    server.model({"op": "remove_member", "group": "eng", "member": "alice"})
    assert count_as(server, "alice") == 0
    st, _, b = server.request("POST", "/docs/_search", {"query": {"match_all": {}}},
                              headers={"es-security-runas-user": "alice"})
    assert st == 200 and b["hits"]["hits"] == [] and b["hits"]["total"]["value"] == 0
    # carol loses eng and holds nothing else: the index itself disappears for her.
    server.model({"op": "remove_member", "group": "eng", "member": "carol"})
    st, _, b = server.request("POST", "/docs/_count", {}, headers={"es-security-runas-user": "carol"})
    assert st == 404 and b["error"]["type"] == "index_not_found_exception"


def test_sigterm_exits_zero_and_data_survives(tmp_path):
    from wire import Server
    s = Server(str(tmp_path / "data"))
    people_model(s)
    st, _, _ = s.request("PUT", "/docs", MAPPING)
    st, _, b = s.request("PUT", "/docs/_doc/1", {"title": "kept", "emb": [1, 0, 0],
                                                 "allowed_groups": ["eng"]})
    assert st == 201
    assert s.stop() == 0
    s = Server(str(tmp_path / "data"))
    try:
        assert count_as(s, "alice") == 1
    finally:
        assert s.stop() == 0


def test_a_second_server_on_the_same_directory_is_refused(tmp_path):
    """Two engines on one directory would each answer from indexes missing the other's writes:
    the second exits 1 naming the first's process, and the first goes on serving."""
    from wire import Server
    s = Server(str(tmp_path / "data"))
    try:
        make_docs(s)
        binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
        p = subprocess.run([binary, "serve", "--data", str(tmp_path / "data"), "--listen",
                            "127.0.0.1:0"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 1
        assert f"is open in another cordon (process {s.proc.pid})" in p.stderr, p.stderr
        assert count_as(s, "alice") == 1
    finally:
        assert s.stop() == 0


def test_metrics_pass_promtool(server):
    import shutil
    import subprocess
    import pytest
    make_docs(server)
    server.request("POST", "/docs/_search", {"query": {"match": {"title": "first"}}},
                   headers={"es-security-runas-user": "alice"})
    _, _, alice = server.key_for("alice")
    st, _, _ = server.request("GET", "/metrics", key=alice)
    assert st == 403
    st, h, text = server.request("GET", "/metrics")
    assert st == 200 and h["Content-Type"].startswith("text/plain")
    assert 'cordon_http_requests_total{route="POST /{index}/_search",status="200"} 1' in text
    assert "cordon_search_plans_total" in text and "cordon_revision" in text
    if not shutil.which("promtool"):
        pytest.skip("promtool is not installed (Debian package prometheus)")
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_principal_keys_on_asserted_index(server):
    st, _, b = server.request("PUT", "/ext", {
        "settings": {"index": {"cordon": {"asserted_principals": True}}},
        "mappings": {"properties": {"t": {"type": "text"}}}})
    assert st == 200, b
    for i, groups in enumerate([["eng"], ["hr"], ["eng", "hr"]]):
        st, _, b = server.request("PUT", f"/ext/_doc/{i}", {"t": "w", "allowed_groups": groups})
        assert st == 201, b
    st, _, k = server.request("POST", "/_security/api_key",
                              {"name": "idp", "cordon": {"principals": ["group:hr"]}})
    assert st == 200, k
    key = "ApiKey " + k["encoded"]
    st, _, r = server.request("POST", "/ext/_search", {"query": {"match": {"t": "w"}}}, key=key)
    assert st == 200 and sorted(h["_id"] for h in r["hits"]["hits"]) == ["1", "2"]
    # The same key on an index of the model's subjects: missing.
    st, _, _ = server.request("PUT", "/plain", {"mappings": {"properties": {"t": {"type": "text"}}}})
    st, _, r = server.request("POST", "/plain/_search", {}, key=key)
    assert st == 404 and r["error"]["type"] == "index_not_found_exception"
    # And it may not write.
    st, _, r = server.request("PUT", "/ext/_doc/9", {"t": "w", "allowed_groups": ["hr"]}, key=key)
    assert st in (403, 404)

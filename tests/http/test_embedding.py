"""Query-time embedding through an OpenAI-compatible endpoint: query text drives kNN and hybrid
in /v1 retrieve and in _search's knn.query_vector_builder; an endpoint that is down, slow or
answers the wrong dimension fails the search with 502 naming it, never a silent text-only
answer. The endpoint here is a small stand-in speaking the protocol (the local embedder has
its own tests)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from wire import people_model

VECS = {"north": [1.0, 0.0, 0.0], "east": [0.0, 1.0, 0.0], "up": [0.0, 0.0, 1.0]}


class Fake(BaseHTTPRequestHandler):
    dim = 3
    calls = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Fake.calls.append(body)
        text = body["input"] if isinstance(body["input"], str) else body["input"][0]
        vec = VECS.get(text.split()[0], [0.5, 0.5, 0.5])[:Fake.dim] + [0.0] * max(0, Fake.dim - 3)
        out = json.dumps({"object": "list", "data": [{"object": "embedding", "index": 0,
                                                      "embedding": vec}], "model": "fake"})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out.encode())

    def log_message(self, *a):
        pass


@pytest.fixture
def endpoint():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    Fake.dim = 3
    Fake.calls = []
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1/embeddings"
    srv.shutdown()


def load(server, url):
    people_model(server)
    st, _, b = server.request("PUT", "/emb", {
        "settings": {"index": {"cordon": {"embedding_url": url, "embedding_model": "fake",
                                          "embedding_timeout_ms": 3000}}},
        "mappings": {"properties": {"text": {"type": "text"},
                                    "v": {"type": "dense_vector", "dims": 3}}}})
    assert st == 200, b
    for i, (word, vec) in enumerate(VECS.items()):
        for groups in (["eng"], ["hr"]):
            st, _, b = server.request("PUT", f"/emb/_doc/{word}-{groups[0]}", {
                "text": f"{word} wind", "v": vec, "allowed_groups": groups})
            assert st == 201, b


def test_text_drives_knn_and_hybrid(server, endpoint):
    load(server, endpoint)
    st, _, r = server.request("POST", "/v1/collections/emb/retrieve", {
        "subject": "alice", "query": {"text": "east please"}, "mode": "vector", "k": 1,
        "strategy": "exact"})
    assert st == 200, r
    assert [h["id"] for h in r["hits"]] == ["east-eng"]
    assert Fake.calls[-1] == {"input": "east please", "model": "fake"}
    st, _, r = server.request("POST", "/v1/collections/emb/retrieve", {
        "subject": "bob", "query": {"text": "up wind"}, "k": 3})
    assert st == 200 and r["hits"][0]["id"] == "up-hr", r
    assert all(h["id"].endswith("-hr") for h in r["hits"])
    st, _, r = server.request("POST", "/emb/_search", {"knn": {
        "field": "v", "k": 1, "num_candidates": 10,
        "query_vector_builder": {"text_embedding": {"model_id": "x", "model_text": "north"}}}},
        headers={"es-security-runas-user": "alice"})
    assert st == 200 and [h["_id"] for h in r["hits"]["hits"]] == ["north-eng"], r


def test_endpoint_failures_are_502(server, endpoint):
    load(server, endpoint)
    Fake.dim = 4
    st, _, r = server.request("POST", "/v1/collections/emb/retrieve", {
        "subject": "alice", "query": {"text": "east"}, "mode": "vector"})
    assert st == 502 and r["error"]["type"] == "embedding_endpoint_exception"
    assert "4 dimensions" in r["error"]["reason"] and "127.0.0.1" in r["error"]["reason"]
    # A text-only search does not need the endpoint and still works.
    st, _, r = server.request("POST", "/v1/collections/emb/retrieve", {
        "subject": "alice", "query": {"text": "east"}, "mode": "text"})
    assert st == 200 and r["hits"]


def test_endpoint_down_is_502(server):
    load(server, "http://127.0.0.1:9/v1/embeddings")
    st, _, r = server.request("POST", "/v1/collections/emb/retrieve", {
        "subject": "alice", "query": {"text": "east"}, "mode": "hybrid"})
    assert st == 502 and "did not answer" in r["error"]["reason"], r
    st, _, r = server.request("POST", "/emb/_search", {"knn": {
        "field": "v", "k": 1, "query_vector_builder": {"text_embedding": {"model_text": "x"}}}},
        headers={"es-security-runas-user": "alice"})
    assert st == 502


def test_no_endpoint_named_is_400(server):
    people_model(server)
    st, _, _ = server.request("PUT", "/plain", {"mappings": {"properties": {
        "text": {"type": "text"}, "v": {"type": "dense_vector", "dims": 3}}}})
    st, _, r = server.request("POST", "/v1/collections/plain/retrieve", {
        "subject": "alice", "query": {"text": "east"}, "mode": "vector"})
    assert st == 400 and "embedding" in r["error"]["reason"]

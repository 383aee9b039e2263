"""Embedding documents at ingest (index.cordon.embed_documents, off by default): documents that
arrive through _bulk or _doc without a vector get one from the index's endpoint, a batch of
texts a call; those that arrive with one are not sent; when the endpoint fails, the documents it
was to embed fail with 502 and nothing of them is stored, while the others go in. The endpoint
is a small stand-in speaking the OpenAI protocol with array inputs."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from wire import people_model

ALICE = {"es-security-runas-user": "alice"}
WORDS = {"north": [1.0, 0.0, 0.0], "east": [0.0, 1.0, 0.0], "up": [0.0, 0.0, 1.0]}


class Endpoint(BaseHTTPRequestHandler):
    calls = []
    fail = False

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Endpoint.calls.append(body)
        if Endpoint.fail:
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        # Answered in reverse order with their indexes, as the protocol allows.
        data = [{"object": "embedding", "index": i,
                 "embedding": WORDS.get(t.split()[0], [0.5, 0.5, 0.5])}
                for i, t in reversed(list(enumerate(texts)))]
        out = json.dumps({"object": "list", "data": data, "model": "fake"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


@pytest.fixture
def endpoint():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Endpoint.calls, Endpoint.fail = [], False
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1/embeddings"
    srv.shutdown()


def make_index(server, url, embed=True, **extra):
    people_model(server)
    cordon = {"embedding_url": url, "embedding_model": "fake", **extra}
    if embed:
        cordon["embed_documents"] = True
    return server.request("PUT", "/ing", {
        "settings": {"index": {"cordon": cordon}},
        "mappings": {"properties": {"title": {"type": "text"}, "text": {"type": "text"},
                                    "v": {"type": "dense_vector", "dims": 3}}}})


def bulk(server, docs):
    lines = []
    for i, d in docs:
        lines += [json.dumps({"index": {"_index": "ing", "_id": i}}), json.dumps(d)]
    st, _, b = server.request("POST", "/_bulk", raw=("\n".join(lines) + "\n").encode(),
                              headers={"Content-Type": "application/x-ndjson"})
    assert st == 200, b
    return b


def knn(server, vec, k=200):
    st, _, b = server.request("POST", "/ing/_search", {
        "knn": {"field": "v", "query_vector": vec, "k": k, "num_candidates": k}, "size": k},
        headers=ALICE)
    assert st == 200, b
    return b["hits"]["hits"]


def test_bulk_embeds_what_arrives_without_a_vector(server, endpoint):
    st, _, b = make_index(server, endpoint)
    assert st == 200, b
    docs = [(f"d{i}", {"title": w, "text": f"{w} wind {i}", "allowed_groups": ["eng"]})
            for i, w in enumerate(list(WORDS) * 50)]  # 150 without a vector
    docs.append(("given", {"text": "north given", "v": [0.0, 0.0, 1.0],
                           "allowed_groups": ["eng"]}))
    b = bulk(server, docs)
    assert not b["errors"], b
    sent = [t for c in Endpoint.calls for t in c["input"]]
    assert len(sent) == 150 and all(len(c["input"]) <= 64 for c in Endpoint.calls)
    assert len(Endpoint.calls) == 3  # 64 + 64 + 22: a batch of texts a call
    assert "north given" not in sent  # it came with its vector
    assert sent[0] == "north\nnorth wind 0"  # every text field, a line each, in mapping order
    # Each document got the vector of its own text (the answers came back reversed).
    hits = knn(server, WORDS["east"])
    best = [h["_id"] for h in hits if h["_score"] > 0.99]
    assert sorted(best) == sorted(i for i, d in docs[:150] if d["title"] == "east")
    assert {h["_id"] for h in knn(server, WORDS["up"]) if h["_score"] > 0.99} >= {"given"}
    # The vector is part of the stored document, as an inference pipeline leaves it.
    st, _, g = server.request("GET", "/ing/_doc/d1", headers=ALICE)
    assert st == 200 and g["_source"]["v"] == WORDS["east"], g


def test_doc_put_embeds_and_embed_fields_choose_the_text(server, endpoint):
    st, _, b = make_index(server, endpoint, embed_fields=["title"])
    assert st == 200, b
    st, _, b = server.request("PUT", "/ing/_doc/one", {"title": "up there", "text": "north",
                                                       "allowed_groups": ["eng"]})
    assert st in (200, 201), b
    assert Endpoint.calls[-1]["input"] == "up there"  # one text goes as a string
    assert [h["_id"] for h in knn(server, WORDS["up"], 1)] == ["one"]


def test_endpoint_failure_fails_those_documents_only(server, endpoint):
    st, _, b = make_index(server, endpoint)
    assert st == 200, b
    Endpoint.fail = True
    b = bulk(server, [("a", {"text": "north a", "allowed_groups": ["eng"]}),
                      ("b", {"text": "east b", "v": [0.0, 1.0, 0.0], "allowed_groups": ["eng"]}),
                      ("c", {"text": "up c", "allowed_groups": ["eng"]})])
    assert b["errors"] is True
    by_id = {list(it.values())[0]["_id"]: list(it.values())[0] for it in b["items"]}
    for i in ("a", "c"):
        assert by_id[i]["status"] == 502, by_id[i]
        assert by_id[i]["error"]["type"] == "embedding_endpoint_exception"
        assert "/v1/embeddings" in by_id[i]["error"]["reason"]  # names the endpoint
    assert by_id["b"]["status"] == 201
    for i, found in (("a", False), ("b", True), ("c", False)):
        st, _, g = server.request("GET", f"/ing/_doc/{i}", headers=ALICE)
        assert (st == 200) == found, (i, g)
    st, _, b = server.request("PUT", "/ing/_doc/d", {"text": "north d", "allowed_groups": ["eng"]})
    assert st == 502 and b["error"]["type"] == "embedding_endpoint_exception", b
    assert server.request("GET", "/ing/_doc/d", headers=ALICE)[0] == 404


def test_off_by_default(server, endpoint):
    """Without embed_documents a document without its vector is refused, as before."""
    st, _, b = make_index(server, endpoint, embed=False)
    assert st == 200, b
    b = bulk(server, [("a", {"text": "north a", "allowed_groups": ["eng"]})])
    item = b["items"][0]["index"]
    assert item["status"] == 400 and item["error"]["type"] == "mapper_parsing_exception", item
    assert Endpoint.calls == []
    assert server.request("GET", "/ing/_doc/a", headers=ALICE)[0] == 404


@pytest.mark.parametrize("cordon, says", [
    ({"embed_documents": True}, "embedding_url"),
    ({"embed_documents": "yes", "embedding_url": "http://127.0.0.1:9/v1/embeddings"},
     "true or false"),
    ({"embed_documents": True, "embedding_url": "http://127.0.0.1:9/v1/embeddings",
      "embed_fields": "title"}, "list of field names"),
])
def test_bad_embed_settings_are_refused(server, cordon, says):
    st, _, b = server.request("PUT", "/bad", {"settings": {"index": {"cordon": cordon}},
                                             "mappings": {"properties": {
                                                 "v": {"type": "dense_vector", "dims": 3}}}})
    assert st == 400 and b["error"]["type"] == "illegal_argument_exception", b
    assert says in b["error"]["reason"], b
    assert server.request("HEAD", "/bad")[0] == 404

"""_source filtering of search hits and gets: what each spec shows, the vector included only
when the spec keeps it (the server skips rendering a vector that the spec drops)."""
from wire import people_model

MAPPING = {"mappings": {"properties": {
    "title": {"type": "text"}, "tag": {"type": "keyword"},
    "emb": {"type": "dense_vector", "dims": 3, "similarity": "cosine"}}}}


def setup_docs(server):
    people_model(server)
    st, _, b = server.request("PUT", "/docs", MAPPING)
    assert st == 200, b
    st, _, b = server.request("PUT", "/docs/_doc/1", {
        "title": "first", "tag": "a", "emb": [1, 0, 0], "allowed_groups": ["eng"]})
    assert st == 201, b
    return server.key_for("alice")[2]


def source_of(server, key, spec):
    body = {"knn": {"field": "emb", "query_vector": [1, 0, 0], "k": 1}}
    if spec is not None:
        body["_source"] = spec
    st, _, b = server.request("POST", "/docs/_search", body, key=key)
    assert st == 200, b
    hits = b["hits"]["hits"]
    assert [h["_id"] for h in hits] == ["1"]
    return hits[0].get("_source")


def test_search_source_specs_show_the_vector_only_when_kept(server):
    alice = setup_docs(server)
    full = source_of(server, alice, None)
    assert full["title"] == "first" and full["tag"] == "a" and len(full["emb"]) == 3
    assert source_of(server, alice, True) == full
    assert source_of(server, alice, False) is None
    no_vec = source_of(server, alice, {"excludes": ["emb"]})
    assert "emb" not in no_vec and no_vec["title"] == "first" and no_vec["tag"] == "a"
    assert source_of(server, alice, {"excludes": ["e*"]}) == no_vec
    assert source_of(server, alice, ["title"]) == {"title": "first"}
    assert source_of(server, alice, "title") == {"title": "first"}
    only = source_of(server, alice, ["emb"])
    assert list(only) == ["emb"] and len(only["emb"]) == 3
    assert list(source_of(server, alice, {"includes": ["em*"]})) == ["emb"]
    kept = source_of(server, alice, {"includes": ["emb", "title"], "excludes": ["title"]})
    assert list(kept) == ["emb"]


def test_get_source_excludes_drop_the_vector(server):
    alice = setup_docs(server)
    st, _, b = server.request("GET", "/docs/_doc/1?_source_excludes=emb", key=alice)
    assert st == 200 and "emb" not in b["_source"] and b["_source"]["title"] == "first"
    st, _, b = server.request("GET", "/docs/_doc/1?_source_includes=emb", key=alice)
    assert st == 200 and list(b["_source"]) == ["emb"]
    st, _, b = server.request("GET", "/docs/_doc/1", key=alice)
    assert st == 200 and len(b["_source"]["emb"]) == 3

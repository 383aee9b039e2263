"""_search's paging, totals and _source over the wire, checked against what the test wrote."""
import random

from wire import people_model

RUN_AS = {"es-security-runas-user": "alice"}


def load(server, n=120):
    people_model(server)
    st, _, b = server.request("PUT", "/p", {"mappings": {"properties": {
        "title": {"type": "text"}, "year": {"type": "long"},
        "meta": {"properties": {"src": {"type": "keyword"}, "note": {"type": "text"}}},
        "emb": {"type": "dense_vector", "dims": 4, "similarity": "l2_norm"}}}})
    assert st == 200, b
    rng = random.Random(3)
    lines, acl = [], {}
    for i in range(n):
        groups = ["eng"] if i % 3 else ["hr"]
        acl[str(i)] = groups
        words = " ".join(rng.choice(["fox", "dog", "cat"]) for _ in range(rng.randint(1, 4)))
        lines.append({"index": {"_index": "p", "_id": str(i)}})
        lines.append({"title": words, "year": 2000 + i % 20,
                      "meta": {"src": "s%d" % (i % 4), "note": "n"},
                      "emb": [rng.random() for _ in range(4)], "allowed_groups": groups})
    import json
    raw = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    st, _, b = server.request("POST", "/_bulk", raw=raw,
                              headers={"Content-Type": "application/x-ndjson"})
    assert st == 200 and not b["errors"], b
    return acl


def search(server, body, headers=RUN_AS):
    st, _, b = server.request("POST", "/p/_search", body, headers=headers)
    assert st == 200, b
    return b


def test_search_after_walks_every_readable_match_once(server):
    acl = load(server)
    readable = {d for d, g in acl.items() if "eng" in g}
    seen, after = [], None
    while True:
        body = {"query": {"match": {"title": "fox"}}, "size": 7, "sort": [{"_score": "desc"}]}
        if after:
            body["search_after"] = after
        hits = search(server, body)["hits"]["hits"]
        if not hits:
            break
        seen += [h["_id"] for h in hits]
        after = hits[-1]["sort"]
    assert len(seen) == len(set(seen))
    assert set(seen) <= readable
    total = search(server, {"query": {"match": {"title": "fox"}}, "size": 0})
    assert total["hits"]["total"] == {"value": len(seen), "relation": "eq"}
    assert total["hits"]["hits"] == []


def test_from_size_pages_equal_one_ranking(server):
    load(server)
    q = {"query": {"match": {"title": "dog"}}}
    whole = [h["_id"] for h in search(server, {**q, "size": 30})["hits"]["hits"]]
    pages = []
    for start in range(0, 30, 10):
        pages += [h["_id"] for h in search(server, {**q, "from": start, "size": 10})["hits"]["hits"]]
    assert pages == whole


def test_track_total_hits_forms(server):
    load(server)
    q = {"query": {"match_all": {}}, "size": 1}
    exact = search(server, {**q, "track_total_hits": True})["hits"]["total"]
    assert exact == {"value": 80, "relation": "eq"}
    assert "total" not in search(server, {**q, "track_total_hits": False})["hits"]
    capped = search(server, {**q, "track_total_hits": 5})["hits"]["total"]
    assert capped in ({"value": 5, "relation": "gte"}, {"value": 80, "relation": "eq"})
    st, _, b = server.request("POST", "/p/_search", {**q, "track_total_hits": "x"}, headers=RUN_AS)
    assert st == 400


def test_source_filtering_and_filters(server):
    acl = load(server)
    r = search(server, {"query": {"bool": {"filter": [
        {"term": {"meta.src": "s1"}}, {"range": {"year": {"gte": 2010}}}]}},
        "_source": {"includes": ["meta"], "excludes": ["meta.note"]}, "size": 100})
    hits = r["hits"]["hits"]
    assert hits
    for h in hits:
        i = int(h["_id"])
        assert "eng" in acl[h["_id"]] and i % 4 == 1 and 2000 + i % 20 >= 2010
        assert h["_source"] == {"meta": {"src": "s1"}}
    want = {d for d, g in acl.items() if "eng" in g and int(d) % 4 == 1 and int(d) % 20 >= 10}
    assert {h["_id"] for h in hits} == want
    r = search(server, {"query": {"match_all": {}}, "_source": False, "size": 3})
    assert all("_source" not in h for h in r["hits"]["hits"])


def test_knn_scores_and_min_score(server):
    acl = load(server)
    r = search(server, {"knn": {"field": "emb", "query_vector": [0.5] * 4, "k": 5,
                                "num_candidates": 20}})
    hits = r["hits"]["hits"]
    assert len(hits) == 5 and r["hits"]["total"]["value"] == 5
    assert all(0 < h["_score"] <= 1 for h in hits)
    assert all("eng" in acl[h["_id"]] for h in hits)
    cut = hits[2]["_score"]
    r = search(server, {"knn": {"field": "emb", "query_vector": [0.5] * 4, "k": 5,
                                "num_candidates": 20}, "min_score": cut})
    assert [h["_id"] for h in r["hits"]["hits"]] == [h["_id"] for h in hits[:3]]


def test_knn_vector_read_from_text_equals_jansson_path(server):
    """The query vector the server reads from the body's text (a plain array under knn)
    gives the hits and scores of the same vector read through jansson (a key spelled with an
    escape, which the text reader leaves alone), for every place a knn clause sits, and the
    same errors."""
    load(server)
    rng = random.Random(11)

    def raw_search(text):
        return server.request("POST", "/p/_search", raw=text.encode(), headers=RUN_AS)
    for _ in range(5):
        vec = "[%s]" % ", ".join(rng.choice(["%.6f", "%.2e", "%.9g", "%d"]) %
                                 (rng.random() * 3 if rng.random() < 0.8 else rng.randint(0, 3))
                                 for _ in range(4))
        for form in ('{"knn":{"field":"emb","query_vector":%s,"k":4,"num_candidates":20}}',
                     '{"knn":[{"field":"emb","query_vector":%s,"k":4}]}',
                     '{"retriever":{"knn":{"field":"emb","query_vector":%s,"k":4}}}',
                     '{"retriever":{"rrf":{"retrievers":[{"standard":{"query":{"match":'
                     '{"title":"fox"}}}},{"knn":{"field":"emb","query_vector":%s,"k":4}}]}}}'):
            text = form % vec
            st, _, fast = raw_search(text)
            st2, _, slow = raw_search(text.replace('"query_vector"', '"query\\u005fvector"'))
            assert st == st2 == 200, (fast, slow)
            for b in (fast, slow):
                b.pop("took")
            assert fast == slow
            assert fast["hits"]["hits"]
    for text in ('{"knn":{"field":"emb","query_vector":[1,2,3],"k":4}}',
                 '{"knn":{"field":"emb","query_vector":[1,2,3,4],"k":0}}',
                 '{"knn":{"field":"nope","query_vector":[1,2,3,4],"k":4}}'):
        st, _, fast = raw_search(text)
        st2, _, slow = raw_search(text.replace('"query_vector"', '"query\\u005fvector"'))
        assert st == st2 == 400 and fast == slow, (fast, slow)
    st, _, b = raw_search('{"knn":{"field":"emb","query_vector":[1,2,3],"k":4}}')
    assert "the query vector has 3 dimensions" in b["error"]["reason"]
    # Malformed bodies: jansson's message, placed in the text as sent.
    for text, at in (('{"knn":{"field":"emb","query_vector":[1,2,3,4],"k":4}', 53),
                     ('{"knn":{"field":"emb","query_vector":[1,2,3,4],"k":4},"knn":{}}', 59)):
        st, _, b = raw_search(text)
        assert st == 400 and b["error"]["type"] == "parsing_exception"
        assert b["error"]["reason"].endswith("(line 1, column %d)" % at), b


def test_index_recreated_or_remapped_is_seen_by_next_search(server):
    """Searches share parsed index attrs while their text is unchanged: a mapping change, or
    the index dropped and created again with another vector field, is seen at once."""
    load(server, n=6)
    knn = {"knn": {"field": "emb", "query_vector": [0.5] * 4, "k": 2}}
    assert len(search(server, knn)["hits"]["hits"]) == 2
    st, _, b = server.request("PUT", "/p/_mapping", {"properties": {"extra": {"type": "text"}}})
    assert st == 200, b
    st, _, b = server.request("POST", "/p/_doc/x?refresh=true",
                              {"extra": "zebra", "emb": [0.5] * 4, "allowed_groups": ["eng"]})
    assert st in (200, 201), b
    hits = search(server, {"query": {"match": {"extra": "zebra"}}})["hits"]["hits"]
    assert [h["_id"] for h in hits] == ["x"]
    assert server.request("DELETE", "/p")[0] == 200
    st, _, b = server.request("PUT", "/p", {"mappings": {"properties": {
        "emb2": {"type": "dense_vector", "dims": 3, "similarity": "cosine"}}}})
    assert st == 200, b
    st, _, b = server.request("POST", "/p/_search", knn, headers=RUN_AS)
    assert st == 400 and "not a dense_vector field" in b["error"]["reason"], b
    knn2 = {"knn": {"field": "emb2", "query_vector": [0.5] * 3, "k": 2}}
    r = search(server, knn2)
    assert r["hits"]["hits"] == []


def test_chunked_request_body(server):
    load(server)
    import http.client
    import json
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    body = json.dumps({"query": {"match": {"title": "cat"}}, "size": 1}).encode()

    def chunks():
        for i in range(0, len(body), 5):
            yield body[i:i + 5]
    c.request("POST", "/p/_search", body=chunks(), encode_chunked=True,
              headers={"Authorization": server.admin_header, "Content-Type": "application/json",
                       "Transfer-Encoding": "chunked", **RUN_AS})
    r = c.getresponse()
    assert r.status == 200
    assert json.loads(r.read())["hits"]["total"]["value"] > 0
    # The same connection answers again (keep-alive).
    c.request("GET", "/", headers={"Authorization": server.admin_header})
    r = c.getresponse()
    assert r.status == 200 and r.getheader("X-Elastic-Product") == "Elasticsearch"
    r.read()
    c.close()


def test_ids_with_slashes_and_spaces(server):
    load(server, n=3)
    import urllib.parse
    doc_id = "reports/2026 q1.pdf#3"
    path = "/p/_doc/" + urllib.parse.quote(doc_id, safe="")
    st, _, b = server.request("PUT", path + "?refresh=true", {
        "title": "fox", "emb": [0, 0, 0, 1], "allowed_groups": ["eng"]})
    assert st == 201 and b["_id"] == doc_id, b
    st, _, b = server.request("GET", path + "?_source_includes=title", headers=RUN_AS)
    assert st == 200 and b["_id"] == doc_id and b["_source"] == {"title": "fox"}
    r = search(server, {"query": {"ids": {"values": [doc_id]}}})
    assert [h["_id"] for h in r["hits"]["hits"]] == [doc_id]

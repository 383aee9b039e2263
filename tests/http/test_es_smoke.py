"""The official Python client (Debian's python3-elasticsearch) against cordon serve: index,
bulk, search as different subjects, and every hit checked against the ACL the test wrote."""
import random

import pytest

from wire import people_model

es = pytest.importorskip("elasticsearch")
helpers = pytest.importorskip("elasticsearch.helpers")

GROUPS = {"alice": {"eng"}, "carol": {"eng"}, "bob": {"hr"}, "dave": set()}


def client(server, key_id, secret):
    return es.Elasticsearch(server.url, api_key=(key_id, secret), request_timeout=60)


def test_python_client_index_bulk_search(server):
    people_model(server)
    keys = {who: server.key_for(who) for who in GROUPS}
    admin = es.Elasticsearch(server.url, api_key=("admin", "test-admin-secret-0123456789abcdef"))
    assert admin.info()["version"]["number"].startswith("8.")
    admin.indices.create(index="docs", body={"mappings": {"properties": {
        "title": {"type": "text"}, "tag": {"type": "keyword"},
        "emb": {"type": "dense_vector", "dims": 8, "similarity": "cosine"}}}})
    rng = random.Random(7)
    acl = {}
    actions = []
    for i in range(300):
        groups = rng.choice([["eng"], ["hr"], ["eng", "hr"], []])
        acl[str(i)] = set(groups)
        actions.append({"_index": "docs", "_id": str(i), "_source": {
            "title": f"report {i} {'fox' if i % 3 == 0 else 'dog'}",
            "tag": "t%d" % (i % 5), "emb": [rng.uniform(-1, 1) for _ in range(8)],
            "allowed_groups": groups}})
    ok, errors = helpers.bulk(admin, actions)
    assert ok == 300 and not errors
    for who, (kid, secret, _) in keys.items():
        c = client(server, kid, secret)
        readable = {d for d, g in acl.items() if g & GROUPS[who]}
        r = c.search(index="docs", body={"query": {"match": {"title": "fox"}}, "size": 200})
        got = {h["_id"] for h in r["hits"]["hits"]}
        want = {d for d in readable if int(d) % 3 == 0}
        assert got == want, who
        assert r["hits"]["total"]["value"] == len(want)
        r = c.search(index="docs", body={"knn": {"field": "emb", "query_vector": [0.1] * 8,
                                                 "k": 10, "num_candidates": 50,
                                                 "filter": {"term": {"tag": "t1"}}}})
        for h in r["hits"]["hits"]:
            assert acl[h["_id"]] & GROUPS[who], (who, h["_id"])
            assert h["_source"]["tag"] == "t1"
        assert c.count(index="docs")["count"] == len(readable)

"""The official Python client (Debian's python3-elasticsearch 7.17), unmodified, against cordon
serve with permissions enforced: an index of 3000 documents with random ACLs loaded with
helpers.bulk, then every kind of read the client offers, as alice, carol, bob and dave through
their own keys and through run-as. Every document returned is checked against the ACL this file
wrote (never the server's word), and exact plans must return exactly the set computed here."""
import math
import random
import re

import pytest

from wire import ADMIN_ID, ADMIN_SECRET, people_model

es = pytest.importorskip("elasticsearch")
helpers = pytest.importorskip("elasticsearch.helpers")

# 7.17 deprecates body= in favour of keyword arguments it does not have for knn and retriever.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

INDEX = "corpus"
N_DOCS = 3000
DIM = 16
SUBJECTS = {"alice": {"eng"}, "carol": {"eng"}, "bob": {"hr"}, "dave": set()}
MODES = ("key", "runas")
CALLERS = [(who, mode) for who in ("alice", "carol", "bob", "dave") for mode in MODES]
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee "
         "zulu amber cobalt indigo scarlet").split()
TITLE_WORDS = WORDS[:8]
MAPPING = {"properties": {
    "emb": {"type": "dense_vector", "dims": DIM, "similarity": "cosine"},
    "title": {"type": "text"}, "body": {"type": "text"}, "tag": {"type": "keyword"},
    "year": {"type": "long"}, "published": {"type": "date"}}}
# (allowed, denied); None: the document carries no ACL field at all (readable by nobody).
ACL_CHOICES = [
    (["eng"], None), (["hr"], None), (["eng", "hr"], None), (["group:eng"], ["user:carol"]),
    (["eng", "hr"], ["hr"]), (["user:dave"], None), (["user:alice", "user:bob"], None),
    (["hr", "user:dave"], ["user:bob"]), (None, None), ([], None), (["group:nobody"], None)]
ACL_WEIGHTS = [22, 18, 10, 8, 7, 8, 5, 5, 9, 4, 4]


def principal(p):
    return p if ":" in p else "group:" + p


def principals(who):
    return {"user:" + who} | {"group:" + g for g in SUBJECTS[who]}


def readable(doc, who):
    """The ACL rule the test holds the server to: some allowed principal, no denied one."""
    held = principals(who)
    allowed = {principal(p) for p in doc.get("allowed_groups") or []}
    denied = {principal(p) for p in doc.get("denied_groups") or []}
    return bool(allowed & held) and not denied & held


def make_docs(rng, n, prefix="d"):
    docs = {}
    for i in range(n):
        allowed, denied = rng.choices(ACL_CHOICES, ACL_WEIGHTS)[0]
        year = rng.randrange(2000, 2025)
        doc = {
            # Every body has 8 distinct words: a one-word match scores all its documents alike.
            "title": " ".join(rng.choice(TITLE_WORDS) for _ in range(rng.randrange(1, 7))),
            "body": " ".join(rng.sample(WORDS, 8)),
            "tag": "t%d" % rng.randrange(10), "year": year,
            "emb": [round(rng.gauss(0, 1), 6) for _ in range(DIM)]}
        if rng.random() < 0.85:
            day = "%04d-%02d-%02d" % (year, rng.randrange(1, 13), rng.randrange(1, 29))
            doc["published"] = day if rng.random() < 0.5 else day + "T%02d:%02d:00" % (
                rng.randrange(24), rng.randrange(60))
        if allowed is not None:
            doc["allowed_groups"] = list(allowed)
        if denied is not None:
            doc["denied_groups"] = list(denied)
        docs["%s%04d" % (prefix, i)] = doc
    return docs


def tokens(text):
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def day_of(doc):
    return doc["published"][:10] if "published" in doc else None


class Corpus:
    def __init__(self, server):
        self.server = server
        people_model(server)
        self.admin = es.Elasticsearch(server.url, api_key=(ADMIN_ID, ADMIN_SECRET),
                                      request_timeout=60)
        self.keys = {who: server.key_for(who) for who in SUBJECTS}
        self.docs = make_docs(random.Random(20260501), N_DOCS)
        self.clients = {}
        for who in SUBJECTS:
            kid, secret, _ = self.keys[who]
            self.clients[(who, "key")] = es.Elasticsearch(
                server.url, api_key=(kid, secret), request_timeout=60)

    def call(self, who, mode, method, **kw):
        """Calls one client method as who: its own key, or the admin key with run-as."""
        def fn(client):
            for part in method.split("."):  # "indices.create"
                client = getattr(client, part)
            return client
        if mode == "key":
            return fn(self.clients[(who, mode)])(**kw)
        headers = dict(kw.pop("headers", None) or {})
        headers["es-security-runas-user"] = who
        return fn(self.admin)(headers=headers, **kw)

    def readable_ids(self, who, pred=lambda d: True):
        return {i for i, d in self.docs.items() if readable(d, who) and pred(d)}


@pytest.fixture(scope="module")
def corpus(shared_server):
    c = Corpus(shared_server)
    info = c.admin.info()
    assert info["version"]["number"].startswith("8.")
    assert info["tagline"] == "You Know, for Search"
    c.admin.indices.create(index=INDEX, body={"mappings": MAPPING})
    ok, errors = helpers.bulk(c.admin, ({"_index": INDEX, "_id": i, "_source": d}
                                        for i, d in sorted(c.docs.items())), chunk_size=500)
    assert ok == N_DOCS and errors == []
    c.admin.indices.refresh(index=INDEX)
    return c


def check_docs(docs, index, who, resp, pred=lambda d: True):
    """Every hit is a document of docs that who may read by the test's own ACL and satisfies
    pred; returns the ids in order. No id comes twice."""
    ids = [h["_id"] for h in resp["hits"]["hits"]]
    assert len(ids) == len(set(ids)), ids
    for h in resp["hits"]["hits"]:
        doc = docs.get(h["_id"])
        assert doc is not None, h["_id"]
        assert readable(doc, who), (who, h["_id"], doc.get("allowed_groups"),
                                    doc.get("denied_groups"))
        assert pred(doc), (who, h["_id"])
        assert h["_index"] == index
    return ids


def check_hits(corpus, who, resp, pred=lambda d: True):
    return check_docs(corpus.docs, INDEX, who, resp, pred)


def plans(server):
    """Searches answered so far, by plan, from the server's metrics."""
    st, _, text = server.request("GET", "/metrics")
    assert st == 200
    return {m.group(1): int(float(m.group(2))) for m in re.finditer(
        r'^cordon_search_plans_total\{plan="([^"]*)"\} (\S+)$', text, re.M)}


def plan_delta(before, after):
    return {p: n - before.get(p, 0) for p, n in after.items() if n != before.get(p, 0)}


# ---- The server as the 7.17 client sees it. ----

def test_client_product_check_and_compatibility_headers(corpus, monkeypatch):
    # 7.17 refuses a server without X-Elastic-Product; it also sends compatible-with=7
    # mimetypes when ELASTIC_CLIENT_APIVERSIONING is set.
    monkeypatch.setenv("ELASTIC_CLIENT_APIVERSIONING", "1")
    kid, secret, _ = corpus.keys["alice"]
    c = es.Elasticsearch(corpus.server.url, api_key=(kid, secret), request_timeout=60)
    assert c.info()["version"]["number"].startswith("8.")
    r = c.count(index=INDEX, body={"query": {"term": {"tag": "t3"}}})
    assert r["count"] == len(corpus.readable_ids("alice", lambda d: d["tag"] == "t3"))
    ok, errors = helpers.bulk(c, [{"_index": "compat", "_id": "1", "_source": {
        "title": "one", "allowed_groups": ["eng"]}}])
    assert ok == 1 and errors == []
    assert c.get(index="compat", id="1")["_source"]["title"] == "one"


@pytest.mark.filterwarnings("ignore::elasticsearch.ElasticsearchWarning")
def test_auth_failures_raise_the_clients_errors(corpus):
    # (Without a key the client's own product check of GET / is refused too: it warns.)
    nobody = es.Elasticsearch(corpus.server.url, request_timeout=60)
    with pytest.raises(es.AuthenticationException):
        nobody.search(index=INDEX, body={"query": {"match_all": {}}})
    alice = corpus.clients[("alice", "key")]
    with pytest.raises(es.AuthorizationException):
        alice.search(index=INDEX, body={"query": {"match_all": {}}},
                     headers={"es-security-runas-user": "bob"})
    with pytest.raises(es.NotFoundError):
        alice.search(index="no-such-index", body={"query": {"match_all": {}}})
    with pytest.raises(es.RequestError):
        alice.search(index=INDEX, body={"query": {"match": {"title": "x"}}, "bogus": 1})
    with pytest.raises(es.ConflictError):
        corpus.admin.create(index=INDEX, id="d0001", body=corpus.docs["d0001"])


def test_bulk_item_errors_reach_helpers_in_elasticsearchs_shape(corpus):
    corpus.admin.indices.create(index="bulk-errors", body={"mappings": MAPPING})
    docs = make_docs(random.Random(3), 50, prefix="b")
    actions = [{"_index": "bulk-errors", "_id": i, "_source": d} for i, d in docs.items()]
    actions[7]["_source"] = dict(actions[7]["_source"], emb=[0.5] * 3)  # wrong dims
    actions[9]["_source"] = dict(actions[9]["_source"], year="last year")  # not a long
    actions.append({"_op_type": "create", "_index": "bulk-errors", "_id": "b0001",
                    "_source": docs["b0001"]})  # exists
    actions.append({"_op_type": "delete", "_index": "bulk-errors", "_id": "b0002"})
    patched = min(i for i, d in docs.items() if readable(d, "alice") and i > "b0009")
    actions.append({"_op_type": "update", "_index": "bulk-errors", "_id": patched,
                    "doc": {"tag": "patched"}})
    with pytest.raises(helpers.BulkIndexError) as e:
        helpers.bulk(corpus.admin, actions)
    failed = {(op, item["_id"]): item for x in e.value.errors for op, item in x.items()}
    assert set(failed) == {("index", "b0007"), ("index", "b0009"), ("create", "b0001")}
    for key in (("index", "b0007"), ("index", "b0009")):
        assert failed[key]["status"] == 400
        assert failed[key]["error"]["type"] == "mapper_parsing_exception"
    assert failed[("create", "b0001")]["status"] == 409
    assert failed[("create", "b0001")]["error"]["type"] == "version_conflict_engine_exception"
    ok, errors = helpers.bulk(corpus.admin, actions, raise_on_error=False)
    assert ok == len(actions) - 3 and len(errors) == 3
    # A delete that finds nothing: 404 and not_found, which the helper counts as a failure.
    ok, errors = helpers.bulk(corpus.admin, [{"_op_type": "delete", "_index": "bulk-errors",
                                              "_id": "no-such-id"}], raise_on_error=False)
    assert ok == 0 and errors[0]["delete"]["status"] == 404
    assert errors[0]["delete"]["result"] == "not_found"
    for who in SUBJECTS:
        want = {i for i, d in docs.items() if readable(d, who)} - {"b0007", "b0009", "b0002"}
        r = corpus.call(who, "runas", "search", index="bulk-errors", size=100)
        assert set(check_docs(docs, "bulk-errors", who, r)) == want
    got = corpus.call("alice", "key", "get", index="bulk-errors", id=patched)
    assert got["_source"]["tag"] == "patched"
    assert got["_source"]["title"] == docs[patched]["title"]


# ---- Reads as every subject, by key and by run-as. ----

@pytest.mark.parametrize("who,mode", CALLERS)
def test_match_returns_exactly_the_readable_docs_holding_the_token(corpus, who, mode):
    for word in ("alpha", "zulu", "kilo"):
        want = corpus.readable_ids(who, lambda d: word in tokens(d["body"]))
        r = corpus.call(who, mode, "search", index=INDEX,
                        body={"query": {"match": {"body": word}}, "size": 2000})
        got = check_hits(corpus, who, r, lambda d: word in tokens(d["body"]))
        assert set(got) == want, (who, word)
        assert r["hits"]["total"] == {"value": len(want), "relation": "eq"}
        # Equal-length bodies: one score for all, ties in id order.
        assert got == sorted(got)
    # Two words: either may match (Elasticsearch's default operator or).
    want = corpus.readable_ids(who, lambda d: tokens(d["body"]) & {"echo", "amber"})
    r = corpus.call(who, mode, "search", index=INDEX, size=2000,
                    query={"match": {"body": "Echo AMBER"}})
    assert set(check_hits(corpus, who, r)) == want


@pytest.mark.parametrize("who,mode", CALLERS)
def test_multi_match_covers_both_fields(corpus, who, mode):
    word = "bravo"  # in both title and body vocabularies
    pred = lambda d: word in tokens(d["title"]) | tokens(d["body"])
    want = corpus.readable_ids(who, pred)
    r = corpus.call(who, mode, "search", index=INDEX, body={
        "query": {"multi_match": {"query": word, "fields": ["title", "body"]}}, "size": 3000})
    assert set(check_hits(corpus, who, r, pred)) == want
    assert r["hits"]["total"]["value"] == len(want)
    scores = [h["_score"] for h in r["hits"]["hits"]]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("who,mode", CALLERS)
def test_bool_filters_term_terms_range_date_exists(corpus, who, mode):
    cases = [
        ({"term": {"tag": "t3"}}, lambda d: d["tag"] == "t3"),
        ({"terms": {"tag": ["t1", "t7"]}}, lambda d: d["tag"] in ("t1", "t7")),
        ({"range": {"year": {"gte": 2005, "lt": 2012}}}, lambda d: 2005 <= d["year"] < 2012),
        ({"range": {"published": {"gte": "2010-01-01", "lt": "2016-07-01"}}},
         lambda d: day_of(d) is not None and "2010-01-01" <= day_of(d) < "2016-07-01"),
        ({"exists": {"field": "published"}}, lambda d: "published" in d),
        ({"bool": {"must_not": {"exists": {"field": "published"}}}},
         lambda d: "published" not in d),
    ]
    for flt, pred in cases:
        want = corpus.readable_ids(who, pred)
        r = corpus.call(who, mode, "search", index=INDEX, body={
            "query": {"bool": {"filter": [flt]}}, "size": 3000})
        assert set(check_hits(corpus, who, r, pred)) == want, (who, flt)
        assert corpus.call(who, mode, "count", index=INDEX,
                           body={"query": {"bool": {"filter": [flt]}}})["count"] == len(want)
    # A scored clause with every filter together.
    pred = lambda d: ("delta" in tokens(d["body"]) and d["tag"] in ("t2", "t4", "t6", "t8")
                      and d["year"] >= 2003 and "published" in d
                      and day_of(d) >= "2004-01-01")
    r = corpus.call(who, mode, "search", index=INDEX, body={"size": 3000, "query": {"bool": {
        "must": [{"match": {"body": "delta"}}],
        "filter": [{"terms": {"tag": ["t2", "t4", "t6", "t8"]}},
                   {"range": {"year": {"gte": 2003}}},
                   {"range": {"published": {"gte": "2004-01-01"}}},
                   {"exists": {"field": "published"}}]}}})
    assert set(check_hits(corpus, who, r, pred)) == corpus.readable_ids(who, pred)


@pytest.mark.parametrize("who,mode", CALLERS)
def test_count_equals_readable_matches(corpus, who, mode):
    assert corpus.call(who, mode, "count", index=INDEX)["count"] == len(
        corpus.readable_ids(who))
    for word in ("golf", "scarlet"):
        want = corpus.readable_ids(who, lambda d: word in tokens(d["body"]))
        r = corpus.call(who, mode, "count", index=INDEX, body={"query": {"match": {"body": word}}})
        assert r["count"] == len(want)


@pytest.mark.parametrize("who,mode", CALLERS)
def test_knn_with_filter_is_the_exact_top_k_of_the_readable(corpus, who, mode):
    rng = random.Random(sum(map(ord, who)))
    for _ in range(3):
        qv = [rng.gauss(0, 1) for _ in range(DIM)]
        pred = lambda d: d["year"] >= 2010 and d["tag"] != "t0"
        cand = sorted(((cosine(qv, corpus.docs[i]["emb"]), i)
                       for i in corpus.readable_ids(who, pred)), reverse=True)
        before = plans(corpus.server)
        r = corpus.call(who, mode, "search", index=INDEX, body={
            "knn": {"field": "emb", "query_vector": qv, "k": 20, "num_candidates": 100,
                    "filter": [{"range": {"year": {"gte": 2010}}},
                               {"bool": {"must_not": {"term": {"tag": "t0"}}}}]},
            "size": 20, "_source": ["tag", "year"]})
        ids = check_hits(corpus, who, r, pred)
        for h in r["hits"]["hits"]:
            assert set(h["_source"]) == {"tag", "year"}
            want = (1 + cosine(qv, corpus.docs[h["_id"]]["emb"])) / 2
            assert h["_score"] == pytest.approx(want, abs=1e-5)
        assert len(ids) == min(20, len(cand)) == r["hits"]["total"]["value"]
        # 3000 rows of 16 floats: the planner scans them exactly, so the hits are precisely
        # the 20 nearest readable matches (to float rounding).
        assert plan_delta(before, plans(corpus.server)) == {"exact": 1}
        kth = cand[len(ids) - 1][0]
        assert {i for s, i in cand if s > kth + 1e-6} <= set(ids)
        assert all(cosine(qv, corpus.docs[i]["emb"]) >= kth - 1e-6 for i in ids)


@pytest.mark.parametrize("who,mode", CALLERS)
def test_rrf_fuses_the_readable_sides(corpus, who, mode):
    rng = random.Random(len(who))
    qv = [rng.gauss(0, 1) for _ in range(DIM)]
    word, window = "hotel", 50
    # Every match of one body word scores alike; ties in a retriever's ranking follow index
    # order (Elasticsearch's _doc order), which the sequential bulk made id order.
    text_side = sorted(corpus.readable_ids(who, lambda d: word in tokens(d["body"])))[:window]
    nearest = [i for _, i in sorted(((cosine(qv, corpus.docs[i]["emb"]), i)
                                     for i in corpus.readable_ids(who)), reverse=True)]
    # The knn retriever brings its k nearest (as in Elasticsearch), the window at most.
    for k in (window, 7):
        fused = {}
        for side in (text_side, nearest[:k]):
            for rank, i in enumerate(side, 1):
                fused[i] = fused.get(i, 0) + 1 / (60 + rank)
        r = corpus.call(who, mode, "search", index=INDEX, body={"size": 20, "retriever": {"rrf": {
            "retrievers": [{"standard": {"query": {"match": {"body": word}}}},
                           {"knn": {"field": "emb", "query_vector": qv, "k": k,
                                    "num_candidates": 100}}],
            "rank_window_size": window, "rank_constant": 60}}})
        ids = check_hits(corpus, who, r)
        assert set(ids) <= set(fused)
        best = sorted(fused.values(), reverse=True)[:20]
        assert [fused[i] for i in ids] == pytest.approx(best, abs=1e-6)
        for h in r["hits"]["hits"]:
            assert h["_score"] == pytest.approx(fused[h["_id"]], abs=1e-6)


@pytest.mark.parametrize("who,mode", CALLERS)
def test_search_after_walks_every_readable_match_once(corpus, who, mode):
    word = "charlie"  # title words repeat: scores vary and tie
    pred = lambda d: word in tokens(d["title"])
    want = corpus.readable_ids(who, pred)
    seen, after, pages = [], None, 0
    while True:
        body = {"query": {"match": {"title": word}}, "size": 37, "sort": [{"_score": "desc"}]}
        if after is not None:
            body["search_after"] = after
        r = corpus.call(who, mode, "search", index=INDEX, body=body)
        hits = r["hits"]["hits"]
        if not hits:
            break
        check_hits(corpus, who, r, pred)
        for h in hits:
            assert h["sort"][0] == pytest.approx(h["_score"]) and h["sort"][1] == h["_id"]
        seen += [h["_id"] for h in hits]
        after = hits[-1]["sort"]
        pages += 1
        assert pages <= len(want) // 37 + 2
    assert len(seen) == len(set(seen)) and set(seen) == want
    assert pages == -(-len(want) // 37)


@pytest.mark.parametrize("who,mode", CALLERS)
def test_from_size_pages_are_one_ranking(corpus, who, mode):
    q = {"match": {"title": "delta"}}
    full = corpus.call(who, mode, "search", index=INDEX, body={"query": q, "size": 3000})
    ranking = check_hits(corpus, who, full)
    assert set(ranking) == corpus.readable_ids(who, lambda d: "delta" in tokens(d["title"]))
    paged = []
    for start in range(0, len(ranking) + 25, 25):
        r = corpus.call(who, mode, "search", index=INDEX,
                        body={"query": q, "from": start, "size": 25})
        paged += check_hits(corpus, who, r)
        assert r["hits"]["total"]["value"] == len(ranking)
    assert paged == ranking


@pytest.mark.parametrize("who,mode", CALLERS)
def test_source_includes_and_excludes(corpus, who, mode):
    q = {"term": {"tag": "t5"}}
    r = corpus.call(who, mode, "search", index=INDEX, body={
        "query": q, "size": 50, "_source": {"includes": ["title", "y*"]}})
    for h in r["hits"]["hits"]:
        doc = corpus.docs[h["_id"]]
        assert h["_source"] == {"title": doc["title"], "year": doc["year"]}
    r = corpus.call(who, mode, "search", index=INDEX, body={
        "query": q, "size": 50, "_source": {"excludes": ["emb", "body", "*_groups"]}})
    check_hits(corpus, who, r, lambda d: d["tag"] == "t5")
    for h in r["hits"]["hits"]:
        doc = corpus.docs[h["_id"]]
        want = {k: v for k, v in doc.items() if k not in ("emb", "body", "allowed_groups",
                                                         "denied_groups")}
        assert h["_source"] == want
    r = corpus.call(who, mode, "search", index=INDEX, body={"query": q, "_source": False})
    assert all("_source" not in h for h in r["hits"]["hits"])
    r = corpus.call(who, mode, "search", index=INDEX, query=q, size=5,
                    _source_includes="tag")
    assert all(h["_source"] == {"tag": "t5"} for h in r["hits"]["hits"])


@pytest.mark.parametrize("who,mode", CALLERS)
def test_get_and_mget_hide_what_is_not_readable(corpus, who, mode):
    ids = sorted(corpus.docs)[:60]
    r = corpus.call(who, mode, "mget", index=INDEX, body={"ids": ids + ["nope"]})
    assert [d["_id"] for d in r["docs"]] == ids + ["nope"]
    for d in r["docs"]:
        doc = corpus.docs.get(d["_id"])
        want = doc is not None and readable(doc, who)
        assert d["found"] is want, (who, d["_id"])
        if want:
            assert d["_source"]["title"] == doc["title"]
            assert d["_source"]["emb"] == pytest.approx(doc["emb"], abs=1e-5)
        else:
            assert "_source" not in d
    shown = [i for i in ids if readable(corpus.docs[i], who)]
    hidden = [i for i in ids if not readable(corpus.docs[i], who)]
    assert hidden, "the sample must hold a hidden document"
    if shown:
        got = corpus.call(who, mode, "get", index=INDEX, id=shown[0])
        assert got["found"] and got["_source"]["body"] == corpus.docs[shown[0]]["body"]
    for i in hidden[:5] + ["no-such-id"]:
        with pytest.raises(es.NotFoundError):
            corpus.call(who, mode, "get", index=INDEX, id=i)
        assert corpus.call(who, mode, "exists", index=INDEX, id=i) is False


# ---- Writes as subjects: what they may read, nothing else. ----

def load_scratch(corpus, index, n, seed):
    docs = make_docs(random.Random(seed), n, prefix="s")
    corpus.admin.indices.create(index=index, body={"mappings": MAPPING})
    ok, errors = helpers.bulk(corpus.admin, ({"_index": index, "_id": i, "_source": d}
                                             for i, d in docs.items()))
    assert ok == n and not errors
    return docs


@pytest.mark.parametrize("who,mode", [("bob", "key"), ("alice", "runas"), ("carol", "key")])
def test_delete_by_query_deletes_only_what_the_caller_reads(corpus, who, mode):
    index = "scratch-dbq-" + who
    docs = load_scratch(corpus, index, 400, seed=len(index))
    pred = lambda d: d["tag"] in ("t1", "t2", "t3")
    gone = {i for i, d in docs.items() if readable(d, who) and pred(d)}
    r = corpus.call(who, mode, "delete_by_query", index=index,
                    body={"query": {"terms": {"tag": ["t1", "t2", "t3"]}}})
    assert r["deleted"] == len(gone) and r["failures"] == []
    left = {i: d for i, d in docs.items() if i not in gone}
    # Every subject still finds exactly its share of what is left; the caller's matches are gone.
    for other in SUBJECTS:
        r = corpus.call(other, "runas", "search", index=index,
                        body={"query": {"match_all": {}}, "size": 1000})
        got = {h["_id"] for h in r["hits"]["hits"]}
        assert got == {i for i, d in left.items() if readable(d, other)}, other
    # Documents nobody reads survive too: the admin's _cat/indices counts every one stored.
    assert any(not any(readable(d, s) for s in SUBJECTS) and pred(d) for d in left.values())
    cat = corpus.admin.cat.indices(index=index, format="json")
    assert [int(x["docs.count"]) for x in cat if x["index"] == index] == [len(left)]


def test_delete_by_query_needs_the_write_permission(corpus):
    with pytest.raises(es.AuthorizationException):
        corpus.call("dave", "key", "delete_by_query", index=INDEX,
                    body={"query": {"match_all": {}}})
    assert corpus.call("alice", "key", "count", index=INDEX)["count"] == len(
        corpus.readable_ids("alice"))


def test_update_with_doc_changes_only_readable_docs(corpus):
    index = "scratch-update"
    docs = load_scratch(corpus, index, 200, seed=99)
    mine = sorted(i for i, d in docs.items() if readable(d, "alice"))
    hidden = sorted(i for i, d in docs.items() if not readable(d, "alice"))
    for mode in MODES:
        target = mine.pop()
        r = corpus.call("alice", mode, "update", index=index, id=target,
                        body={"doc": {"tag": "edited-" + mode, "year": 1999}})
        assert r["result"] == "updated"
        got = corpus.call("alice", mode, "get", index=index, id=target)["_source"]
        assert got["tag"] == "edited-" + mode and got["year"] == 1999
        assert got["title"] == docs[target]["title"]
        assert got.get("allowed_groups") == docs[target].get("allowed_groups")
        docs[target].update(tag="edited-" + mode, year=1999)
        # The edit is visible to the filters of everyone who reads the document, no one else.
        for who in SUBJECTS:
            r = corpus.call(who, "runas", "search", index=index,
                            body={"query": {"term": {"tag": "edited-" + mode}}})
            assert {h["_id"] for h in r["hits"]["hits"]} == (
                {target} if readable(docs[target], who) else set()), who
        # A document alice cannot read is as missing to update as to get, and stays as it was.
        victim = hidden.pop()
        with pytest.raises(es.NotFoundError):
            corpus.call("alice", mode, "update", index=index, id=victim,
                        body={"doc": {"tag": "overwritten"}})
        readers = [w for w in SUBJECTS if readable(docs[victim], w)]
        if readers:
            got = corpus.call(readers[0], "runas", "get", index=index, id=victim)["_source"]
            assert got["tag"] == docs[victim]["tag"]
    # dave may search and read but not write: a 403 the client raises.
    with pytest.raises(es.AuthorizationException):
        corpus.call("dave", "key", "update", index=index, id=mine[0], body={"doc": {"tag": "x"}})


def test_index_auto_creates_with_dynamic_mapping(corpus):
    rng = random.Random(5)
    notes = {}
    sources = ["handbook.pdf", "wiki/page one.md", "notes.txt"]
    for n in range(120):
        allowed, denied = rng.choices(ACL_CHOICES, ACL_WEIGHTS)[0]
        doc = {"text": "note %d about %s" % (n, rng.choice(WORDS)),
               "category": rng.choice(["policy", "howto"]),
               "metadata": {"source": rng.choice(sources), "page": rng.randrange(1, 9)}}
        if allowed is not None:
            doc["allowed_groups"] = allowed
        if denied is not None:
            doc["denied_groups"] = denied
        notes["n%03d" % n] = doc
    for n, (i, doc) in enumerate(sorted(notes.items())):
        who = ("alice", "bob")[n % 2]  # both may manage every collection
        r = corpus.call(who, MODES[n % 2], "index", index="notes-auto", id=i, body=doc)
        assert r["result"] == "created", r
    # An index made with a dynamic template: strings become keywords, filtered on as they are.
    corpus.call("carol", "key", "indices.create", index="notes-tpl", body={"mappings": {
        "dynamic_templates": [{"strings": {"match_mapping_type": "string",
                                           "mapping": {"type": "keyword"}}}]}})
    for i, doc in sorted(notes.items()):
        corpus.call("carol", "key", "index", index="notes-tpl", id=i, body=doc)
    for who, mode in CALLERS:
        r = corpus.call(who, mode, "search", index="notes-tpl", body={
            "query": {"bool": {"filter": [{"term": {"metadata.source": "notes.txt"}},
                                          {"term": {"category": "policy"}}]}}, "size": 500})
        assert {h["_id"] for h in r["hits"]["hits"]} == {
            i for i, d in notes.items() if readable(d, who)
            and d["metadata"]["source"] == "notes.txt" and d["category"] == "policy"}
    mapping = corpus.admin.indices.get_mapping(index="notes-auto")["notes-auto"]["mappings"]
    props = mapping["properties"]
    assert props["category"]["type"] == "text"
    assert props["category"]["fields"]["keyword"]["type"] == "keyword"
    assert props["metadata"]["properties"]["source"]["fields"]["keyword"]["type"] == "keyword"
    assert props["metadata"]["properties"]["page"]["type"] == "long"
    for who, mode in CALLERS:
        for field, value, pred in (
                ("metadata.source.keyword", "wiki/page one.md",
                 lambda d: d["metadata"]["source"] == "wiki/page one.md"),
                ("category.keyword", "howto", lambda d: d["category"] == "howto")):
            r = corpus.call(who, mode, "search", index="notes-auto", body={
                "query": {"bool": {"filter": [{"term": {field: value}}]}}, "size": 500})
            got = {h["_id"] for h in r["hits"]["hits"]}
            want = {i for i, d in notes.items() if readable(d, who) and pred(d)}
            assert got == want, (who, mode, field)
            for h in r["hits"]["hits"]:
                assert readable(notes[h["_id"]], who)
        r = corpus.call(who, mode, "search", index="notes-auto", body={
            "query": {"bool": {"must": {"match": {"text": "note"}},
                               "filter": {"range": {"metadata.page": {"gte": 5}}}}},
            "size": 500})
        assert {h["_id"] for h in r["hits"]["hits"]} == {
            i for i, d in notes.items() if readable(d, who) and d["metadata"]["page"] >= 5}


def test_forcemerge_gives_back_replaced_rows_and_changes_no_answer(corpus):
    """indices.forcemerge compacts the collection (cordon_collection_compact): every search and
    get answers the same after it; a caller without the manage right is refused."""
    rng = random.Random(77)
    docs = make_docs(rng, 400, prefix="m")
    corpus.admin.indices.create(index="merge", body={"mappings": MAPPING})
    ok, _ = helpers.bulk(corpus.admin, ({"_index": "merge", "_id": i, "_source": d}
                                        for i, d in sorted(docs.items())))
    assert ok == 400
    again = make_docs(random.Random(78), 200, prefix="m")  # the first 200 replaced
    docs.update(again)
    helpers.bulk(corpus.admin, ({"_index": "merge", "_id": i, "_source": d}
                                for i, d in sorted(again.items())))
    for i in ("m0001", "m0350"):
        corpus.admin.delete(index="merge", id=i)
        del docs[i]
    query = {"knn": {"field": "emb", "query_vector": docs["m0002"]["emb"], "k": 20,
                     "num_candidates": 100}, "size": 20}
    text = {"query": {"match": {"body": "alpha bravo"}}, "size": 50}

    def answers():
        out = []
        for who in ("alice", "bob", "dave"):
            for body in (query, text):
                r = corpus.call(who, "key", "search", index="merge", body=body)
                check_docs(docs, "merge", who, r)
                out.append([(h["_id"], h["_score"]) for h in r["hits"]["hits"]])
            out.append(corpus.call(who, "key", "count", index="merge")["count"])
        return out

    before = answers()
    with pytest.raises(es.AuthorizationException):
        corpus.call("dave", "key", "indices.forcemerge", index="merge")
    r = corpus.admin.indices.forcemerge(index="merge")
    assert r["_shards"]["successful"] == 1 and r["_shards"]["failed"] == 0
    assert answers() == before
    with pytest.raises(es.NotFoundError):
        corpus.admin.indices.forcemerge(index="no-such-index")
    corpus.admin.indices.delete(index="merge")

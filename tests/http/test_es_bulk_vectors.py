"""_bulk reads each document's dense_vector straight from its line: the stored vectors, _source
and scores equal those of the same documents written one by one with PUT _doc, and a vector
that is wrong in any way fails its item alone with Elasticsearch's mapper_parsing_exception."""
import json

from wire import people_model

RUN_AS = {"es-security-runas-user": "alice"}
NDJSON = {"Content-Type": "application/x-ndjson"}
MAPPING = {"mappings": {"properties": {
    "t": {"type": "text"},
    "v": {"type": "dense_vector", "dims": 4, "similarity": "cosine"}}}}

# Vectors as clients write them: integers, fixed places, %.17g, exponents, -0 and -0.0.
VECTORS = [
    "[1, 0, 0, 0]",
    "[0.123456, -0.654321, 0.5, 0.25]",
    "[0.30000000000000004, 1.0000000000000002, -1.2345678901234567e-05, 7e-1]",
    "[ -0 , -0.0 , 2.5E+3 , 12345.678e-3 ]",
    "[9007199254740993, 1e-30, 0.000000000000000000001234, 3.4e-38]",
]


def index_with(server, name):
    people_model(server)
    st, _, b = server.request("PUT", "/" + name, MAPPING)
    assert st == 200, b


def bulk(server, lines):
    raw = ("\n".join(lines) + "\n").encode()
    st, _, b = server.request("POST", "/_bulk", raw=raw, headers=NDJSON)
    assert st == 200, b
    return b["items"]


def doc_line(vec, **extra):
    fields = {"t": "some words", "allowed_groups": ["eng"], **extra}
    return json.dumps(fields)[:-1] + ', "v": ' + vec + "}"


def test_bulk_vectors_equal_single_document_writes(server):
    index_with(server, "vb")
    lines = []
    for i, vec in enumerate(VECTORS):
        st, _, b = server.request("PUT", "/vb/_doc/one%d" % i, raw=doc_line(vec).encode())
        assert st == 201, b
        lines += [json.dumps({"index": {"_index": "vb", "_id": "bulk%d" % i}}), doc_line(vec)]
    items = bulk(server, lines)
    assert [it["index"]["status"] for it in items] == [201] * len(VECTORS)
    for i in range(len(VECTORS)):
        _, _, one = server.request("GET", "/vb/_doc/one%d" % i, headers=RUN_AS)
        _, _, blk = server.request("GET", "/vb/_doc/bulk%d" % i, headers=RUN_AS)
        assert one["found"] and blk["found"]
        assert blk["_source"] == one["_source"], (VECTORS[i], one["_source"], blk["_source"])
    st, _, r = server.request("POST", "/vb/_search", {
        "knn": {"field": "v", "query_vector": [0.1, -0.2, 0.3, 0.4], "k": 10,
                "num_candidates": 20}, "size": 10}, headers=RUN_AS)
    assert st == 200, r
    scores = {h["_id"]: h["_score"] for h in r["hits"]["hits"]}
    assert len(scores) == 2 * len(VECTORS)
    for i in range(len(VECTORS)):
        assert scores["bulk%d" % i] == scores["one%d" % i]


def test_bad_vectors_in_bulk_fail_alone(server):
    index_with(server, "vx")
    bad = [
        ("[1, 0, 0]", "must have 4 dimensions"),
        ("[1, 0, 0, 0, 0]", "must have 4 dimensions"),
        ("[]", "must have 4 dimensions"),
        ('"1,0,0,0"', "must have 4 dimensions"),
        ("null", "must have 4 dimensions"),
        ('[1, "0", 0, 0]', "is not a finite number"),
        ("[1, null, 0, 0]", "is not a finite number"),
        ("[1, [0], 0, 0]", "is not a finite number"),
        ("[1, 3.5e38, 0, 0]", "is not a finite number"),
        ("[1, NaN, 0, 0]", "is not a JSON object"),
        ("[1, Infinity, 0, 0]", "is not a JSON object"),
        ("[1, 1e999, 0, 0]", "is not a JSON object"),
        ("[1, 0, 0, 0,]", "is not a JSON object"),
        ("[1, 0, 0, 0], \"v\": [0, 1, 0, 0]", "is not a JSON object"),  # the field twice
        ("[1, 0, 0, 0]} trailing", "is not a JSON object"),
    ]
    lines = [json.dumps({"index": {"_index": "vx", "_id": "good0"}}), doc_line("[0, 1, 0, 0]")]
    for i, (vec, _) in enumerate(bad):
        lines += [json.dumps({"index": {"_index": "vx", "_id": "bad%d" % i}}), doc_line(vec)]
    lines += [json.dumps({"index": {"_index": "vx", "_id": "good1"}}), doc_line("[0, 0, 1, 0]"),
              json.dumps({"index": {"_index": "vx", "_id": "deep"}}),
              json.dumps({"t": "x", "o": json.loads("[" * 150 + "]" * 150),
                          "allowed_groups": ["eng"], "v": [1, 0, 0, 0]})]
    items = bulk(server, lines)
    assert items[0]["index"]["status"] == 201
    assert items[len(bad) + 1]["index"]["status"] == 201
    for i, (vec, why) in enumerate(bad):
        it = items[i + 1]["index"]
        assert it["status"] == 400, (vec, it)
        assert it["error"]["type"] == "mapper_parsing_exception", (vec, it)
        assert why in it["error"]["reason"], (vec, it["error"]["reason"])
    deep = items[-1]["index"]
    assert deep["status"] == 400 and deep["error"]["type"] == "mapper_parsing_exception"
    assert "nests deeper than" in deep["error"]["reason"], deep
    st, _, c = server.request("POST", "/vx/_count", {}, headers=RUN_AS)
    assert c["count"] == 2


def test_depth_limit_counts_the_vector_array(server):
    # json_depth_max is 64 by default: the document is one level, "o" holds the rest.
    index_with(server, "vd")
    def nested(levels):
        return json.loads("[" * levels + "]" * levels)
    lines = []
    for name, levels in (("at-limit", 63), ("over-limit", 64)):
        lines += [json.dumps({"index": {"_index": "vd", "_id": name}}),
                  doc_line("[0, 1, 0, 0]", o=nested(levels))]
    # Depth 2 only through the vector itself: the array counts as a level.
    lines += [json.dumps({"index": {"_index": "vd", "_id": "flat"}}), doc_line("[0, 0, 1, 0]")]
    items = bulk(server, lines)
    assert [it["index"]["status"] for it in items] == [201, 400, 201], items
    assert "nests deeper than 64 levels" in items[1]["index"]["error"]["reason"]


def test_first_document_of_a_new_index_still_maps_its_vector(server):
    people_model(server)
    vec = "[" + ", ".join("%.6f" % (0.01 * i) for i in range(1, 129)) + "]"
    lines = [json.dumps({"index": {"_index": "auto", "_id": "x"}}), "{not json",
             json.dumps({"index": {"_index": "auto", "_id": "a"}}), doc_line(vec),
             json.dumps({"index": {"_index": "auto", "_id": "b"}}), doc_line(vec)]
    items = bulk(server, lines)
    assert [it["index"]["status"] for it in items] == [400, 201, 201]
    st, _, m = server.request("GET", "/auto/_mapping")
    assert st == 200
    v = m["auto"]["mappings"]["properties"]["v"]
    assert v["type"] == "dense_vector" and v["dims"] == 128
    _, _, a = server.request("GET", "/auto/_doc/a", headers=RUN_AS)
    _, _, b = server.request("GET", "/auto/_doc/b", headers=RUN_AS)
    assert a["_source"] == b["_source"] and len(b["_source"]["v"]) == 128

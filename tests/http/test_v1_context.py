"""Prompt context over the wire: numbered passages with sources within the token budget, cut at
a word boundary, adjacent chunks of one document merged, duplicates dropped, deterministic, and
nothing the subject may not read."""
import json

from wire import people_model

SECRET = "SALARYBAND"


def load(server):
    people_model(server)
    st, _, b = server.request("PUT", "/ctx", {"mappings": {"properties": {
        "title": {"type": "text"}, "text": {"type": "text"},
        "doc_id": {"type": "keyword"}, "chunk": {"type": "integer"}}}})
    assert st == 200, b
    docs = [
        ("a0", "Handbook", "travel policy part one about flights", "hb", 0, ["eng", "hr"]),
        ("a1", "Handbook", "travel policy part two about hotels", "hb", 1, ["eng", "hr"]),
        ("a2", "Handbook", "travel policy part three about meals", "hb", 2, ["eng", "hr"]),
        ("dup", "Copy", "travel policy part one about flights", "copy", 0, ["eng"]),
        ("s1", "Bands", "travel policy " + SECRET + " for engineers", "pay", 0, ["hr"]),
        ("long", "Long", "travel " + "word " * 400, "lg", 0, ["eng"]),
    ]
    lines = []
    for i, t, x, d, c, g in docs:
        lines += [{"index": {"_index": "ctx", "_id": i}},
                  {"title": t, "text": x, "doc_id": d, "chunk": c, "allowed_groups": g}]
    raw = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    st, _, b = server.request("POST", "/_bulk", raw=raw,
                              headers={"Content-Type": "application/x-ndjson"})
    assert st == 200 and not b["errors"], b


def context(server, who, **body):
    st, _, b = server.request("POST", "/v1/collections/ctx/context",
                              {"subject": who, "query": {"text": "travel policy"}, **body})
    assert st == 200, b
    return b


def test_context_sources_merge_dedupe_and_permissions(server):
    load(server)
    b = context(server, "alice", k=10, budget_tokens=4000)
    assert SECRET not in json.dumps(b)  # alice is not in hr
    ids = [p["ids"] for p in b["passages"]]
    assert ["a0", "a1", "a2"] in ids  # adjacent chunks of one document, in order
    assert not any("dup" in x for x in ids)  # the same text as a0: dropped
    assert b["context"].startswith("[1] ")
    ctx = b["context"]
    assert ctx.index("part one") < ctx.index("part two") < ctx.index("part three")
    for p in b["passages"]:
        assert p["title"] in ("Handbook", "Long")
    again = context(server, "alice", k=10, budget_tokens=4000)
    assert again["context"] == b["context"] and again["passages"] == b["passages"]
    hr = context(server, "bob", k=10, budget_tokens=4000)
    assert SECRET in hr["context"]


def test_context_budget_and_formats(server):
    load(server)
    b = context(server, "alice", k=10, budget_tokens=60)
    assert b["tokens"] <= 60 and b["truncated"] is True
    text = b["context"]
    assert len(text) <= 60 * 4 + 8
    assert not text.rstrip("\n").endswith("wor")  # never cut mid-word
    md = context(server, "alice", k=10, budget_tokens=4000, format="markdown", citation="id")
    assert md["context"].startswith("### [")
    js = context(server, "alice", k=10, budget_tokens=4000, format="json")
    assert isinstance(js["context"], list) and js["context"][0]["n"] == 1
    st, _, e = server.request("POST", "/v1/collections/ctx/context",
                              {"subject": "alice", "query": {"text": "x"}, "format": "yaml"})
    assert st == 400 and e["error"]["type"] == "illegal_argument_exception"
    st, _, e = server.request("POST", "/v1/collections/ctx/context",
                              {"subject": "alice", "query": {"text": "x"}, "budget_tokens": 0})
    assert st == 400


def test_context_truncated_when_a_passage_is_left_out_for_the_budget(server):
    load(server)
    full = context(server, "alice", k=10, budget_tokens=4000)
    assert len(full["passages"]) >= 2 and full["truncated"] is False
    first = full["passages"][0]["tokens"]
    # Room for the first passage whole and not for the second's heading: the second is left
    # out, not cut, and the context says it was truncated.
    b = context(server, "alice", k=10, budget_tokens=first + 1)
    assert [p["ids"] for p in b["passages"]] == [full["passages"][0]["ids"]]
    assert b["passages"][0]["truncated"] is False
    assert b["truncated"] is True

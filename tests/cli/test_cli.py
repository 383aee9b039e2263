"""The cordon command line, driven as a user would: loading, searching as subjects, the
permission model, the demo, and clear errors that change nothing."""
import json


def write_lines(tmp_path, lines, name="chunks.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(x) + "\n" if not isinstance(x, str) else x + "\n"
                         for x in lines))
    return str(p)


CHUNKS = [
    {"id": "a", "title": "alpha report", "text": "quarterly salary review", "vector": [1, 0, 0],
     "allowed": ["group:hr"]},
    {"id": "b", "title": "beta design", "text": "flight controller design", "vector": [0, 1, 0],
     "allowed": ["eng"]},
    {"id": "c", "title": "gamma policy", "text": "travel policy for everyone",
     "vector": [0, 0, 1], "allowed": ["group:all"], "denied": ["user:mallory"]},
]


def load(cordon, data, path, *extra, check=0):
    return cordon("load", "--data", data, "--collection", "docs", "--create", "--dim", "3",
                  "--metric", "l2_norm", "--asserted-principals", "--analyzer", "english",
                  "--quiet", *extra, path, check=check)


def search(cordon, data, *args):
    p = cordon("search", "--data", data, "--collection", "docs", "--json", *args, check=0)
    return json.loads(p.stdout)


def test_help_lists_every_command(cordon):
    out = cordon("--help", check=0).stdout
    for cmd in ("demo", "load", "search", "model", "check", "explain", "bench"):
        assert cmd in out
    assert cordon("frobnicate").returncode == 2


def test_subjects_see_only_what_they_may_read(cordon, data, tmp_path):
    load(cordon, data, write_lines(tmp_path, CHUNKS))
    r = search(cordon, data, "--as", "group:all,eng", "--vector", "1,0,0")
    assert sorted(h["id"] for h in r["hits"]) == ["b", "c"]
    assert r["readable"] == 2 and r["complete"] is True
    r = search(cordon, data, "--as", "user:mallory,group:all", "--vector", "0,0,1")
    assert r["hits"] == [] and r["readable"] == 0          # the deny overrides
    r = search(cordon, data, "--as", "group:hr", "--text", "salary")
    assert [h["id"] for h in r["hits"]] == ["a"]
    r = search(cordon, data, "--as", "eng", "--text", "salary")
    assert r["hits"] == []                                 # a's words exist, a is hidden


def test_malformed_line_loads_nothing_and_names_the_line(cordon, data, tmp_path):
    lines = CHUNKS[:2] + ['{"id": "broken", "vector": [1, 2'] + CHUNKS[2:]
    p = load(cordon, data, write_lines(tmp_path, lines), check=1)
    assert "line 3" in p.stderr and "JSON" in p.stderr
    p = cordon("search", "--data", data, "--collection", "docs", "--as", "eng", "--vector",
               "1,0,0", check=1)
    assert "no such collection" in p.stderr                # no half-made collection left
    load(cordon, data, write_lines(tmp_path, CHUNKS[:1], "first.jsonl"))
    more = [dict(c, id=c["id"] + "2") for c in CHUNKS] + ["not json at all"]
    p = cordon("load", "--data", data, "--collection", "docs", "--quiet",
               write_lines(tmp_path, more, "more.jsonl"), check=1)
    assert "line 4" in p.stderr
    r = search(cordon, data, "--as", "group:all,eng,group:hr", "--vector", "1,0,0")
    assert r["readable"] == 1                              # only the first load's chunk


def test_bad_vectors_and_missing_ids_are_refused(cordon, data, tmp_path):
    p = load(cordon, data, write_lines(tmp_path, [{"id": "x", "vector": [1, 2]}]), check=1)
    assert "expects 3" in p.stderr and "line 1" in p.stderr
    p = load(cordon, data, write_lines(tmp_path, [{"vector": [1, 2, 3]}], "b.jsonl"), check=1)
    assert "no \"id\"" in p.stderr
    p = cordon("load", "--data", data, "--collection", "nothere", "--quiet",
               write_lines(tmp_path, CHUNKS, "c.jsonl"), check=1)
    assert "no such collection \"nothere\"" in p.stderr
    load(cordon, data, write_lines(tmp_path, CHUNKS, "d.jsonl"))
    p = cordon("search", "--data", data, "--collection", "docs", "--as", "eng", "--vector",
               "1,nan,0", check=1)
    assert "not a finite number" in p.stderr or "value 1" in p.stderr
    p = cordon("search", "--data", data, "--collection", "docs", "--as", "eng", "--vector",
               "1,0", check=1)
    assert "expects 3" in p.stderr


def test_model_subjects_check_and_revocation(cordon, data, tmp_path):
    load(cordon, data, write_lines(tmp_path, CHUNKS))
    ops = [
        {"op": "put_subject", "id": "ann"},
        {"op": "put_group", "id": "eng"},
        {"op": "add_member", "group": "eng", "member": "ann"},
        {"op": "put_role", "id": "reader", "permissions": [
            {"resource": "collection:docs", "action": "search"}]},
        {"op": "grant", "to": "eng", "to_kind": "group", "role": "reader"},
    ]
    cordon("model", "apply", "--data", data, "-",
           stdin="\n".join(json.dumps(o) for o in ops), check=0)
    assert [h["id"] for h in search(cordon, data, "--subject", "ann", "--text", "design")[
        "hits"]] == ["b"]
    assert cordon("check", "--data", data, "--subject", "ann", "--resource",
                  "collection:docs", "--action", "search").returncode == 0
    cordon("model", "apply", "--data", data,
           '{"op":"remove_member","group":"eng","member":"ann"}', check=0)
    p = cordon("check", "--data", data, "--subject", "ann", "--resource", "collection:docs",
               "--action", "search", check=1)
    assert "NO_MATCHING_PERMISSION_FOUND" in p.stdout
    p = cordon("search", "--data", data, "--collection", "docs", "--subject", "ann",
               "--text", "design", check=1)
    assert "no such collection" in p.stderr
    before = cordon("model", "export", "--data", data, check=0).stdout
    p = cordon("model", "apply", "--data", data,
               '{"op":"add_member","group":"eng","member":"eng","member_kind":"group"}', check=1)
    assert cordon("model", "export", "--data", data, check=0).stdout == before


def test_demo_shows_different_answers_and_a_revocation(cordon, data):
    out = cordon("demo", "--data", data, check=0).stdout
    assert "as dana" in out and "as alice" in out
    before, after = out.split("bob, before")[1].split("bob, after")
    assert "salary bands" in before
    assert "salary bands" not in after                 # the very next query

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
    for cmd in ("demo", "load", "search", "model", "check", "explain", "bench", "list",
                "info", "drop", "compact", "delete", "set-acl"):
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


def test_tenants_and_labels_load_and_wall_off_readers(cordon, data, tmp_path):
    lines = [dict(CHUNKS[1], id="acme-b", tenant="acme"),
             dict(CHUNKS[1], id="acme-secret", tenant="acme", labels=["secret"]),
             dict(CHUNKS[1], id="globex-b", tenant="globex"), CHUNKS[1]]
    load(cordon, data, write_lines(tmp_path, lines))
    ids = lambda r: sorted(h["id"] for h in r["hits"])
    assert ids(search(cordon, data, "--as", "eng", "--vector", "0,1,0")) == ["b"]
    assert ids(search(cordon, data, "--as", "eng,tenant:acme", "--vector", "0,1,0")) == [
        "acme-b", "acme-secret", "b"]
    assert ids(search(cordon, data, "--as", "eng,tenant:acme,label:secret", "--vector",
                      "0,1,0")) == ["acme-b", "b"]
    for bad, word in (({"tenant": ["acme"]}, "tenant"), ({"tenant": "a:b"}, "tenant"),
                      ({"labels": ["a b"]}, "label")):
        p = cordon("load", "--data", data, "--collection", "docs", "--quiet",
                   write_lines(tmp_path, [dict(CHUNKS[1], id="x", **bad)], "bad.jsonl"),
                   check=1)
        assert word in p.stderr and "line 1" in p.stderr, p.stderr


def test_chunks_naming_objects_follow_the_tuples(cordon, data, tmp_path):
    lines = [dict(CHUNKS[1], id="in-plans", object="document:q3"),
             dict(CHUNKS[1], id="elsewhere", object="document:q4")]
    load(cordon, data, write_lines(tmp_path, lines))
    ops = [{"op": "put_subject", "id": "ann"},
           {"op": "grant", "to": "ann", "permission": {"resource": "collection:docs",
                                                       "action": "*"}},
           {"op": "put_schema", "schema": {"types": {
               "user": {}, "folder": {"relations": {"viewer": ["user"]}},
               "document": {"relations": {"parent": ["folder"]},
                            "permissions": {"view": "parent->viewer"}}}}},
           {"op": "write_tuples", "writes": ["folder:plans#viewer@user:ann",
                                             "document:q3#parent@folder:plans"]}]
    cordon("model", "apply", "--data", data, "-",
           stdin="\n".join(json.dumps(o) for o in ops), check=0)
    r = search(cordon, data, "--subject", "ann", "--vector", "0,1,0")
    assert [h["id"] for h in r["hits"]] == ["in-plans"]
    p = cordon("load", "--data", data, "--collection", "docs", "--quiet",
               write_lines(tmp_path, [dict(CHUNKS[1], id="x", object="not an object")], "b.jsonl"),
               check=1)
    assert "object" in p.stderr and "line 1" in p.stderr


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


def count(cordon, data, principals, collection="docs"):
    p = cordon("search", "--data", data, "--collection", collection, "--json", "--as",
               principals, "--vector", "1,0,0", "--k", "1000", check=0)
    return json.loads(p.stdout)["readable"]


def test_line_the_engine_refuses_loads_nothing_and_is_named(cordon, data, tmp_path):
    # Line 1,502 passes the loader's own parsing but not the engine's id rule; the batches
    # before it must not be written, and the message must name the file's line.
    load(cordon, data, write_lines(tmp_path, CHUNKS[:1], "seed.jsonl"))
    lines = [{"id": "b%d" % i, "vector": [1, 0, 0], "allowed": ["group:all"]}
             for i in range(1501)]
    lines.append({"id": "bad\u0002", "vector": [1, 0, 0], "allowed": ["group:all"]})
    before = count(cordon, data, "group:all,group:hr")
    p = cordon("load", "--data", data, "--collection", "docs", "--quiet",
               write_lines(tmp_path, lines, "big.jsonl"), check=1)
    assert "line 1502" in p.stderr and "control character" in p.stderr
    assert "chunk 501" not in p.stderr and "nothing was loaded" in p.stderr
    assert count(cordon, data, "group:all,group:hr") == before == 1


def test_misspelt_keys_are_refused_not_ignored(cordon, data, tmp_path):
    good = {"id": "s3", "text": "payroll secret", "vector": [1, 0, 0],
            "allowed": ["group:eng"], "denied": ["user:bob"]}
    for typo in ("deny", "Denied"):
        bad = {"id": "s", "text": "payroll secret", "vector": [1, 0, 0],
               "allowed": ["group:eng"], typo: ["user:bob"]}
        p = load(cordon, data, write_lines(tmp_path, [good, bad], typo + ".jsonl"), check=1)
        assert "line 2" in p.stderr and '"%s"' % typo in p.stderr
        assert 'did you mean "denied"' in p.stderr
        p = cordon("search", "--data", data, "--collection", "docs", "--as", "eng",
                   "--vector", "1,0,0", check=1)
        assert "no such collection" in p.stderr
    p = load(cordon, data, write_lines(tmp_path, [dict(good, fields={"titel": "x"})], "f.jsonl"),
             check=1)
    assert '"titel"' in p.stderr and "line 1" in p.stderr
    # Every documented form still loads: "_id", text under "fields", the collection's ACL
    # field, metadata as an object.
    forms = [{"_id": "u1", "fields": {"title": "one"}, "vector": [1, 0, 0],
              "allowed_groups": ["eng"], "metadata": {"k": 1}},
             {"id": "u2", "title": "two", "text": "t", "vector": [0, 1, 0],
              "allowed": ["group:eng"], "denied": ["user:bob"]}]
    load(cordon, data, write_lines(tmp_path, forms, "forms.jsonl"))
    assert count(cordon, data, "group:eng") == 2
    assert count(cordon, data, "group:eng,user:bob") == 1


def test_unknown_principal_kind_is_refused_and_loads_nothing(cordon, data, tmp_path):
    lines = [CHUNKS[0], {"id": "plan", "text": "layoff plan", "vector": [1, 0, 0],
                         "allowed": ["group:eng"], "denied": ["usr:mallory"]}]
    p = load(cordon, data, write_lines(tmp_path, lines), check=1)
    assert "line 2" in p.stderr and '"usr:mallory" has an unknown kind' in p.stderr
    load(cordon, data, write_lines(tmp_path, CHUNKS, "ok.jsonl"))
    p = cordon("search", "--data", data, "--collection", "docs", "--as", "usr:mallory",
               "--vector", "1,0,0", check=1)
    assert "usr:mallory" in p.stderr


def test_reading_commands_do_not_create_a_data_directory(cordon, tmp_path):
    missing = str(tmp_path / "nonexistent")
    for args in (["search", "--collection", "docs", "--as", "eng", "--text", "x"],
                 ["check", "--subject", "ann", "--resource", "collection:docs", "--action",
                  "search"],
                 ["explain", "--collection", "docs", "--subject", "ann", "--id", "a"],
                 ["model", "export"], ["model", "view", "ann"],
                 ["load", "--collection", "docs", "--quiet", write_lines(tmp_path, CHUNKS)]):
        p = cordon(args[0], "--data", missing, *args[1:])
        assert p.returncode != 0, args
        assert "no cordon database in " + missing in p.stderr, (args, p.stderr)
        assert "--create" in p.stderr
        assert not (tmp_path / "nonexistent").exists(), args

"""The command line's collection and chunk commands (list, info, drop, compact, delete,
set-acl), what `cordon load --create` infers from a file (vector dimension, metadata fields), its
notes and progress, search filters, and each model verb's own --help."""
import json

from test_cli import CHUNKS, load, search, write_lines


def create_plain(cordon, data, path, *extra, check=0):
    return cordon("load", "--data", data, "--collection", "docs", "--create",
                  "--asserted-principals", *extra, path, check=check)


def test_create_infers_the_dimension_from_the_first_vector(cordon, data, tmp_path):
    p = create_plain(cordon, data, write_lines(tmp_path, CHUNKS))
    assert "vectors of 3 values" in p.stderr
    info = json.loads(cordon("info", "--data", data, "--collection", "docs", "--json",
                             check=0).stdout)
    assert info["dim"] == 3 and info["chunks"] == 3
    r = search(cordon, data, "--as", "eng", "--vector", "0,1,0")
    assert [h["id"] for h in r["hits"]] == ["b"]


def test_codes_by_default_from_128_dimensions_and_on_request(cordon, tmp_path):
    for dim, flags, codes in ((128, (), True), (127, (), False), (128, ("--no-int8-scan",), False),
                              (3, ("--int8-scan",), True)):
        data = str(tmp_path / ("d%d%s" % (dim, "".join(flags))))
        lines = [dict(c, vector=[float((i + j) % 5) + 0.5 for j in range(dim)])
                 for i, c in enumerate(CHUNKS)]
        create_plain(cordon, data, write_lines(tmp_path, lines), *flags)
        info = json.loads(cordon("info", "--data", data, "--collection", "docs", "--json",
                                 check=0).stdout)
        assert info["dim"] == dim and info["int8_scan"] is codes, (dim, flags, info)


META = [{"id": "m%d" % i, "title": "report %d" % i, "text": "quarterly numbers",
         "allowed": ["group:all"],
         "metadata": {"dept": "hr" if i % 2 else "it", "year": 2000 + i, "public": i % 3 == 0,
                      "mixed": i if i % 2 else "x", "tags": ["a", "b"]}}
        for i in range(20)]


def test_create_declares_metadata_fields_so_filters_work(cordon, data, tmp_path):
    p = create_plain(cordon, data, write_lines(tmp_path, META))
    assert "dept:keyword" in p.stderr and "year:number" in p.stderr
    assert "public:bool" in p.stderr and "mixed:" not in p.stderr and "tags:" not in p.stderr
    info = json.loads(cordon("info", "--data", data, "--collection", "docs", "--json",
                             check=0).stdout)
    assert info["metadata_fields"] == {"dept": "keyword", "year": "number", "public": "bool"}
    r = search(cordon, data, "--as", "group:all", "--text", "quarterly", "--k", "50",
               "--filter", '{"range":{"year":{"gte":2015}}}')
    assert sorted(h["id"] for h in r["hits"]) == ["m%d" % i for i in range(15, 20)]
    r = search(cordon, data, "--as", "group:all", "--text", "quarterly", "--k", "50",
               "--filter", '{"bool":{"filter":[{"term":{"dept":"hr"}},{"term":{"public":true}}]}}')
    assert sorted(h["id"] for h in r["hits"]) == sorted("m%d" % i for i in range(20)
                                                        if i % 2 and i % 3 == 0)


def test_declared_metadata_fields_replace_inference(cordon, data, tmp_path):
    p = create_plain(cordon, data, write_lines(tmp_path, META), "--keyword", "dept",
                     "--number", "year")
    assert "metadata fields for filters" not in p.stderr
    info = json.loads(cordon("info", "--data", data, "--collection", "docs", "--json",
                             check=0).stdout)
    assert info["metadata_fields"] == {"dept": "keyword", "year": "number"}


def test_note_about_unreadable_lines_counts_them_and_only_when_there_are_some(cordon, data,
                                                                                  tmp_path):
    p = create_plain(cordon, data, write_lines(tmp_path, CHUNKS))
    assert "name no principal" not in p.stderr
    lines = [dict(c, id=c["id"] + "2") for c in CHUNKS]
    del lines[1]["allowed"]
    p = cordon("load", "--data", data, "--collection", "docs", write_lines(tmp_path, lines,
               "some.jsonl"), check=0)
    assert "1 of 3 lines name no principal" in p.stderr
    assert "loading" in p.stderr and "3 lines" in p.stderr   # the progress report, not a tty
    p = cordon("load", "--data", data, "--collection", "docs", "--allow", "group:all",
               write_lines(tmp_path, [dict(lines[1], id="b3")], "one.jsonl"), check=0)
    assert "name no principal" not in p.stderr


def test_list_info_drop(cordon, data, tmp_path):
    load(cordon, data, write_lines(tmp_path, CHUNKS))
    out = cordon("list", "--data", data, check=0).stdout
    assert out.startswith("docs") and "3 chunks" in out
    info = cordon("info", "--data", data, "--collection", "docs", check=0).stdout
    assert "l2_norm" in info and "analyzer english" in info and "graph memory" in info
    assert json.loads(cordon("list", "--data", data, "--json", check=0).stdout) == [
        {"name": "docs", "chunks": 3, "dim": 3, "metric": "l2_norm"}]
    p = cordon("info", "--data", data, "--collection", "nope", check=1)
    assert 'no such collection "nope"' in p.stderr
    cordon("drop", "--data", data, "--collection", "docs", check=0)
    assert json.loads(cordon("list", "--data", data, "--json", check=0).stdout) == []
    p = cordon("drop", "--data", data, "--collection", "docs", check=1)
    assert "no such collection" in p.stderr


def test_delete_and_set_acl_by_id(cordon, data, tmp_path):
    load(cordon, data, write_lines(tmp_path, CHUNKS))
    p = cordon("set-acl", "--data", data, "--collection", "docs", "--allow", "user:bob",
               "--deny", "user:eve", "a", "c", check=0)
    assert "2 chunks" in p.stdout
    r = search(cordon, data, "--as", "user:bob", "--text", "salary travel", "--k", "10")
    assert sorted(h["id"] for h in r["hits"]) == ["a", "c"]
    r = search(cordon, data, "--as", "user:bob,user:eve", "--text", "salary travel")
    assert r["hits"] == []
    r = search(cordon, data, "--as", "group:hr", "--text", "salary")
    assert r["hits"] == []                               # the old ACL is gone
    p = cordon("set-acl", "--data", data, "--collection", "docs", "--allow", "group:hr",
               "a", "zz", check=1)
    assert '"zz"' in p.stderr                            # all or nothing: a kept bob
    assert [h["id"] for h in search(cordon, data, "--as", "user:bob", "--text",
                                    "salary")["hits"]] == ["a"]
    ids = tmp_path / "ids.txt"
    ids.write_text("a\n\nzz\r\n")
    p = cordon("delete", "--data", data, "--collection", "docs", "--ids", str(ids), check=0)
    assert "deleted 1 of 2 chunks (1 not found)" in p.stdout
    assert search(cordon, data, "--as", "user:bob", "--text", "salary")["hits"] == []
    assert cordon("delete", "--data", data, "--collection", "docs", check=2).returncode == 2


def test_search_max_candidates_is_accepted_and_checked(cordon, data, tmp_path):
    load(cordon, data, write_lines(tmp_path, CHUNKS))
    r = search(cordon, data, "--as", "eng", "--vector", "0,1,0", "--strategy", "postfilter",
               "--max-candidates", "5")
    assert [h["id"] for h in r["hits"]] == ["b"]
    p = cordon("search", "--data", data, "--collection", "docs", "--as", "eng", "--vector",
               "0,1,0", "--max-candidates", "many")
    assert p.returncode == 2 and "--max-candidates" in p.stderr


def test_each_model_verb_has_its_own_help(cordon):
    texts = {}
    for verb in ("import", "export", "apply", "view"):
        p = cordon("model", verb, "--help", check=0)
        assert p.stdout.startswith("usage: cordon model " + verb), p.stdout
        texts[verb] = p.stdout
    assert len(set(texts.values())) == 4
    assert "VERB --help" in cordon("model", "--help", check=0).stdout


def test_search_as_principals_on_a_subject_only_collection_says_why(cordon, data, tmp_path):
    cordon("load", "--data", data, "--collection", "docs", "--create", "--quiet",
           write_lines(tmp_path, CHUNKS), check=0)
    p = cordon("search", "--data", data, "--collection", "docs", "--as", "eng", "--text",
               "design", check=1)
    assert 'no such collection "docs"' in p.stderr        # what the engine says to anyone
    assert "takes only subjects of the permission model" in p.stderr   # the operator's hint


def test_asof_answers_by_revision_and_time(cordon, data, tmp_path):
    load(cordon, data, write_lines(tmp_path, CHUNKS))
    p = cordon("set-acl", "--data", data, "--collection", "docs", "--allow", "group:eng", "a",
               check=0)
    after = int(p.stdout.split("revision ")[1])
    before = after - 1
    base = ["asof", "--data", data, "--collection", "docs"]
    p = cordon(*base, "--as", "group:hr", "--revision", str(before), "--chunk", "a", check=0)
    assert p.stdout == f"readable after revision {before}: READABLE group:hr\n"
    p = cordon(*base, "--as", "group:hr", "--revision", str(after), "--chunk", "a", check=0)
    assert p.stdout.startswith("not readable") and "NO_MATCHING_PRINCIPAL" in p.stdout
    p = cordon(*base, "--as", "eng,user:mallory", "--revision", str(after), check=0)
    assert sorted(p.stdout.split()) == ["a", "b"]
    p = cordon(*base, "--as", "group:all,user:mallory", "--revision", str(after), "--chunk", "c",
               check=0)
    assert "DENIED user:mallory" in p.stdout
    p = cordon(*base, "--as", "group:hr", "--at", "1990-01-01", "--chunk", "a", check=1)
    assert "nothing was written yet" in p.stderr
    p = cordon(*base, "--as", "group:hr", "--chunk", "a", check=2)  # no revision or time
    assert "--revision" in p.stderr


def test_history_prune_keeps_later_states(cordon, data, tmp_path):
    load(cordon, data, write_lines(tmp_path, CHUNKS))
    revs = []
    for group in ("group:eng", "group:ops", "group:eng"):
        p = cordon("set-acl", "--data", data, "--collection", "docs", "--allow", group, "a",
                   check=0)
        revs.append(int(p.stdout.split("revision ")[1]))
    p = cordon("history", "prune", "--data", data, "--before-revision", str(revs[1]), check=0)
    assert f"starts at revision {revs[1]}" in p.stdout
    base = ["asof", "--data", data, "--collection", "docs", "--as", "group:ops", "--chunk", "a"]
    assert cordon(*base, "--revision", str(revs[1]), check=0).stdout.startswith("readable")
    assert cordon(*base, "--revision", str(revs[2]), check=0).stdout.startswith("not readable")
    p = cordon(*base, "--revision", str(revs[0]), check=1)
    assert "history starts" in p.stderr
    assert cordon("history", "prune", "--data", data, check=2).returncode == 2


def test_compact_gives_back_the_rows_of_replaced_and_deleted_chunks(cordon, data, tmp_path):
    path = write_lines(tmp_path, CHUNKS)
    load(cordon, data, path)
    cordon("load", "--data", data, "--collection", "docs", "--quiet", path,
           check=0)                                      # every chunk replaced: rows left behind
    cordon("delete", "--data", data, "--collection", "docs", "a", check=0)
    info = json.loads(cordon("info", "--data", data, "--collection", "docs", "--json",
                             check=0).stdout)
    assert info["chunks"] == 2 and info["rows"] == 6
    before = search(cordon, data, "--as", "group:all,eng", "--vector", "1,0,0")
    p = cordon("compact", "--data", data, check=0)
    assert "6 rows -> 2" in p.stdout
    info = json.loads(cordon("info", "--data", data, "--collection", "docs", "--json",
                             check=0).stdout)
    assert info["chunks"] == 2 and info["rows"] == 2
    after = search(cordon, data, "--as", "group:all,eng", "--vector", "1,0,0")
    assert after["hits"] == before["hits"]
    assert search(cordon, data, "--as", "user:mallory,group:all", "--vector", "0,0,1")["hits"] == []
    p = cordon("compact", "--data", data, "--collection", "docs", check=0)
    assert "nothing to do" in p.stdout
    p = cordon("compact", "--data", data, "--collection", "nope", check=1)
    assert 'no such collection "nope"' in p.stderr
    assert cordon("compact", "--data", data, "stray", check=2).returncode == 2

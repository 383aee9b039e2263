"""`cordon bench`: the benchmarks run as the program cordon-bench beside the cordon binary."""
import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def binary():
    return os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))


def test_bench_help_lists_the_benchmarks_of_cordon_bench(cordon):
    out = cordon("bench", "--help", check=0).stdout
    for name in ("authz", "hnsw", "text", "scan", "quant", "permissions", "writers", "load"):
        assert name in out
    assert "--corpus" in cordon("bench", "text", "--help", check=0).stdout
    assert cordon("bench", "frobnicate").returncode == 2


def test_bench_without_cordon_bench_names_the_expected_path_and_make(tmp_path):
    lone = tmp_path / "cordon"
    shutil.copy(binary(), lone)
    p = subprocess.run([str(lone), "bench", "hnsw", "--help"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1
    assert str(tmp_path / "cordon-bench") in p.stderr and "make" in p.stderr


TINY_LOAD = ("bench", "load", "--size", "1500", "--dim", "16", "--users", "2", "--seconds", "1",
             "--bulk-docs", "300", "--batch", "100", "--writers", "1,2", "--format", "json")


def test_bench_load_runs_end_to_end_on_a_tiny_corpus(cordon, tmp_path):
    p = cordon(*TINY_LOAD, "--dir", str(tmp_path))
    assert p.returncode == 0, (p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    rows = {(r["target"], r["via"], r["users"]): r for r in doc["rows"]}
    for target in ("knn", "match", "hybrid"):
        r = rows[(target, "http", 2)]
        assert r["requests"] > 0 and r["chunks_checked"] > 0, r
        assert r["leaks"] == 0 and r["errors"] == 0, r
    assert rows[("match", "http", 2)]["readable"] == 1.0
    assert rows[("knn", "http", 2)]["readable"] == 0.01
    for via, writers in (("http", 1), ("http", 2), ("c", 1)):
        assert rows[("bulk", via, writers)]["documents_per_s"] > 0
    assert rows[("root", "http", 1)]["requests_per_s"] > 0
    assert rows[("search1", "http", 1)]["chunks_checked"] > 0
    assert rows[("search1", "c", 1)]["chunks_checked"] > 0
    assert doc["ratios"]["bulk_http_over_c"] > 0
    assert os.listdir(tmp_path) == []  # the server's and the C API's directories are gone


def test_bench_load_fails_when_hits_leak(cordon, tmp_path):
    p = cordon("bench", "load", "--size", "600", "--dim", "16", "--users", "1", "--seconds", "1",
               "--mode", "knn", "--bulk-docs", "0", "--no-overhead", "--leak-selftest",
               "--format", "json", "--dir", str(tmp_path))
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "LEAK" in p.stderr
    assert json.loads(p.stdout)["rows"][0]["leaks"] > 0


def test_bench_load_refuses_bad_options(cordon):
    assert cordon("bench", "load", "--users", "33").returncode == 2
    assert cordon("bench", "load", "--readable", "0").returncode == 2
    assert cordon("bench", "load", "--mode", "fuzzy").returncode == 2
    assert cordon("bench", "load", "--key", "a:b").returncode == 2
    assert "--users" in cordon("bench", "load", "--help", check=0).stdout


def test_bench_audit_runs_and_prints_its_rows(cordon):
    p = cordon("bench", "audit", "--size", "2000", "--queries", "20", "--passes", "1",
               "--changes", "300", "--format", "json")
    assert p.returncode == 0, (p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    rows = doc["rows"]
    sides = {(r["audit"], r["readable"]) for r in rows if "audit" in r}
    assert sides == {(a, s) for a in ("off", "on", "on-sync") for s in (1, 0.1, 0.01)}
    for r in rows:
        if "audit" in r:
            assert r["p50_ms"] > 0 and r["p99_ms"] >= r["p50_ms"]
            assert (r["bytes_per_record"] > 0) == (r["audit"] != "off")
    asof = [r for r in rows if r.get("op") == "asof_check"]
    assert len(asof) == 1 and asof[0]["changes"] > 100
    assert asof[0]["p95_us"] >= asof[0]["p50_us"] > 0
    assert cordon("bench", "audit", "--size", "10").returncode == 2


def test_bench_churn_reports_growth_per_checkpoint_a_compaction_and_a_fresh_baseline(cordon):
    p = cordon("bench", "churn", "--size", "3000", "--dim", "16", "--queries", "20",
               "--checkpoints", "2", "--efs", "16,64", "--format", "json")
    assert p.returncode == 0, (p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    churn = [r for r in doc["rows"] if r["phase"] == "churn"]
    fresh = [r for r in doc["rows"] if r["phase"] == "fresh"]
    compact = [r for r in doc["rows"] if r["phase"] == "compact"]
    assert len(churn) == 3 and len(fresh) == 1  # checkpoint 0 and two over the replacing
    assert len(compact) == 1 and doc["rows"][-2]["phase"] == "compact"
    for r in doc["rows"]:
        for key in ("replaced_share", "rows", "chunks", "recall_at_10", "p50_ms", "p99_ms",
                    "rss_mb", "vector_mb", "graph_mb", "codes_mb", "disk_mb"):
            assert key in r, (key, r)
        assert 0 <= r["recall_at_10"] <= 1 and r["chunks"] == 3000, r
        assert r["p99_ms"] >= r["p50_ms"] > 0 and r["disk_mb"] > 0, r
    assert [r["replaced_share"] for r in churn] == [0, 0.15, 0.3]
    assert churn[0]["rows"] == 3000
    # every replace appends a row: 30% of 3,000 replaced leaves 3,900 rows, 900 of them dead
    assert abs(churn[-1]["rows"] - 3000 * 1.3) <= 30, churn[-1]
    assert churn[-1]["vector_mb"] > churn[0]["vector_mb"]
    assert fresh[0]["rows"] == 3000 and fresh[0]["replaced_share"] == 0.3
    assert doc["ratios"]["vector_bytes"] > 1.2
    # the compaction gives the 900 dead rows back: the files are the fresh build's size
    assert compact[0]["rows"] == 3000 and compact[0]["replaced_share"] == 0.3
    assert doc["ratios_compacted"]["vector_bytes"] == 1.0
    assert doc["ratios_compacted"]["graph_bytes"] <= 1.05
    assert compact[0]["recall_at_10"] >= 0.9 and doc["compact_s"] > 0
    # --efs: both collections measured again at each breadth given
    assert [s["ef"] for s in doc["ef_sweep"]] == [16, 64]
    for s in doc["ef_sweep"]:
        assert 0.9 <= s["compacted_recall"] <= 1 and 0.9 <= s["fresh_recall"] <= 1, s
        assert s["compacted_p50_ms"] > 0 and s["fresh_p50_ms"] > 0, s
    for bad in ("0", "16,", "a", "1,2,3,4,5,6,7,8,9", "5000"):
        p = cordon("bench", "churn", "--size", "3000", "--efs", bad)
        assert p.returncode == 2 and "--efs needs" in p.stderr, (bad, p.stderr)


def test_bench_repair_compares_a_replaced_graph_with_a_fresh_one(cordon):
    p = cordon("bench", "repair", "--size", "5000", "--dim", "16", "--queries", "30",
               "--codes", "--format", "json")
    assert p.returncode == 0, (p.stdout, p.stderr)
    doc = json.loads(p.stdout)
    # 30% of 5,000 replaced: 1,500 new nodes, the 1,500 old ones deleted and all unlinked
    assert doc["nodes"] == 6500 and doc["deleted"] == 1500 and doc["deleted_linked"] == 0
    assert doc["codes"] == 1 and doc["churn_s"] > 0
    for graph in ("replaced", "fresh"):
        rows = [r for r in doc["rows"] if r["graph"] == graph]
        assert [r["ef"] for r in rows] == [32, 64, 128, 192, 256]
        assert all(0 <= r["recall_at_10"] <= 1 and r["p50_ms"] > 0 for r in rows), rows
        assert rows[-1]["recall_at_10"] >= 0.95 and rows[-1]["visited"] > rows[0]["visited"]
    assert cordon("bench", "repair", "--replace", "1.5").returncode == 2


def test_bench_rebac_prints_its_rows_and_verifies_its_writes(cordon):
    p = cordon("bench", "rebac", "--tuples", "20000", "--checks", "200", "--chunks", "3000",
               "--format", "json", check=0)
    rows = json.loads(p.stdout)
    ops = {r["op"]: r for r in rows}
    assert set(ops) == {"check", "lookup_resources", "share", "unshare", "move", "load",
                        "search_reader", "search_few"}
    assert ops["search_reader"]["hits"] > 0  # chunks naming the shared folder's documents
    for k in ("search_reader", "search_few"):  # planner against exact, hits against the tuples
        assert ops[k]["recall"] >= 0.99 and ops[k]["leaks"] == 0, ops[k]
    assert ops["load"]["tuples"] >= 20000
    assert ops["lookup_resources"]["found"] > 0     # the shared top folder's documents
    assert ops["check"]["p50_us"] > 0
    assert cordon("bench", "rebac", "--tuples", "10").returncode == 2
    assert "--tuples" in cordon("bench", "rebac", "--help", check=0).stdout


def test_bench_puts_writes_timed_batches_into_an_existing_directory(cordon, tmp_path):
    data = str(tmp_path / "d")
    cordon("bench", "permissions", "--corpus", "generated", "--size", "2000", "--dim", "16",
           "--queries", "5", "--data", data, "--keep", "--strategy", "auto", check=0)
    p = cordon("bench", "puts", "--data", data, "--batches", "3", "--batch", "40", check=0)
    rows = [line.split() for line in p.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["0", "1", "2"], p.stdout
    assert all(float(r[1]) > 0 for r in rows), p.stdout
    assert "resident" in p.stdout and "(16 dimensions)" in p.stdout
    missing = cordon("bench", "puts", "--data", data, "--collection", "nope", check=1)
    assert "nope" in missing.stderr, missing.stderr
    cordon("bench", "puts", "--batches", "1", check=2)  # no --data
    cordon("bench", "puts", "--data", data, "--batch", "0", check=2)


def test_bench_permissions_measures_only_the_shares_asked(cordon, tmp_path):
    p = cordon("bench", "permissions", "--corpus", "generated", "--size", "2000", "--dim", "16",
               "--queries", "5", "--strategy", "auto", "--shares", "20,0.1", "--format", "json",
               check=0)
    rows = json.loads(p.stdout)["rows"]
    assert sorted({r["readable"] for r in rows}) == [0.001, 0.2], rows
    assert len(rows) == 6 and all(r["leaks"] == 0 for r in rows)  # three layouts each
    bad = cordon("bench", "permissions", "--shares", "30", check=2)
    assert "--shares '30'" in bad.stderr and "0.1, 1, 5, 20, 100" in bad.stderr
    cordon("bench", "permissions", "--shares", "", check=2)


def memory_cgroup_writable():
    if os.access("/sys/fs/cgroup/memory/memory.limit_in_bytes", os.W_OK):
        return True
    try:
        with open("/sys/fs/cgroup/cgroup.controllers") as f:
            return "memory" in f.read().split() and os.geteuid() == 0
    except OSError:
        return False


def test_bench_permissions_runs_the_engine_inside_a_memory_limit(cordon):
    cordon("bench", "permissions", "--memory-limit", "10", check=2)  # below 64 MB
    if not memory_cgroup_writable():
        pytest.skip("no writable memory cgroup (needs root and the memory controller)")

    def groups():
        return {os.path.join(root, n) for root in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup")
                if os.path.isdir(root) for n in os.listdir(root) if n.startswith("cordon-bench-")}

    before = groups()
    p = cordon("bench", "permissions", "--corpus", "generated", "--size", "3000", "--dim", "32",
               "--queries", "10", "--strategy", "auto", "--memory-limit", "64", "--format",
               "json", check=0)
    d = json.loads(p.stdout)
    m = d["memcg"]
    assert m["limit_mb"] == 64, m
    # the engine's memory was charged to the group (it is not empty) and held under the limit
    assert 1 < m["peak_mb"] <= 64, m
    assert all(r["leaks"] == 0 for r in d["rows"]) and len(d["cold"]) == 5, d
    assert groups() <= before  # the process left its group and removed it

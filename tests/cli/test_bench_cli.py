"""`cordon bench`: the benchmarks run as the program cordon-bench beside the cordon binary."""
import os
import shutil
import subprocess

from conftest import ROOT


def binary():
    return os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))


def test_bench_help_lists_the_benchmarks_of_cordon_bench(cordon):
    out = cordon("bench", "--help", check=0).stdout
    for name in ("authz", "hnsw", "text", "scan", "quant", "permissions", "writers"):
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

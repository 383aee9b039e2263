"""`cordon bench authz` with its Cedar peer: the small catalog, few iterations, JSON out. Cedar
must time each decided check beside cordon's cold row, agree with every decision, and leave the
view and the warm rows to cordon. Skipped, saying why, when node or the package is missing."""
import json
import os
import shutil

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "bench", "peers", "cedar", "node_modules", "@cedar-policy",
                       "cedar-wasm", "package.json")


def test_bench_authz_reports_cedar_beside_the_cold_rows(cordon):
    if not shutil.which("node"):
        pytest.skip("node is not installed (Debian package nodejs; scripts/deps.sh installs it)")
    if not os.path.exists(PACKAGE):
        pytest.skip("@cedar-policy/cedar-wasm is not installed in bench/peers/cedar (run "
                    "scripts/deps.sh)")
    p = cordon("bench", "authz", "--catalog", "small", "--iters", "200", "--no-casbin",
               "--cedar-budget", "0.2", "--format", "json", check=0)
    doc = json.loads(p.stdout)
    cedar = doc["cedar"]
    assert cedar and cedar["version"].startswith("4."), cedar
    assert cedar["compared"] > 5 and cedar["agree"] == cedar["compared"], (cedar, p.stderr)
    assert cedar["catalogs"]["small"]["policies"] == 68, cedar  # one per permission
    assert cedar["floor_p50_us"] > 0, cedar
    rows = doc["rows"]
    ours = {(r["check"], r["mode"]): r for r in rows if r["engine"] == "cordon"}
    theirs = {(r["check"], r["mode"]): r for r in rows if r["engine"] == "cedar"}
    decided = {c for c, _ in ours if c != "view"}
    assert set(theirs) == {(c, "cold") for c in decided}, sorted(theirs)
    for key, r in theirs.items():
        assert 0 < r["p50_us"] <= r["p95_us"], r
        assert ours[key]["speedup_vs_cedar"] > 0, ours[key]
    assert "speedup_vs_cedar" not in ours[("view", "cold")]

"""`cordon bench load --url ... --reuse`: a second run against a server whose index a first run
kept searches that index as it is (no load) with the same ACLs, so nothing is reported as
leaked, and the server's CPU a request comes from its metrics; an index of another size is
refused."""
import json
import os
import subprocess

from wire import ADMIN_ID, ADMIN_SECRET, ROOT, Server


def bench(server, *args):
    binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
    return subprocess.run([binary, "bench", "load", "--url", server.url, "--key",
                           f"{ADMIN_ID}:{ADMIN_SECRET}", "--dim", "16", "--users", "1",
                           "--seconds", "1", "--bulk-docs", "0", "--no-overhead",
                           "--mode", "knn,match", "--format", "json", *args],
                          capture_output=True, text=True, timeout=300)


def test_reuse_searches_the_kept_index_without_loading_it(tmp_path):
    server = Server(str(tmp_path / "data"))
    try:
        first = bench(server, "--size", "800", "--keep")
        assert first.returncode == 0, first.stderr
        assert json.loads(first.stdout)["load_s"] > 0
        st, _, body = server.request("GET", "/_cat/indices?format=json")
        assert st == 200 and [i["index"] for i in body] == ["bench-load"], body

        again = bench(server, "--size", "800", "--reuse")
        assert again.returncode == 0, again.stderr
        doc = json.loads(again.stdout)
        assert doc["load_s"] == 0  # nothing was loaded
        for row in doc["rows"]:
            assert row["chunks_checked"] > 0 and row["leaks"] == 0 and row["errors"] == 0, row
            # the server's CPU a request, read from its metrics (it is not the bench's child)
            assert 0 < row["server_cpu_ms_per_request"] < 1000, row

        other = bench(server, "--size", "900", "--reuse")
        assert other.returncode != 0
        assert "holds 800 documents, not 900" in other.stderr
    finally:
        assert server.stop() == 0, server.stderr

"""Deletes through `_bulk`: starts `cordon serve` (CORDON_BIN, default build/release/cordon) on
a fresh data directory, indexes N documents in one `_bulk`, then deletes all of them in one
`_bulk` of N delete items and prints the time and the deletes per second. Run it against two
builds in turn to compare them (docs/benchmarks.md, "Deletes through _bulk").

    /usr/bin/python3 bench/http/bulk_delete.py [N] [DATA_PARENT]
"""
import json
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "http"))
from wire import Server, people_model  # noqa: E402

NDJSON = {"Content-Type": "application/x-ndjson"}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    parent = sys.argv[2] if len(sys.argv) > 2 else None
    s = Server(tempfile.mkdtemp(dir=parent) + "/data")
    try:
        people_model(s)
        st, _, b = s.request("PUT", "/d", {"mappings": {"properties": {"t": {"type": "text"}}}})
        assert st == 200, b
        lines = []
        for i in range(n):
            lines += [json.dumps({"index": {"_id": f"x{i}"}}),
                      json.dumps({"t": f"doc {i}", "allowed_groups": ["eng"]})]
        st, _, b = s.request("POST", "/d/_bulk", raw=("\n".join(lines) + "\n").encode(),
                             headers=NDJSON)
        assert st == 200 and not b["errors"], b
        body = "".join(json.dumps({"delete": {"_id": f"x{i}"}}) + "\n" for i in range(n))
        t0 = time.monotonic()
        st, _, b = s.request("POST", "/d/_bulk", raw=body.encode(), headers=NDJSON)
        secs = time.monotonic() - t0
        assert st == 200 and not b["errors"], b
        deleted = sum(i["delete"]["result"] == "deleted" for i in b["items"])
        assert deleted == n, deleted
        print(f"{n} deletes in one _bulk: {secs * 1000:.0f} ms, {n / secs:.0f} deletes/s")
    finally:
        s.stop()


if __name__ == "__main__":
    main()

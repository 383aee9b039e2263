"""A full disk on a real file system: the server's data directory on a small tmpfs. Bulk
writes fill it; the items that no longer fit fail with 500 and the store's reason (never a
document's), and nothing acknowledged is lost. With the audit on, searches then fail closed
(an answer the audit cannot record is not given) rather than answer unrecorded. Once the file
system grows, the audit writes what it held, searches answer again, writes go on, and after a
restart every acknowledged document is there. Needs to mount a tmpfs (root): without that
permission the test is skipped, and says so."""
import json
import os
import subprocess
import time

import pytest

from wire import Server, people_model


def mount(path, size):
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                       capture_output=True, text=True)
    return p.returncode == 0, p.stderr.strip()


def bulk(server, start, n):
    lines = []
    for i in range(start, start + n):
        lines.append(json.dumps({"index": {"_index": "kb", "_id": f"d{i}"}}))
        lines.append(json.dumps({"text": " ".join(f"word{(i * 7 + k) % 211}" for k in range(60)),
                                 "allowed_groups": ["eng"]}))
    st, _, b = server.request("POST", "/_bulk", raw=("\n".join(lines) + "\n").encode(),
                              headers={"Content-Type": "application/x-ndjson"})
    assert st == 200, b
    return b["items"]


def count(server, key):
    return server.request("POST", "/kb/_count", {"query": {"match_all": {}}}, key=key)


def test_a_full_disk_loses_nothing_acknowledged(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    ok, why = mount(disk, "6m")
    if not ok:
        pytest.skip(f"cannot mount a tmpfs here ({why}): the full-disk test needs root")
    server = None
    try:
        server = Server(str(disk / "data"))
        people_model(server)
        alice = server.key_for("alice")[2]
        assert server.request("PUT", "/kb", {"mappings": {"properties": {
            "text": {"type": "text"}}}})[0] == 200
        acked, failed, i = set(), [], 0
        while not failed and i < 200000:
            for it in bulk(server, i, 200):
                r = it["index"]
                if r.get("error"):
                    failed.append(r)
                else:
                    acked.add(r["_id"])
            i += 200
        assert failed, "the disk never filled"
        for r in failed:
            assert r["status"] == 500 and r["error"]["type"] == "exception", r
            assert "commit" in r["error"]["reason"] or "space" in r["error"]["reason"], r
        # searches fail closed once the audit cannot write, instead of answering unrecorded
        refused = None
        for _ in range(50):
            st, _, b = count(server, alice)
            if st != 200:
                refused = (st, b)
                break
            time.sleep(0.1)
        assert refused and refused[0] == 500 and "audit" in refused[1]["error"]["reason"], refused
        # room again: the audit catches up, answers and writes come back
        p = subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], capture_output=True,
                           text=True)
        assert p.returncode == 0, p.stderr
        answered = None
        for _ in range(100):
            st, _, b = count(server, alice)
            if st == 200:
                answered = b
                break
            time.sleep(0.1)
        assert answered and answered["count"] == len(acked), (answered, len(acked))
        items = bulk(server, i, 50)
        assert not any(it["index"].get("error") for it in items)
        acked |= {it["index"]["_id"] for it in items}
        assert server.stop() == 0, server.stderr
        server = Server(str(disk / "data"))  # and after a restart
        st, _, b = count(server, alice)
        assert st == 200 and b["count"] == len(acked)
        for d in sorted(acked)[:: max(1, len(acked) // 25)]:
            st, _, g = server.request("GET", f"/kb/_doc/{d}", key=alice)
            assert st == 200 and g["found"], d
    finally:
        if server:
            server.stop()
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)

"""Syncs that fail for real: the server's data directory on faultfs (tests/faultfs/faultfs.c),
a FUSE file system whose fsync and fdatasync return EIO on demand. For each point N, the syncs
after the N-th from now fail (the vector file's, the database's, the audit's, whichever comes):
every document of a batch is then refused with 500 and the I/O error, or acknowledged, never
acknowledged without its syncs. The syncs heal: the same process acknowledges the next batch,
or, once the database's meta page failed to sync, refuses it and says on /_cordon/health (503
"failed", and a red cluster health) that it needs a restart. Then it is killed (SIGKILL), and a
restart finds every acknowledged document and each refused batch whole or absent, never in part;
at the end the backing directory, opened without FUSE, holds the same. Needs root and /dev/fuse:
without them the test is skipped, and says so."""
import json
import os
import subprocess
import time

import pytest

from wire import ROOT, Server, people_model

BATCH = 20
# N = 0 .. 8: a batch syncs three times (the vector file, the database's pages, its meta page),
# so the failing sync is each of the three, in the first, second and third batch.
POINTS = 9


def faultfs_binary():
    cordon = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
    return os.path.join(os.path.dirname(cordon), "tests", "faultfs", "faultfs")


class FaultFS:
    def __init__(self, backing, mnt):
        self.mnt = mnt
        self.proc = subprocess.Popen([faultfs_binary(), backing, mnt, "-f", "-o", "max_threads=8"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for _ in range(100):
            if os.path.ismount(mnt) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.mounted = os.path.ismount(mnt)

    def control(self, line):
        with open(os.path.join(self.mnt, ".faultfs"), "w") as f:
            f.write(line + "\n")

    def counts(self):
        with open(os.path.join(self.mnt, ".faultfs")) as f:
            return f.read().strip()

    def unmount(self):
        if self.mounted:
            subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True)
            if os.path.ismount(self.mnt):
                subprocess.run(["umount", "-l", self.mnt], capture_output=True)
            self.mounted = False
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.stderr.read()


def bulk(server, ids, n):
    lines = []
    for i, doc_id in enumerate(ids):
        lines.append(json.dumps({"index": {"_index": "kb", "_id": doc_id}}))
        lines.append(json.dumps({"text": f"report {doc_id} quarterly numbers",
                                 "v": [1.0, float(i % 7), float(n), 0.5],
                                 "allowed_groups": ["eng"]}))
    st, _, b = server.request("POST", "/_bulk", raw=("\n".join(lines) + "\n").encode(),
                              headers={"Content-Type": "application/x-ndjson"})
    assert st == 200, b
    return b["items"]


def found(server, alice, ids):
    st, _, b = server.request("POST", "/kb/_mget", {"ids": list(ids)}, key=alice)
    assert st == 200, b
    return {d["_id"] for d in b["docs"] if d.get("found")}


def check(server, acked, refused):
    alice = server.key_for("alice", name=f"check-{time.monotonic_ns()}")[2]
    assert found(server, alice, acked) == set(acked), "an acknowledged document was lost"
    for batch in refused:
        got = found(server, alice, batch)
        assert got in (set(), set(batch)), f"a refused batch is there in part: {sorted(got)}"


def test_failing_syncs_lose_nothing_acknowledged(tmp_path):
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse") or \
            not os.path.exists(faultfs_binary()):
        pytest.skip("failing syncs need root, /dev/fuse and tests/faultfs built: skipped")
    backing, mnt = tmp_path / "backing", tmp_path / "mnt"
    backing.mkdir()
    mnt.mkdir()
    fs = FaultFS(str(backing), str(mnt))
    if not fs.mounted:
        why = fs.unmount()
        pytest.skip(f"cannot mount faultfs here ({why.strip()[:200]}): skipped")
    data = str(mnt / "data")
    acked, refused, failures, server = [], [], 0, None
    try:
        server = Server(data)
        people_model(server)
        assert server.request("PUT", "/kb", {"mappings": {"properties": {
            "text": {"type": "text"}, "v": {"type": "dense_vector", "dims": 4}}}})[0] == 200
        for n in range(POINTS):
            fs.control(f"fsync-fail {n}")
            # Batches until one meets a failing sync (a late point may let the first through).
            for attempt in range(4):
                ids = [f"p{n}-{attempt}-{i}" for i in range(BATCH)]
                items = bulk(server, ids, n)
                bad = [it["index"] for it in items if it["index"].get("error")]
                good = [it["index"]["_id"] for it in items if not it["index"].get("error")]
                for r in bad:
                    assert r["status"] == 500, r
                    assert "Input/output error" in r["error"]["reason"], r
                acked += good
                if bad:
                    refused.append([r["_id"] for r in bad])
                    failures += 1
                    break
            # The syncs heal: the same process goes on (a batch now is acknowledged, or
            # refused as a whole), then dies without closing anything.
            fs.control("fsync-ok")
            ids = [f"p{n}-after-{i}" for i in range(BATCH)]
            items = bulk(server, ids, n)
            errors = [it["index"] for it in items if it["index"].get("error")]
            assert not errors or len(errors) == BATCH, errors
            st, _, health = server.request("GET", "/_cordon/health", key="")
            cluster = server.request("GET", "/_cluster/health")[2]["status"]
            if errors:  # the database failed closed: health says so, with the way out
                refused.append(ids)
                assert st == 503 and health["status"] == "failed", health
                assert "reopen" in health["reason"] and cluster == "red", (health, cluster)
            else:
                acked += ids
                assert st == 200 and health["status"] == "ok" and cluster == "green", health
            server.proc.kill()
            server.proc.wait()
            server = None
            server = Server(data)
            check(server, acked, refused)
        assert failures == POINTS, f"only {failures} of {POINTS} points met a failing sync"
        rc = server.stop()
        server = None
        assert rc == 0
    finally:
        if server is not None:
            server.proc.kill()
            server.proc.wait()
        fs.unmount()
    # The backing files, opened without FUSE, hold the same.
    server = Server(str(backing / "data"))
    try:
        check(server, acked, refused)
    finally:
        assert server.stop() == 0, server.stderr
    assert len(acked) > BATCH

"""An index's dense_vector gets cordon's 8-bit and 1-bit codes as Elasticsearch quantizes: by
default (no index_options.type) from 128 dimensions up, always for the quantized types
(int8_hnsw, int4_hnsw, bbq_hnsw and their _flat forms), never for hnsw and flat; searches
answer the same either way. The stored setting is read back with `cordon info --json` once
the server has stopped."""
import json
import os
import random
import subprocess

from wire import ROOT, Server, people_model

INDEXES = {  # name: (dims, index_options or None, codes expected)
    "auto384": (384, None, True),
    "auto64": (64, None, False),
    "hnsw384": (384, {"type": "hnsw", "m": 16}, False),
    "flat384": (384, {"type": "flat"}, False),
    "int8small": (16, {"type": "int8_hnsw"}, True),
    "bbqflat": (384, {"type": "bbq_flat"}, True),
}


def test_index_options_choose_the_codes(tmp_path):
    s = Server(str(tmp_path / "data"))
    try:
        people_model(s)
        rnd = random.Random(5)
        for name, (dims, io, _) in INDEXES.items():
            vec = {"type": "dense_vector", "dims": dims, "similarity": "cosine"}
            if io is not None:
                vec["index_options"] = io
            status, _, body = s.request("PUT", f"/{name}", {"mappings": {"properties": {
                "v": vec, "allowed_groups": {"type": "keyword"}}}})
            assert status == 200, body
            docs = [[rnd.uniform(-1, 1) for _ in range(dims)] for _ in range(50)]
            lines = []
            for i, d in enumerate(docs):
                lines.append(json.dumps({"index": {"_index": name, "_id": f"d{i}"}}))
                lines.append(json.dumps({"v": d, "allowed_groups": ["eng"]}))
            status, _, body = s.request("POST", "/_bulk?refresh=true",
                                        raw=("\n".join(lines) + "\n").encode(),
                                        headers={"Content-Type": "application/x-ndjson"})
            assert status == 200 and not body["errors"], body
            # A document's own vector finds it first, codes or not.
            status, _, body = s.request("POST", f"/{name}/_search", {
                "knn": {"field": "v", "query_vector": docs[7], "k": 3, "num_candidates": 20},
                "_source": False}, headers={"es-security-runas-user": "alice"})
            assert status == 200, body
            assert body["hits"]["hits"][0]["_id"] == "d7", body
    finally:
        assert s.stop() == 0, s.stderr
    binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
    for name, (dims, _, codes) in INDEXES.items():
        p = subprocess.run([binary, "info", "--data", str(tmp_path / "data"), "--collection",
                            name, "--json"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        info = json.loads(p.stdout)
        assert info["dim"] == dims
        assert info["int8_scan"] is codes, (name, info)

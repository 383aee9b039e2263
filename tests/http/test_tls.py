"""The HTTPS listener (tls_cert_file and tls_key_file): a client that trusts the certificate
talks to the server, the official Python client included; plain HTTP to the same port gets no
HTTP answer; a key that is not the certificate's, a missing file and one file without the other
stop the server at start with a message that says what to fix."""
import base64
import http.client
import json
import os
import socket
import ssl
import subprocess

import pytest

from wire import ADMIN_ID, ADMIN_SECRET, ROOT, Server

pytestmark = pytest.mark.skipif(
    subprocess.run(["which", "openssl"], capture_output=True).returncode != 0,
    reason="openssl is not installed (scripts/deps.sh installs it)")

AUTH = "ApiKey " + base64.b64encode(f"{ADMIN_ID}:{ADMIN_SECRET}".encode()).decode()


def make_cert(d, name="server"):
    cert, key = os.path.join(d, f"{name}.pem"), os.path.join(d, f"{name}-key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def config(d, text):
    path = os.path.join(d, "serve.conf")
    with open(path, "w") as f:
        f.write(text)
    return path


def https(port, cafile, method, path, body=None):
    ctx = ssl.create_default_context(cafile=cafile)
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Authorization": AUTH, "Content-Type": "application/json"})
    r = c.getresponse()
    out = r.status, dict(r.getheaders()), json.loads(r.read() or b"null")
    c.close()
    return out


def test_https_serves_and_plain_http_does_not(tmp_path):
    cert, key = make_cert(str(tmp_path))
    conf = config(str(tmp_path), f"tls_cert_file = {cert}\ntls_key_file = {key}\n")
    s = Server(str(tmp_path / "data"), extra_args=("--config", conf))
    try:
        st, hdrs, b = https(s.port, cert, "GET", "/")
        assert st == 200 and b["tagline"] == "You Know, for Search", b
        assert hdrs.get("X-Elastic-Product") == "Elasticsearch"
        st, _, b = https(s.port, cert, "PUT", "/secure", {"mappings": {"properties": {
            "text": {"type": "text"}}}})
        assert st == 200, b
        # The official client, over HTTPS with the certificate as its CA.
        from elasticsearch import Elasticsearch
        es = Elasticsearch(f"https://127.0.0.1:{s.port}", ca_certs=cert,
                           api_key=(ADMIN_ID, ADMIN_SECRET))
        assert es.info()["version"]["number"]
        assert es.indices.exists(index="secure")
        # A client that does not trust the certificate is refused by the handshake.
        with pytest.raises(ssl.SSLError):
            https(s.port, None, "GET", "/")
        # Plain HTTP to the HTTPS port gets no HTTP answer.
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                reply = sock.recv(4096)
            except (ConnectionResetError, socket.timeout):
                reply = b""
        assert not reply.startswith(b"HTTP/"), reply[:80]
        st, _, _ = https(s.port, cert, "GET", "/_cordon/health")  # still serving
        assert st == 200
    finally:
        assert s.stop() == 0, s.stderr


@pytest.mark.parametrize("case", ["wrong-key", "missing-file", "cert-only"])
def test_bad_tls_settings_stop_the_server_at_start(tmp_path, case):
    cert, key = make_cert(str(tmp_path))
    _, other_key = make_cert(str(tmp_path), "other")
    text = {"wrong-key": f"tls_cert_file = {cert}\ntls_key_file = {other_key}\n",
            "missing-file": f"tls_cert_file = {cert}\ntls_key_file = {tmp_path}/nope.pem\n",
            "cert-only": f"tls_cert_file = {cert}\n"}[case]
    conf = config(str(tmp_path), text)
    binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
    env = dict(os.environ, CORDON_BOOTSTRAP_KEY=f"{ADMIN_ID}:{ADMIN_SECRET}")
    p = subprocess.run([binary, "serve", "--data", str(tmp_path / "data"), "--listen",
                        "127.0.0.1:0", "--config", conf], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode != 0
    says = {"wrong-key": "is the key that of the certificate",
            "missing-file": "cannot read the TLS key",
            "cert-only": "go together"}[case]
    assert says in p.stderr, p.stderr

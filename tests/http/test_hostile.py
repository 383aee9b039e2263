"""Hostile clients against cordon serve: garbage on the socket, bodies that trickle, idle
connections by the hundred, pipelined and truncated requests, random bytes. The server must
keep answering everyone else, leak nothing and stop cleanly."""
import os
import random
import socket
import time

from wire import Server, people_model


def raw(server, data, timeout=5, shut=True):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    out = b""
    try:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
    except OSError:  # the server may close a hopeless request before reading all of it
        pass
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    return out


def healthy(server):
    st, _, b = server.request("GET", "/_cordon/health", key="")
    assert st == 200 and b["status"] == "ok"


def test_garbage_and_malformed_requests(server):
    for data in [b"\x00\x01\x02garbage\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                 b"BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n",
                 b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                 b"POST /_bulk HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc",
                 b"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: ApiKey " + b"A" * 20000 + b"\r\n\r\n",
                 b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 5000 + b"\r\n"]:
        out = raw(server, data)
        assert out == b"" or out.startswith(b"HTTP/1."), out[:80]
        healthy(server)


def test_pipelined_requests_answered_in_order(server):
    req = (b"GET /_cordon/health HTTP/1.1\r\nHost: x\r\n\r\n"
           b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
           b"GET /_cordon/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    out = raw(server, req, shut=False)
    import re
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", out)
    assert statuses == [b"200", b"401", b"200"], out[:300]


def test_many_idle_connections_do_not_block_others(server):
    idle = []
    try:
        for _ in range(200):
            idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        for s in idle[::10]:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        healthy(server)
        st, _, _ = server.request("GET", "/")
        assert st == 200
    finally:
        for s in idle:
            s.close()
    healthy(server)


def test_trickling_body_is_cut_off(tmp_path):
    cfg = tmp_path / "s.conf"
    cfg.write_text("request_timeout_s = 1\n")
    s = Server(str(tmp_path / "data"), extra_args=("--config", str(cfg)))
    try:
        c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        c.sendall(b"POST /_bulk HTTP/1.1\r\nHost: x\r\nAuthorization: " + s.admin_header.encode() +
                  b"\r\nContent-Length: 100000\r\n\r\n")
        start, closed = time.time(), False
        while time.time() - start < 8:
            try:
                c.sendall(b"x" * 10)
                time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
        c.close()
        assert closed, "the server kept a trickling request open past request_timeout_s"
        healthy(s)
    finally:
        assert s.stop() == 0, s.stderr


def test_random_requests(server):
    people_model(server)
    st, _, _ = server.request("PUT", "/r", {"mappings": {"properties": {"t": {"type": "text"}}}})
    rng = random.Random(5)
    paths = ["/", "/r", "/r/_search", "/r/_doc/1", "/_bulk", "/r/_count", "/v1/model",
             "/v1/collections/r/retrieve", "/api/auth/is-authorized", "/_security/api_key"]
    for _ in range(300):
        method = rng.choice(["GET", "POST", "PUT", "DELETE", "HEAD"])
        path = rng.choice(paths) + rng.choice(["", "?pretty", "?size=-1", "?_source=%ff", "/x"])
        body = rng.choice([b"", b"{}", b"[]", b"null", b'{"query":{"match":{"t":1}}}',
                           os.urandom(rng.randint(1, 200)), b'{"a":' * 100])
        st, _, _ = server.request(method, path, raw=body,
                                  headers={"es-security-runas-user": rng.choice(["alice", "", "x" * 300])})
        assert 200 <= st < 600 and st != 500, (method, path, body[:40], st)
    healthy(server)

"""What the tests through the wire share: a real `cordon serve` on a free loopback port with
a temporary data directory (Server), its admin key, and the people of the permission model
most tests use (people_model). The fixtures are in conftest.py."""
import base64
import json
import os
import re
import subprocess
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADMIN_ID = "admin"
ADMIN_SECRET = "test-admin-secret-0123456789abcdef"


class Server:
    """One running server: its URL, admin key and process."""

    def __init__(self, data, extra_args=(), env=None):
        binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))
        self.data = data
        e = dict(os.environ)
        e["CORDON_BOOTSTRAP_KEY"] = f"{ADMIN_ID}:{ADMIN_SECRET}"
        e.setdefault("CORDON_ACCESS_LOG", "off")
        if env:
            e.update(env)
        self.proc = subprocess.Popen(
            [binary, "serve", "--data", data, "--listen", "127.0.0.1:0", *extra_args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
        line = ""
        for _ in range(50):
            line = self.proc.stdout.readline()
            m = re.search(r"\(port (\d+)\)", line)
            if m:
                self.port = int(m.group(1))
                break
        else:
            self.proc.kill()
            raise RuntimeError("cordon serve did not start: " + line + self.proc.stderr.read())
        self.url = f"http://127.0.0.1:{self.port}"
        self.admin_header = "ApiKey " + base64.b64encode(
            f"{ADMIN_ID}:{ADMIN_SECRET}".encode()).decode()

    def request(self, method, path, body=None, headers=None, key=None, raw=None):
        """(status, headers, parsed JSON or text) for one request; key is an Authorization
        value (None = the admin key, "" = none)."""
        h = {"Content-Type": "application/json"}
        auth = self.admin_header if key is None else key
        if auth:
            h["Authorization"] = auth
        h.update(headers or {})
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                status, hdrs, text = r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            status, hdrs, text = e.code, dict(e.headers), e.read().decode()
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        return status, hdrs, parsed

    def model(self, *ops):
        status, _, body = self.request("POST", "/_cordon/model", {"ops": list(ops)})
        assert status == 200, body
        return body["revision"]

    def key_for(self, subject, name=None, **extra):
        """An API key bound to subject: (id, secret, Authorization header value)."""
        spec = {"name": name or f"key-{subject}", "cordon": {"subject": subject, **extra}}
        status, _, body = self.request("POST", "/_security/api_key", spec)
        assert status == 200, body
        return body["id"], body["api_key"], "ApiKey " + body["encoded"]

    def stop(self):
        """SIGTERM, then the exit status (0 for an orderly stop; sanitizer builds fail here on
        a leak or an error report, which stderr then holds)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr = self.proc.stderr.read()
        return self.proc.returncode


def people_model(server):
    """alice and carol in eng, bob in hr, dave in nothing; eng and hr may do everything on
    every collection, dave may search but holds no group."""
    return server.model(
        {"op": "put_subject", "id": "alice"}, {"op": "put_subject", "id": "bob"},
        {"op": "put_subject", "id": "carol"}, {"op": "put_subject", "id": "dave"},
        {"op": "put_group", "id": "eng"}, {"op": "put_group", "id": "hr"},
        {"op": "add_member", "group": "eng", "member": "alice"},
        {"op": "add_member", "group": "eng", "member": "carol"},
        {"op": "add_member", "group": "hr", "member": "bob"},
        {"op": "grant", "to": "eng", "to_kind": "group",
         "permission": {"resource": "collection:*", "action": "*"}},
        {"op": "grant", "to": "hr", "to_kind": "group",
         "permission": {"resource": "collection:*", "action": "*"}},
        {"op": "grant", "to": "dave",
         "permission": {"resource": "collection:*", "action": "search"}},
        {"op": "grant", "to": "dave",
         "permission": {"resource": "collection:*", "action": "read"}})

"""The official Node.js client (@elastic/elasticsearch 9.x, tests/http/node) against cordon
serve, and GET /v1/openapi.json through an OpenAPI validator (openapi.test.mjs): runs `node
--test` on tests/http/node, whose files start their own servers from $CORDON_BIN, and passes
when node's TAP summary counts passes and no failure. Skipped, saying why, only when node or an
installed package is missing (scripts/deps.sh installs them)."""
import os
import re
import shutil
import subprocess

import pytest

from wire import ROOT

NODE_DIR = os.path.join(ROOT, "tests", "http", "node")
PACKAGES = [os.path.join(NODE_DIR, "node_modules", *name.split("/"), "package.json")
            for name in ("@elastic/elasticsearch", "@seriousme/openapi-schema-validator")]


def test_node_client_suite_passes():
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed (Debian package nodejs; scripts/deps.sh installs it)")
    for package in PACKAGES:
        if not os.path.exists(package):
            pytest.skip("%s is not installed in tests/http/node (run scripts/deps.sh, or npm "
                        "ci there)" % os.path.relpath(os.path.dirname(package), NODE_DIR))
    env = dict(os.environ)
    env["CORDON_BIN"] = os.environ.get("CORDON_BIN",
                                       os.path.join(ROOT, "build", "release", "cordon"))
    p = subprocess.run([node, "--test", "--test-reporter=tap", NODE_DIR], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr

    def count(name):
        m = re.search(r"^# %s (\d+)$" % name, p.stdout, re.M)
        assert m, "no '# %s N' line in node's TAP summary:\n%s" % (name, out[-4000:])
        return int(m.group(1))

    assert p.returncode == 0, out[-8000:]
    assert count("fail") == 0 and count("cancelled") == 0, out[-8000:]
    assert count("pass") == count("tests") > 0, out[-8000:]  # none skipped or left out

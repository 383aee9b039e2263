"""Fixtures for the command-line tests: the cordon binary and a fresh data directory."""
import os
import sys
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def cordon():
    binary = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))

    def run(*args, stdin=None, check=None):
        p = subprocess.run([binary, *args], input=stdin, capture_output=True, text=True,
                           cwd=ROOT, timeout=120)
        if "Sanitizer" in p.stderr or "runtime error:" in p.stderr:
            # shown whole under "Captured stderr" when the test fails (assertion text is cut)
            sys.stderr.write(p.stderr)
        if check is not None:
            assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
        return p

    return run


@pytest.fixture
def data(tmp_path):
    return str(tmp_path / "data")

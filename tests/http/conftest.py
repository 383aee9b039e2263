"""Fixtures for the tests through the wire (wire.py has the server they start)."""
import pytest

from wire import Server


@pytest.fixture
def server(tmp_path):
    s = Server(str(tmp_path / "data"))
    yield s
    rc = s.stop()
    assert rc == 0, s.stderr


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    s = Server(str(tmp_path_factory.mktemp("shared") / "data"))
    yield s
    rc = s.stop()
    assert rc == 0, s.stderr

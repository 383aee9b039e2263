"""`cordon keys create | list | revoke`: the API keys of `cordon serve`, kept in the data
directory's keys.json without opening the database."""
import base64
import json
import os
import stat

import pytest


def create(cordon, data, *args, check=0):
    p = cordon("keys", "create", "--data", data, *args, check=check)
    if check != 0:
        return p
    fields = dict(line.split(None, 1) for line in p.stdout.splitlines())
    return fields, p


def test_create_prints_id_secret_and_header_once(cordon, data):
    k, p = create(cordon, data, "--name", "ci", "--subject", "alice")
    assert k["id"].startswith("k") and len(k["id"]) == 17
    assert len(k["secret"]) == 43
    assert "shown only now" in p.stderr and k["secret"] not in p.stderr
    header = k["header"]
    assert header.startswith("Authorization: ApiKey ")
    pair = base64.b64decode(header.split("ApiKey ", 1)[1]).decode()
    assert pair == k["id"] + ":" + k["secret"]
    # Only the key files: the database was not opened, let alone created.
    assert sorted(os.listdir(data)) == ["keys.json", "keys.lock"]
    path = os.path.join(data, "keys.json")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = open(path).read()
    assert k["secret"] not in text and header.split("ApiKey ", 1)[1] not in text
    assert json.loads(text)["keys"][0]["id"] == k["id"]


def test_list_shows_keys_but_never_secrets(cordon, data):
    a, _ = create(cordon, data, "--name", "ci", "--subject", "alice")
    b, _ = create(cordon, data, "--name", "eng-bot", "--principal", "group:eng",
                  "--principal", "group:hr", "--run-as")
    c, _ = create(cordon, data, "--name", "root", "--admin")
    out = cordon("keys", "list", "--data", data, check=0).stdout
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["ID", "NAME", "ACTS"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(rows) == {a["id"], b["id"], c["id"]}
    assert rows[a["id"]][1:5] == ["ci", "alice", "no", "no"]
    assert rows[b["id"]][1:5] == ["eng-bot", "group:eng,group:hr", "no", "yes"]
    assert rows[c["id"]][1:5] == ["root", "-", "yes", "no"]
    for k in (a, b, c):
        assert k["secret"] not in out


def test_revoke_removes_the_key_from_the_list(cordon, data):
    a, _ = create(cordon, data, "--name", "ci", "--subject", "alice")
    b, _ = create(cordon, data, "--name", "other", "--subject", "bob")
    p = cordon("keys", "revoke", "--data", data, a["id"], check=0)
    assert a["id"] in p.stdout
    out = cordon("keys", "list", "--data", data, check=0).stdout
    assert a["id"] not in out and b["id"] in out
    p = cordon("keys", "revoke", "--data", data, a["id"], check=1)
    assert "revoked already" in p.stderr
    p = cordon("keys", "revoke", "--data", data, "k0000000000000000", check=1)
    assert 'no key "k0000000000000000"' in p.stderr
    cordon("keys", "revoke", "--data", data, b["id"], check=0)
    assert "no API keys" in cordon("keys", "list", "--data", data, check=0).stdout


@pytest.mark.parametrize("args, message", [
    (["--subject", "alice"], "--name"),
    (["--name", "x"], "only an admin key may have neither"),
    (["--name", "x", "--subject", "a", "--principal", "group:g"], "not both"),
    (["--name", "n" * 65, "--subject", "a"], "name"),
])
def test_create_refuses_a_bad_spec_and_writes_nothing(cordon, data, args, message):
    os.mkdir(data)
    p = create(cordon, data, *args, check=2)
    assert message in p.stderr
    assert not os.path.exists(os.path.join(data, "keys.json"))


def test_errors_name_the_problem(cordon, data, tmp_path):
    p = cordon("keys", "list", "--data", str(tmp_path / "missing"), check=1)
    assert "does not exist" in p.stderr
    assert not os.path.exists(tmp_path / "missing")
    p = cordon("keys", "frob", "--data", data, check=2)
    assert "unknown verb" in p.stderr
    assert cordon("keys", check=2).stderr.startswith("usage:")
    assert "--run-as" in cordon("keys", "create", "--help", check=0).stdout
    os.mkdir(data)
    with open(os.path.join(data, "keys.json"), "w") as f:
        f.write("{not json")
    p = cordon("keys", "list", "--data", data, check=1)
    assert "keys.json" in p.stderr and "not valid JSON" in p.stderr
    assert "keys" in cordon("--help", check=0).stdout

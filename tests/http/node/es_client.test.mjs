// The official Elasticsearch client for Node.js (@elastic/elasticsearch 9.x), unmodified, against
// cordon serve with permissions enforced. Starts its own server ($CORDON_BIN serve on a free
// loopback port), loads documents with random ACLs through helpers.bulk, then searches as
// alice, carol, bob and dave through their own keys and through run-as; every hit is checked
// against the ACL this file wrote. Run with `node --test` (tests/http/test_es_node.py does).
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { Client, errors } from '@elastic/elasticsearch'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const BIN = process.env.CORDON_BIN || path.join(HERE, '..', '..', '..', 'build', 'release', 'cordon')
const ADMIN_ID = 'admin'
const ADMIN_SECRET = 'node-test-admin-secret-0123456789'
const INDEX = 'node-corpus'
const N_DOCS = 1500
const DIM = 16
const SUBJECTS = { alice: ['eng'], carol: ['eng'], bob: ['hr'], dave: [] }
const MODES = ['key', 'runas']
const WORDS = ('alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike ' +
  'november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber ' +
  'cobalt indigo scarlet').split(' ')
const TITLE_WORDS = WORDS.slice(0, 8)
const MAPPINGS = {
  properties: {
    emb: { type: 'dense_vector', dims: DIM, similarity: 'cosine' },
    title: { type: 'text' },
    body: { type: 'text' },
    tag: { type: 'keyword' },
    year: { type: 'long' },
    published: { type: 'date' }
  }
}
// [allowed, denied, weight]; null: the document carries no such field (no ACL: nobody reads it).
const ACLS = [
  [['eng'], null, 22], [['hr'], null, 18], [['eng', 'hr'], null, 10],
  [['group:eng'], ['user:carol'], 8], [['eng', 'hr'], ['hr'], 7], [['user:dave'], null, 8],
  [['user:alice', 'user:bob'], null, 5], [['hr', 'user:dave'], ['user:bob'], 5],
  [null, null, 9], [[], null, 4], [['group:nobody'], null, 4]
]
const MODEL_OPS = [
  { op: 'put_subject', id: 'alice' }, { op: 'put_subject', id: 'bob' },
  { op: 'put_subject', id: 'carol' }, { op: 'put_subject', id: 'dave' },
  { op: 'put_group', id: 'eng' }, { op: 'put_group', id: 'hr' },
  { op: 'add_member', group: 'eng', member: 'alice' },
  { op: 'add_member', group: 'eng', member: 'carol' },
  { op: 'add_member', group: 'hr', member: 'bob' },
  { op: 'grant', to: 'eng', to_kind: 'group', permission: { resource: 'collection:*', action: '*' } },
  { op: 'grant', to: 'hr', to_kind: 'group', permission: { resource: 'collection:*', action: '*' } },
  { op: 'grant', to: 'dave', permission: { resource: 'collection:*', action: 'search' } },
  { op: 'grant', to: 'dave', permission: { resource: 'collection:*', action: 'read' } }
]

// ---- The documents and the ACL rule the test holds the server to. ----

function prng (seed) { // mulberry32
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function gauss (rand) {
  return Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand())
}

function pick (rand, list) { return list[Math.floor(rand() * list.length)] }

function sample (rand, list, n) {
  const copy = list.slice()
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(rand() * (copy.length - i));
    [copy[i], copy[j]] = [copy[j], copy[i]]
  }
  return copy.slice(0, n)
}

function makeDocs (seed, n) {
  const rand = prng(seed)
  const total = ACLS.reduce((s, a) => s + a[2], 0)
  const docs = new Map()
  for (let i = 0; i < n; i++) {
    let r = rand() * total
    let acl = ACLS[0]
    for (const a of ACLS) { if ((r -= a[2]) < 0) { acl = a; break } }
    const year = 2000 + Math.floor(rand() * 25)
    const doc = {
      title: Array.from({ length: 1 + Math.floor(rand() * 6) }, () => pick(rand, TITLE_WORDS)).join(' '),
      body: sample(rand, WORDS, 8).join(' '), // 8 distinct words: one-word matches score alike
      tag: 't' + Math.floor(rand() * 10),
      year,
      emb: Array.from({ length: DIM }, () => Math.round(gauss(rand) * 1e6) / 1e6)
    }
    if (rand() < 0.85) {
      const mm = String(1 + Math.floor(rand() * 12)).padStart(2, '0')
      const dd = String(1 + Math.floor(rand() * 28)).padStart(2, '0')
      doc.published = `${year}-${mm}-${dd}`
    }
    if (acl[0] !== null) doc.allowed_groups = acl[0]
    if (acl[1] !== null) doc.denied_groups = acl[1]
    docs.set('d' + String(i).padStart(4, '0'), doc)
  }
  return docs
}

const principal = (p) => p.includes(':') ? p : 'group:' + p
const held = (who) => new Set(['user:' + who, ...SUBJECTS[who].map((g) => 'group:' + g)])

function readable (doc, who) {
  const h = held(who)
  const allowed = (doc.allowed_groups || []).map(principal)
  const denied = (doc.denied_groups || []).map(principal)
  return allowed.some((p) => h.has(p)) && !denied.some((p) => h.has(p))
}

const tokens = (text) => new Set(text.toLowerCase().match(/[a-z0-9]+/g) || [])

function cosine (a, b) {
  let dot = 0; let na = 0; let nb = 0
  for (let i = 0; i < a.length; i++) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i] }
  return dot / Math.sqrt(na * nb)
}

const sorted = (ids) => [...ids].sort()

// ---- The server. ----

const state = { docs: makeDocs(20260502, N_DOCS), clients: {}, sent: [] }

async function startServer () {
  state.dir = mkdtempSync(path.join(tmpdir(), 'cordon-node-'))
  const env = { ...process.env, CORDON_BOOTSTRAP_KEY: `${ADMIN_ID}:${ADMIN_SECRET}`, CORDON_ACCESS_LOG: 'off' }
  state.proc = spawn(BIN, ['serve', '--data', path.join(state.dir, 'data'), '--listen', '127.0.0.1:0'],
    { env, stdio: ['ignore', 'pipe', 'pipe'] })
  state.stderr = ''
  state.proc.stderr.on('data', (d) => { state.stderr += d })
  const lines = createInterface({ input: state.proc.stdout })
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('cordon serve did not start: ' + state.stderr)), 30000)
    state.proc.on('exit', (code) => reject(new Error(`cordon serve exited ${code}: ${state.stderr}`)))
    lines.on('line', (line) => {
      const m = /^cordon: serving .*\(port (\d+)\)/.exec(line)
      if (m) { clearTimeout(timer); resolve(Number(m[1])) }
    })
  })
  state.url = `http://127.0.0.1:${port}`
}

// SIGTERM, then the exit status: 0 for an orderly stop (sanitizer builds fail on a leak).
async function stopServer () {
  let code = state.proc ? state.proc.exitCode : 0
  if (state.proc && code === null) {
    const exited = new Promise((resolve) => state.proc.once('exit', (c, sig) => resolve(c ?? sig)))
    state.proc.kill('SIGTERM')
    code = await exited
  }
  if (state.dir) rmSync(state.dir, { recursive: true, force: true })
  return code
}

// A call as who: its own key, or the admin key with the run-as header (a child client).
function as (who, mode) { return state.clients[`${who}/${mode}`] }

function checkHits (who, resp, pred = () => true) {
  const ids = resp.hits.hits.map((h) => h._id)
  assert.equal(new Set(ids).size, ids.length, 'an id came twice')
  for (const h of resp.hits.hits) {
    const doc = state.docs.get(h._id)
    assert.ok(doc, `unknown id ${h._id}`)
    assert.ok(readable(doc, who), `${who} got ${h._id}, allowed ${doc.allowed_groups} denied ${doc.denied_groups}`)
    assert.ok(pred(doc), `${who} got ${h._id}, which does not match`)
    assert.equal(h._index, INDEX)
  }
  return ids
}

function readableIds (who, pred = () => true) {
  return new Set([...state.docs].filter(([, d]) => readable(d, who) && pred(d)).map(([i]) => i))
}

async function plans () {
  const text = await state.admin.transport.request({ method: 'GET', path: '/metrics' })
  const out = {}
  for (const m of String(text).matchAll(/^cordon_search_plans_total\{plan="([^"]*)"\} (\S+)$/gm)) out[m[1]] = Number(m[2])
  return out
}

before(async () => {
  await startServer()
  state.admin = new Client({ node: state.url, auth: { apiKey: { id: ADMIN_ID, api_key: ADMIN_SECRET } } })
  // What the client puts on the wire, to show which headers the server accepted.
  state.admin.diagnostic.on('request', (err, result) => {
    if (!err && result) state.sent.push({ path: result.meta.request.params.path, headers: result.meta.request.params.headers })
  })
  const model = await state.admin.transport.request({ method: 'POST', path: '/_cordon/model', body: { ops: MODEL_OPS } })
  assert.ok(model.revision > 0)
  for (const who of Object.keys(SUBJECTS)) {
    const key = await state.admin.transport.request({
      method: 'POST', path: '/_security/api_key', body: { name: `node-${who}`, cordon: { subject: who } }
    })
    assert.ok(key.id && key.api_key && key.encoded)
    state.clients[`${who}/key`] = new Client({ node: state.url, auth: { apiKey: key.encoded } })
    state.clients[`${who}/runas`] = state.admin.child({ headers: { 'es-security-runas-user': who } })
  }
})

after(async () => {
  for (const c of Object.values(state.clients)) await c.close().catch(() => {})
  if (state.admin) await state.admin.close()
  assert.equal(await stopServer(), 0, state.stderr)
})

// ---- Setting up, as the admin. ----

test('info answers as Elasticsearch, with the product header the client checks', async () => {
  const info = await state.admin.info()
  assert.match(info.version.number, /^8\./)
  assert.equal(info.tagline, 'You Know, for Search')
  const alice = await as('alice', 'key').info()
  assert.equal(alice.cluster_name, info.cluster_name)
})

test('indices.create with mappings, then helpers.bulk loads every document', async () => {
  const created = await state.admin.indices.create({ index: INDEX, mappings: MAPPINGS })
  assert.equal(created.acknowledged, true)
  assert.equal(created.index, INDEX)
  const got = await state.admin.indices.getMapping({ index: INDEX })
  assert.equal(got[INDEX].mappings.properties.emb.dims, DIM)
  const dropped = []
  const stats = await state.admin.helpers.bulk({
    datasource: [...state.docs.keys()],
    onDocument: (id) => [{ index: { _index: INDEX, _id: id } }, state.docs.get(id)],
    onDrop: (d) => dropped.push(d),
    // Several requests, one at a time: the index holds the documents in id order, which is
    // the order ties take inside a retriever's ranking (Elasticsearch's _doc order).
    flushBytes: 150000,
    concurrency: 1,
    refreshOnCompletion: INDEX
  })
  assert.deepEqual(dropped, [])
  assert.equal(stats.total, N_DOCS)
  assert.equal(stats.successful, N_DOCS)
  assert.equal(stats.failed, 0)
  // The 9.x client's compatible-with media types, JSON and NDJSON, went out and were accepted.
  const bulk = state.sent.find((s) => s.path === '/_bulk')
  assert.match(bulk.headers['content-type'], /application\/vnd\.elasticsearch\+x-ndjson; ?compatible-with=9/)
  const create = state.sent.find((s) => s.path === `/${INDEX}`)
  assert.match(create.headers['content-type'], /application\/vnd\.elasticsearch\+json; ?compatible-with=9/)
  assert.match(create.headers.accept, /application\/vnd\.elasticsearch\+json; ?compatible-with=9/)
})

test('helpers.bulk with requests in flight together, and a failing item answered alone', async () => {
  await state.admin.indices.create({ index: 'node-scratch', mappings: MAPPINGS })
  const docs = makeDocs(7, 600)
  const bad = new Set(['d0005', 'd0300'])
  const dropped = []
  const stats = await state.admin.helpers.bulk({
    datasource: [...docs.keys()],
    onDocument: (id) => [{ create: { _index: 'node-scratch', _id: id } },
      bad.has(id) ? { ...docs.get(id), emb: [1, 2] } : docs.get(id)],
    onDrop: (d) => dropped.push(d),
    flushBytes: 40000,
    concurrency: 4,
    retries: 0
  })
  assert.equal(stats.total, 600)
  assert.equal(stats.successful, 598)
  assert.equal(stats.failed, 2)
  assert.deepEqual(dropped.map((d) => d.document.emb.length), [2, 2])
  for (const d of dropped) {
    assert.equal(d.status, 400)
    assert.equal(d.error.type, 'mapper_parsing_exception')
  }
  for (const who of Object.keys(SUBJECTS)) {
    const want = [...docs].filter(([i, d]) => !bad.has(i) && readable(d, who)).length
    assert.equal((await as(who, 'key').count({ index: 'node-scratch' })).count, want, who)
  }
  // create of an id that exists is a 409 for that item alone.
  const again = await state.admin.bulk({
    operations: [{ create: { _index: 'node-scratch', _id: 'd0001' } }, docs.get('d0001'),
      { index: { _index: 'node-scratch', _id: 'd0005' } }, docs.get('d0005')]
  })
  assert.equal(again.errors, true)
  assert.equal(again.items[0].create.status, 409)
  assert.equal(again.items[0].create.error.type, 'version_conflict_engine_exception')
  assert.equal(again.items[1].index.status, 201)
  assert.equal(again.items[1].index.result, 'created')
})

// ---- Reads, as every subject through its own key and through run-as. ----

for (const who of Object.keys(SUBJECTS)) {
  for (const mode of MODES) {
    describe(`${who} through ${mode === 'key' ? 'its own key' : 'run-as'}`, () => {
      test('match with a bool filter returns exactly the readable matches', async () => {
        for (const word of ['alpha', 'kilo']) {
          const pred = (d) => tokens(d.body).has(word) && ['t1', 't2', 't3', 't4'].includes(d.tag) && d.year >= 2006
          const r = await as(who, mode).search({
            index: INDEX,
            size: 2000,
            query: {
              bool: {
                must: [{ match: { body: word } }],
                filter: [{ terms: { tag: ['t1', 't2', 't3', 't4'] } }, { range: { year: { gte: 2006 } } }]
              }
            }
          })
          const ids = checkHits(who, r, pred)
          assert.deepEqual(sorted(ids), sorted(readableIds(who, pred)))
          assert.deepEqual(r.hits.total, { value: ids.length, relation: 'eq' })
          assert.deepEqual(ids, sorted(ids)) // one score for all: ties in id order
        }
        const pred = (d) => 'published' in d && d.published >= '2012-01-01' && d.published < '2019-01-01'
        const r = await as(who, mode).search({
          index: INDEX,
          size: 2000,
          query: { bool: { filter: [{ range: { published: { gte: '2012-01-01', lt: '2019-01-01' } } }, { exists: { field: 'published' } }] } }
        })
        assert.deepEqual(sorted(checkHits(who, r, pred)), sorted(readableIds(who, pred)))
      })

      test('knn with a filter is the exact top k of the readable matches', async () => {
        const rand = prng(who.length * 7 + (mode === 'key' ? 1 : 2))
        const qv = Array.from({ length: DIM }, () => gauss(rand))
        const pred = (d) => d.tag !== 't0' && d.year < 2020
        const cand = [...readableIds(who, pred)].map((i) => [cosine(qv, state.docs.get(i).emb), i]).sort((a, b) => b[0] - a[0])
        const before = await plans()
        const r = await as(who, mode).search({
          index: INDEX,
          size: 15,
          knn: {
            field: 'emb',
            query_vector: qv,
            k: 15,
            num_candidates: 100,
            filter: { bool: { must_not: [{ term: { tag: 't0' } }], filter: [{ range: { year: { lt: 2020 } } }] } }
          },
          _source: ['tag']
        })
        const after = await plans()
        const ids = checkHits(who, r, pred)
        assert.equal(ids.length, Math.min(15, cand.length))
        for (const h of r.hits.hits) {
          assert.deepEqual(Object.keys(h._source), ['tag'])
          const want = (1 + cosine(qv, state.docs.get(h._id).emb)) / 2
          assert.ok(Math.abs(h._score - want) < 1e-5, `${h._id}: ${h._score} vs ${want}`)
        }
        assert.equal((after.exact || 0) - (before.exact || 0), 1, 'the planner scans this index exactly')
        const kth = cand[ids.length - 1][0]
        for (const [s, i] of cand) if (s > kth + 1e-6) assert.ok(ids.includes(i), `${i} (${s}) is missing`)
        for (const i of ids) assert.ok(cosine(qv, state.docs.get(i).emb) >= kth - 1e-6)
      })

      test('retriever rrf fuses the readable text and knn rankings', async () => {
        const rand = prng(who.length * 13 + (mode === 'key' ? 3 : 4))
        const qv = Array.from({ length: DIM }, () => gauss(rand))
        const word = 'hotel'
        const window = 40
        const text = sorted(readableIds(who, (d) => tokens(d.body).has(word))).slice(0, window)
        const knn = [...readableIds(who)].map((i) => [cosine(qv, state.docs.get(i).emb), i])
          .sort((a, b) => b[0] - a[0]).slice(0, window).map(([, i]) => i)
        const fused = new Map()
        for (const side of [text, knn]) side.forEach((i, r) => fused.set(i, (fused.get(i) || 0) + 1 / (60 + r + 1)))
        const r = await as(who, mode).search({
          index: INDEX,
          size: 20,
          retriever: {
            rrf: {
              retrievers: [
                { standard: { query: { match: { body: word } } } },
                { knn: { field: 'emb', query_vector: qv, k: window, num_candidates: 100 } }
              ],
              rank_window_size: window,
              rank_constant: 60
            }
          }
        })
        const ids = checkHits(who, r)
        const best = [...fused.values()].sort((a, b) => b - a).slice(0, 20)
        assert.equal(ids.length, best.length)
        ids.forEach((i, n) => {
          assert.ok(fused.has(i), `${i} is in neither ranking`)
          assert.ok(Math.abs(fused.get(i) - best[n]) < 1e-6, `rank ${n}: ${i}`)
          assert.ok(Math.abs(r.hits.hits[n]._score - fused.get(i)) < 1e-6)
        })
      })

      test('search_after walks every readable match exactly once', async () => {
        const word = 'charlie'
        const pred = (d) => tokens(d.title).has(word)
        const want = readableIds(who, pred)
        const seen = []
        let after
        let pages = 0
        for (;;) {
          const r = await as(who, mode).search({
            index: INDEX,
            size: 29,
            query: { match: { title: word } },
            sort: [{ _score: 'desc' }],
            ...(after ? { search_after: after } : {})
          })
          if (r.hits.hits.length === 0) break
          checkHits(who, r, pred)
          for (const h of r.hits.hits) {
            assert.equal(h.sort[1], h._id)
            assert.ok(Math.abs(h.sort[0] - h._score) < 1e-6)
          }
          seen.push(...r.hits.hits.map((h) => h._id))
          after = r.hits.hits.at(-1).sort
          assert.ok(++pages <= Math.ceil(want.size / 29) + 1, 'search_after does not end')
        }
        assert.equal(new Set(seen).size, seen.length)
        assert.deepEqual(sorted(seen), sorted(want))
        assert.equal(pages, Math.ceil(want.size / 29))
      })

      test('count equals the readable matches', async () => {
        assert.equal((await as(who, mode).count({ index: INDEX })).count, readableIds(who).size)
        const pred = (d) => tokens(d.body).has('zulu') || d.tag === 't9'
        const r = await as(who, mode).count({
          index: INDEX,
          query: { bool: { should: [{ match: { body: 'zulu' } }, { term: { tag: 't9' } }] } }
        })
        assert.equal(r.count, readableIds(who, pred).size)
      })

      test('get of a hidden document is a 404, of a readable one its source', async () => {
        const ids = sorted(state.docs.keys()).slice(0, 40)
        const hidden = ids.filter((i) => !readable(state.docs.get(i), who))
        const shown = ids.filter((i) => readable(state.docs.get(i), who))
        assert.ok(hidden.length > 0)
        for (const id of hidden.slice(0, 4)) {
          await assert.rejects(as(who, mode).get({ index: INDEX, id }), (err) => {
            assert.ok(err instanceof errors.ResponseError)
            assert.equal(err.meta.statusCode, 404)
            assert.equal(err.body.found, false)
            return true
          })
          assert.equal(await as(who, mode).exists({ index: INDEX, id }), false)
        }
        if (shown.length) {
          const got = await as(who, mode).get({ index: INDEX, id: shown[0] })
          assert.equal(got.found, true)
          assert.equal(got._source.body, state.docs.get(shown[0]).body)
          assert.deepEqual(got._source.allowed_groups, state.docs.get(shown[0]).allowed_groups)
        }
      })
    })
  }
}

test('errors reach the caller as the client\'s error classes', async () => {
  await assert.rejects(as('alice', 'key').search({ index: INDEX, query: { match_all: {} } },
    { headers: { 'es-security-runas-user': 'bob' } }), (err) => err.meta.statusCode === 403)
  await assert.rejects(as('alice', 'key').search({ index: 'no-such-index' }),
    (err) => err.meta.statusCode === 404 && err.body.error.type === 'index_not_found_exception')
  const anonymous = new Client({ node: state.url })
  await assert.rejects(anonymous.info(), (err) => err.meta.statusCode === 401)
  await anonymous.close()
  await assert.rejects(as('dave', 'key').index({ index: INDEX, id: 'x', document: { title: 'x' } }),
    (err) => err.meta.statusCode === 403)
})

// The OpenAPI description that cordon serve answers at GET /v1/openapi.json, checked with a real
// OpenAPI validator (@seriousme/openapi-schema-validator, against the OpenAPI 3.x JSON schemas,
// every $ref resolved): any error fails. Starts its own server ($CORDON_BIN serve on a free
// loopback port) as es_client.test.mjs does. Run with `node --test` (tests/http/test_es_node.py).
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { Validator } from '@seriousme/openapi-schema-validator'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.join(HERE, '..', '..', '..')
const BIN = process.env.CORDON_BIN || path.join(ROOT, 'build', 'release', 'cordon')
const state = {}

before(async () => {
  state.dir = mkdtempSync(path.join(tmpdir(), 'cordon-openapi-'))
  const env = {
    ...process.env,
    CORDON_BOOTSTRAP_KEY: 'admin:openapi-test-admin-secret-0123',
    CORDON_ACCESS_LOG: 'off'
  }
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
  // No key: the description is open, as /_cordon/health is.
  const res = await fetch(`http://127.0.0.1:${port}/v1/openapi.json`)
  state.status = res.status
  state.type = res.headers.get('content-type')
  state.text = await res.text()
})

after(async () => {
  let code = state.proc ? state.proc.exitCode : 0
  if (state.proc && code === null) {
    const exited = new Promise((resolve) => state.proc.once('exit', (c, sig) => resolve(c ?? sig)))
    state.proc.kill('SIGTERM')
    code = await exited
  }
  if (state.dir) rmSync(state.dir, { recursive: true, force: true })
  assert.equal(code, 0, state.stderr)
})

test('GET /v1/openapi.json answers JSON without a key', () => {
  assert.equal(state.status, 200, state.text.slice(0, 500))
  assert.match(state.type, /^application\/json\b/)
  assert.equal(state.text, readFileSync(path.join(ROOT, 'docs', 'api', 'openapi.json'), 'utf8'))
})

test('the served document is a valid OpenAPI 3 description, every $ref resolved', async () => {
  const validator = new Validator()
  const result = await validator.validate(JSON.parse(state.text))
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2))
  assert.match(validator.version, /^3\./)
  const resolved = validator.resolveRefs()
  assert.ok(resolved.paths['/v1/collections/{collection}/retrieve'].post.requestBody.content)
})

test('the validator is not a rubber stamp: a broken copy fails', async () => {
  const broken = JSON.parse(state.text)
  broken.paths['/v1/grants'].get.responses['200'] = { content: {} } // no description
  const missingRef = JSON.parse(state.text)
  missingRef.paths['/v1/explain'].post.requestBody.content['application/json'].schema =
    { $ref: '#/components/schemas/NoSuchSchema' }
  for (const doc of [broken, missingRef]) {
    const result = await new Validator().validate(doc)
    assert.equal(result.valid, false)
  }
})

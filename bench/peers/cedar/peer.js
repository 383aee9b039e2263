// peer.js: the Cedar peer of `cordon bench authz` and of tests/http/test_cedar_agreement.py.
// Reads a JSON spec, decides each request with Cedar, prints one JSON line per request (its
// decision, the policies that decided, any evaluation error, its latency) and a closing summary.
// Relies on @cedar-policy/cedar-wasm (node_modules beside this file) and translate.js.
'use strict';
const fs = require('fs');
const path = require('path');
const { translateModel, translateRequest } = require('./translate');

// The spec, either Cedar's own terms:
//   {"policies": "<text>" | {"id": "<text>"}, "entities": [EntityJson],
//    "requests": [{"name"?, "principal", "action", "resource", "context", "entities"?}], ...}
// or cordon's, translated here first (translate.js):
//   {"cordon": {"model": <GET /v1/model>, "types"?: {path: "set"},
//               "requests": [{"name"?, "subject", "resource", "action", "context", "iters"?}]},
//  ...}
// and in both, optional: "iters" (timed calls per request, default 1, after one untimed call;
// a request's own "iters" overrides it), "budget_s" (stop a request's timing after this many
// seconds, default 2), "slice" (default true: each call gets the principal, its ancestors and
// the request's own entities, what an application would fetch for it, rather than every
// entity of the model).
//
// Output: {"i", "name", "decision": "allow"|"deny", "reasons": [policy ids], "errors":
// [messages], "p50_us", "p95_us", "checks_per_s", "iterations"} per request, then
// {"summary": true, "requests", "p50_us", "p95_us" (over every timed call), "cedar_version",
// "policies", "entities", "translate_ms", "load_ms"}. {"cases": [spec, ...]} runs several in
// one process, each line carrying its "case" index. A model translate.js cannot translate
// prints {"error", "unsupported": true} and exits 4 (after the other cases); another failure
// exits 1, a package that does not load 3.

function loadCedar() {
  try {
    return require(path.join(__dirname, 'node_modules/@cedar-policy/cedar-wasm/nodejs'));
  } catch (e) {
    process.stderr.write(`cedar peer: cannot load @cedar-policy/cedar-wasm (run scripts/deps.sh or ` +
      `npm ci in ${__dirname}): ${e.message}\n`);
    process.exit(3);
  }
}

function pct(sorted, q) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null;
}

// Every entity reachable upward from the request's principal, and the request's own.
function slicer(entities) {
  const byKey = new Map(entities.map((e) => [`${e.uid.type}::${e.uid.id}`, e]));
  return (req) => {
    const out = [...(req.entities || [])];
    const seen = new Set(out.map((e) => `${e.uid.type}::${e.uid.id}`));
    const stack = [req.principal];
    while (stack.length) {
      const u = stack.pop();
      const k = `${u.type}::${u.id}`;
      if (seen.has(k)) continue;
      seen.add(k);
      const e = byKey.get(k);
      if (!e) continue;
      out.push(e);
      for (const p of e.parents) stack.push(p);
    }
    return out;
  };
}

// One spec's requests; tag (the case's index, or undefined) goes on every line.
function runSpec(spec, cedar, tag) {
  let policies = spec.policies, entities = spec.entities || [], requests = spec.requests || [];
  const t0 = process.hrtime.bigint();
  if (spec.cordon) {
    let t;
    try {
      t = translateModel(spec.cordon.model, spec.cordon.types);
    } catch (e) {
      console.log(JSON.stringify({ case: tag, error: e.message, unsupported: !!e.unsupported }));
      return e.unsupported ? 4 : 1;
    }
    policies = t.policies;
    entities = t.entities;
    requests = spec.cordon.requests.map((q) => ({ name: q.name, iters: q.iters, ...translateRequest(q) }));
  }
  const translateMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const t1 = process.hrtime.bigint();
  const psid = `cordon-${tag === undefined ? 0 : tag}`;
  const parsed = cedar.preparsePolicySet(psid, { staticPolicies: policies });
  if (parsed.type !== 'success') {
    console.log(JSON.stringify({ case: tag, error: 'policies do not parse: ' + JSON.stringify(parsed.errors) }));
    return 1;
  }
  const loadMs = Number(process.hrtime.bigint() - t1) / 1e6;
  const slice = spec.slice === false ? () => entities : slicer(entities);
  const budgetNs = BigInt(Math.round((spec.budget_s || 2) * 1e9));
  const all = [];
  requests.forEach((q, i) => {
    const call = {
      principal: q.principal, action: q.action, resource: q.resource, context: q.context || {},
      preparsedPolicySetId: psid, entities: slice(q),
    };
    let ans = cedar.statefulIsAuthorized(call); // the untimed warm-up call, and the answer
    const times = [];
    const iters = q.iters || spec.iters || 1;
    const start = process.hrtime.bigint();
    for (let k = 0; k < iters; k++) {
      const a = process.hrtime.bigint();
      ans = cedar.statefulIsAuthorized(call);
      times.push(Number(process.hrtime.bigint() - a) / 1000);
      if (process.hrtime.bigint() - start > budgetNs) break;
    }
    const total = Number(process.hrtime.bigint() - start) / 1e9;
    all.push(...times);
    times.sort((x, y) => x - y);
    const row = { case: tag, i, name: q.name, p50_us: pct(times, 0.5), p95_us: pct(times, 0.95),
      checks_per_s: times.length / total, iterations: times.length };
    if (ans.type === 'success') {
      row.decision = ans.response.decision;
      row.reasons = ans.response.diagnostics.reason;
      row.errors = ans.response.diagnostics.errors.map((e) => `${e.policyId}: ${e.error.message}`);
    } else {
      row.decision = null;
      row.errors = ans.errors.map((e) => e.message);
    }
    console.log(JSON.stringify(row));
  });
  all.sort((x, y) => x - y);
  console.log(JSON.stringify({
    case: tag, summary: true, requests: requests.length, p50_us: pct(all, 0.5), p95_us: pct(all, 0.95),
    cedar_version: cedar.getCedarVersion(),
    policies: typeof policies === 'string' ? null : Object.keys(policies).length,
    entities: entities.length, translate_ms: translateMs, load_ms: loadMs,
  }));
  return 0;
}

function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const cedar = loadCedar();
  if (!spec.cases) return runSpec(spec, cedar, undefined);
  let rc = 0;
  spec.cases.forEach((c, k) => {
    rc = runSpec(c, cedar, k) || rc;
  });
  return rc;
}

process.exitCode = main();

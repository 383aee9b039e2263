// bench.js: the Casbin peer of `cordon bench authz`: loads the catalog cordon wrote (RBAC with
// domains and a role hierarchy), times the same checks, prints one JSON row per line.
// Relies on the npm package casbin, installed by the bench into build/ (NODE_PATH points there).
'use strict';
const fs = require('fs');
const casbin = require('casbin');

const MODEL = `
[request_definition]
r = sub, dom, obj, act, ctx

[policy_definition]
p = sub, dom, obj, act, cond

[role_definition]
g = _, _, _

[policy_effect]
e = some(where (p.eft == allow))

[matchers]
m = g(r.sub, p.sub, r.dom) && r.dom == p.dom && keyMatch(r.obj, p.obj) && r.act == p.act && condOk(p.cond, r.ctx)
`;

// Conditions are written "amount<1000"; the context travels as a string "amount=10" so that
// the CachedEnforcer (string-only keys) can cache conditional checks too.
function condOk(cond, ctx) {
  if (!cond) return true;
  const m = /^(\w+)<(-?\d+(?:\.\d+)?)$/.exec(cond);
  if (!m) return false;
  const kv = {};
  for (const part of String(ctx).split('&')) {
    const i = part.indexOf('=');
    if (i > 0) kv[part.slice(0, i)] = part.slice(i + 1);
  }
  if (!(m[1] in kv)) return false; // a missing operand is false
  return Number(kv[m[1]]) < Number(m[2]);
}

async function build(cat, cached) {
  const model = casbin.newModelFromString(MODEL);
  const e = cached ? await casbin.newCachedEnforcer(model) : await casbin.newEnforcer(model);
  e.addFunction('condOk', condOk);
  await e.addPolicies(cat.policies);
  await e.addGroupingPolicies(cat.groupings);
  return e;
}

function pct(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function timeCheck(fn, iters, budgetNs) {
  const times = [];
  const start = process.hrtime.bigint();
  let result;
  for (let i = 0; i < iters; i++) {
    const t0 = process.hrtime.bigint();
    result = await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1000);
    if (process.hrtime.bigint() - start > budgetNs) break;
  }
  const total = Number(process.hrtime.bigint() - start) / 1e9;
  times.sort((a, b) => a - b);
  return { p50: pct(times, 0.5), p95: pct(times, 0.95), rate: times.length / total, n: times.length, result };
}

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const budgetNs = BigInt(Math.round((spec.budget_s || 2) * 1e9));
  for (const cat of spec.catalogs) {
    const t0 = process.hrtime.bigint();
    const plain = await build(cat, false);
    const cached = await build(cat, true);
    const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
    process.stderr.write(`casbin: ${cat.name} catalog loaded twice in ${loadMs.toFixed(0)} ms\n`);
    for (const c of cat.checks) {
      for (const mode of ['cold', 'warm']) {
        let fn;
        if (c.check === 'view') {
          // Casbin's closest operation: all roles and groups implied for the user, per domain.
          fn = () => plain.getImplicitRolesForUser(c.sub, c.dom);
          if (mode === 'warm') await fn();
        } else if (mode === 'cold') {
          fn = () => plain.enforce(c.sub, c.dom, c.obj, c.act, c.ctx);
        } else {
          await cached.enforce(c.sub, c.dom, c.obj, c.act, c.ctx);
          fn = () => cached.enforce(c.sub, c.dom, c.obj, c.act, c.ctx);
        }
        const r = await timeCheck(fn, spec.iters, budgetNs);
        const allowed = c.check === 'view' ? null : r.result;
        console.log(JSON.stringify({
          catalog: cat.name, check: c.check, mode, p50_us: r.p50, p95_us: r.p95,
          checks_per_s: r.rate, iterations: r.n, allowed, view_size: c.check === 'view' ? r.result.length : null,
        }));
      }
    }
  }
}

main().catch((e) => { console.error('casbin peer failed: ' + (e && e.stack || e)); process.exit(1); });

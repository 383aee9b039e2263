#!/usr/bin/env bash
# Installs the Debian packages cordon needs to build and test (and with --bench, to run the
# benchmarks' corpora and peers), when they are missing, and the Node.js client the wire tests
# use. Relies on dpkg and apt-get (root, as on the project's machines and CI) and npm.
set -euo pipefail
pkgs=(build-essential pkg-config liblmdb-dev libroaring-dev libmicrohttpd-dev libstemmer-dev
      libxxhash-dev libjansson-dev libcmocka-dev libutf8proc-dev libsqlite3-dev
      python3 python3-pytest python3-requests clang libclang-rt-14-dev clang-format
      libssl-dev libcurl4-openssl-dev python3-elasticsearch prometheus)
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
# The official Node.js Elasticsearch client for the wire tests (tests/http/node), at the
# versions its package-lock.json pins; node_modules is never committed.
node_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/http/node"
if [ ! -d "$node_dir/node_modules/@elastic/elasticsearch" ]; then
    echo "deps: npm ci in tests/http/node"
    (cd "$node_dir" && { npm ci --no-audit --no-fund --loglevel=error ||
                         npm install --no-audit --no-fund --loglevel=error; })
fi

#!/usr/bin/env bash
# run_side_by_side.sh: cordon's unfiltered search (the 100%-readable subject, strategy auto) beside
# USearch's f32, f16 and i8 HNSW indexes on the same dumps, interleaved run by run, a table a set.
# Relies on build/release/cordon (make), Node 20 with the packages of `make bench-deps`, and
# SciFact's BEIR directory under $CORDON_SHARED_DATA (default: ../shared/data beside the repo).
#
# For each set, RUNS rounds of: `cordon bench permissions --strategy auto --warmup` (the first
# round loads the engine's directory and writes the dump; later rounds reopen the same directory),
# then `node peers.js DUMP --only usearch` (builds its three indexes and sweeps ef). Each round's
# ratio is cordon's p50 over USearch's, from figures taken minutes apart on the same machine.
# cordon's figures: the `auto` row of layout random at readable 1 (the subject USearch's truth is
# taken from), and the first ef of the benchmark's own unfiltered sweep (cordon_search, ef set)
# reaching recall@10 0.99. USearch's: p50 at the first ef in its sweep reaching 0.99.
#
# Usage: bench/peers/usearch_lance/run_side_by_side.sh [--sets scifact,fashion-mnist,generated]
#        [--runs N (default 2)] [--size N (generated, default 200000)] [--dim D (default 384)]
#        [--out FILE (the tables, Markdown)] [--keep-json DIR (every run's JSON and log)]
#        [--tables DIR (print the tables again from a --keep-json DIR; runs nothing)]
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
SHARED=${CORDON_SHARED_DATA:-$ROOT/../shared/data}
CORDON=${CORDON:-$ROOT/build/release/cordon}
SETS=scifact,fashion-mnist,generated
RUNS=2
SIZE=200000
DIM=384
OUT=
KEEP_JSON=
TABLES=

usage() {
    sed -n '15,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
    --sets) SETS=${2:?}; shift 2 ;;
    --runs) RUNS=${2:?}; shift 2 ;;
    --size) SIZE=${2:?}; shift 2 ;;
    --dim) DIM=${2:?}; shift 2 ;;
    --out) OUT=${2:?}; shift 2 ;;
    --keep-json) KEEP_JSON=${2:?}; shift 2 ;;
    --tables) TABLES=${2:?}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "run_side_by_side.sh: unknown option $1" >&2; usage ;;
    esac
done

# The table of one set from its runs' JSON files: two rows a run, one for each of cordon's figures
# (the `auto` row; the first ef of its own unfiltered sweep reaching 0.99) against USearch's.
table() {
    node - "$1" "$2" "$3" <<'EOF'
'use strict';
const fs = require('fs');
const [dir, runs, name] = [process.argv[2], +process.argv[3], process.argv[4]];
const TARGET = 0.99;
const QUANT = ['f32', 'f16', 'i8'];
const f3 = (x) => x.toFixed(3);
const out = [`\n### ${name}\n`];
out.push('| run | load | cordon | recall / p50 ms | USearch f32: ef / recall / p50 ms | ' +
    'cordon / f32 | USearch f16 | cordon / f16 | USearch i8 | cordon / i8 |');
out.push('|---|---:|---|---|---|---:|---|---:|---|---:|');
const notes = [];
const verdict = {}; // figure -> quant -> ratios (null: USearch never reaches the target)
for (let r = 1; r <= runs; r++) {
    const c = JSON.parse(fs.readFileSync(`${dir}/cordon.${r}.json`, 'utf8'));
    const u = JSON.parse(fs.readFileSync(`${dir}/usearch.${r}.json`, 'utf8'));
    const load = fs.readFileSync(`${dir}/load.${r}`, 'utf8').trim();
    const full = c.rows.filter((x) => x.strategy === 'auto' && x.readable === 1);
    const auto = full.find((x) => x.layout === 'random');
    const plans = Object.entries(auto.plans).map(([k, v]) => `${k} ${v}`).join(', ');
    const own = c.unfiltered.find((x) => x.recall_at_10 >= TARGET);
    const figures = [['auto, 100% readable', `auto (${plans})`, auto]];
    if (own) figures.push(['sweep, first ef reaching 0.99', `ef ${own.ef} (sweep)`, own]);
    const us = {};
    for (const q of QUANT) {
        const sweep = u.rows.filter((x) => x.engine === 'usearch' && x.variant === q)
            .sort((a, b) => a.ef - b.ef);
        const hit = sweep.find((x) => x.recall_at_10 >= TARGET);
        const best = sweep.reduce((a, b) => (b.recall_at_10 > a.recall_at_10 ? b : a));
        us[q] = hit ? { hit, cell: `${hit.ef} / ${hit.recall_at_10.toFixed(3)} / ${f3(hit.p50_ms)}` }
            : { hit: null, cell: `never reaches 0.99 (best ${best.recall_at_10.toFixed(3)} at ` +
                `ef ${best.ef}, ${f3(best.p50_ms)} ms)` };
    }
    for (const [key, label, fig] of figures) {
        const cells = [`${r}`, load, label, `${fig.recall_at_10.toFixed(3)} / ${f3(fig.p50_ms)}`];
        verdict[key] = verdict[key] || { f32: [], f16: [], i8: [] };
        for (const q of QUANT) {
            const ratio = us[q].hit ? fig.p50_ms / us[q].hit.p50_ms : null;
            verdict[key][q].push(ratio);
            cells.push(us[q].cell, ratio === null ? '—' : `**${ratio.toFixed(2)}**`);
        }
        out.push(`| ${cells.join(' | ')} |`);
    }
    const p50s = full.map((x) => x.p50_ms);
    notes.push(`run ${r}: cordon's \`auto\` rows at 100% of the three layouts (the same ` +
        `subject) p50 ${f3(Math.min(...p50s))} – ${f3(Math.max(...p50s))} ms; ` +
        (own ? '' : 'its unfiltered sweep does not reach 0.99; ') +
        (c.reused ? 'directory reused' : `loaded in ${c.load_s.toFixed(0)} s`));
}
out.push('');
for (const n of notes) out.push(`- ${n}`);
for (const [key, byq] of Object.entries(verdict))
    for (const q of QUANT) {
        const v = byq[q];
        let s;
        if (v.every((x) => x === null)) s = 'no ratio (USearch never reaches 0.99)';
        else if (v.every((x) => x !== null && x <= 0.7)) s = 'holds in every run';
        else if (v.some((x) => x !== null && x <= 0.7)) s = 'holds in some runs only';
        else s = 'does not hold';
        out.push(`- cordon (${key}) / USearch ${q} <= 0.7: ${s}`);
    }
console.log(out.join('\n'));
EOF
}

if [ -n "$TABLES" ]; then
    for set in ${SETS//,/ }; do
        [ -f "$TABLES/$set/cordon.1.json" ] || continue
        table "$TABLES/$set" "$(find "$TABLES/$set" -name 'cordon.*.json' | wc -l)" "$set"
    done
    exit 0
fi

[ -x "$CORDON" ] || { echo "no $CORDON: run make -j2 first" >&2; exit 1; }
[ -x "$(dirname "$CORDON")/cordon-bench" ] ||
    { echo "no cordon-bench beside $CORDON: run make -j2 first" >&2; exit 1; }
[ -d "$HERE/node_modules/usearch" ] || { echo "no usearch in $HERE: run make bench-deps" >&2; exit 1; }
command -v node >/dev/null || { echo "no node: run make bench-deps" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cordon-side-by-side.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# One build for the whole run, even if the tree is rebuilt meanwhile (`cordon bench` runs the
# cordon-bench beside it).
mkdir -p "$WORK/bin"
cp "$CORDON" "$(dirname "$CORDON")/cordon-bench" "$WORK/bin/"
[ -n "$KEEP_JSON" ] && mkdir -p "$KEEP_JSON"
[ -n "$OUT" ] && : >"$OUT"

say() { printf '%s\n' "$*" | tee -a "${OUT:-/dev/null}"; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }

say "cordon $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') vs USearch" \
    "$(node -p "require('$HERE/node_modules/usearch/package.json').version" 2>/dev/null ||
        echo '?'); $RUNS interleaved runs a set; $(nproc) CPUs; $(date -u '+%Y-%m-%d %H:%M UTC')"

for set in ${SETS//,/ }; do
    case $set in
    scifact) args=(--corpus "$SHARED/scifact") ;;
    fashion-mnist) args=(--corpus fashion-mnist) ;;
    generated) args=(--corpus generated --size "$SIZE" --dim "$DIM") ;;
    *) echo "run_side_by_side.sh: unknown set $set (scifact, fashion-mnist, generated)" >&2
       exit 2 ;;
    esac
    d=$WORK/$set
    mkdir -p "$d"
    for r in $(seq 1 "$RUNS"); do
        dump=()
        [ "$r" = 1 ] && dump=(--dump "$d/dump")
        loadavg >"$d/load.$r"
        echo "[$(date +%T)] $set run $r/$RUNS: cordon (load average $(cat "$d/load.$r"))" >&2
        "$WORK/bin/cordon" bench permissions "${args[@]}" --strategy auto --warmup \
            --data "$d/data" --keep "${dump[@]}" --format json --json-out "$d/cordon.$r.json" \
            >"$d/cordon.$r.log" 2>&1 || { cat "$d/cordon.$r.log" >&2; exit 1; }
        echo "[$(date +%T)] $set run $r/$RUNS: USearch" >&2
        node "$HERE/peers.js" "$d/dump" --only usearch --json "$d/usearch.$r.json" \
            >"$d/usearch.$r.log" 2>&1 || { cat "$d/usearch.$r.log" >&2; exit 1; }
    done
    table "$d" "$RUNS" "$set" | tee -a "${OUT:-/dev/null}"
    if [ -n "$KEEP_JSON" ]; then
        mkdir -p "$KEEP_JSON/$set"
        cp "$d"/*.json "$d"/*.log "$d"/load.* "$KEEP_JSON/$set/"
    fi
    rm -rf "$d"
done

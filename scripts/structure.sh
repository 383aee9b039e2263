#!/usr/bin/env bash
# Prints the circles in the file-level graph of src/ (who calls whom, by nm on the release
# objects, and who includes whom, by #include) and every edge that reaches up a layer; exits 1
# if there is any. Relies on bash, nm, grep, sed, awk and sort; the objects from `make`.
#
# usage: scripts/structure.sh [BUILD_DIR]   (default build/release)
#
# A node is a file: vector/hnsw.c, vector/hnsw.h. An edge A.c -> B.c means A.c uses a symbol
# that B.c defines (static inline functions belong to the header that holds them); an edge
# A -> B.h means A includes B.h. Inside a folder the graph must have no circle (two files that call each other
# are one module: share what they share from a file below both). Between folders an edge must
# go down the layers of DESIGN.md: base < store < acl, vector, text < authz < query < api <
# http < cli; http reaches the engine only through include/cordon.h.

set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}

if ! compgen -G "$build/src/*/*.o" >/dev/null; then
    echo "structure: no objects under $build/src; run make first" >&2
    exit 2
fi

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT

# Calls: symbols each object defines and those it leaves undefined.
for o in "$build"/src/*/*.o; do
    node=${o#"$build"/src/}
    node=${node%.o}.c
    [ -f "src/$node" ] || continue # left over from a file since moved
    nm -P --defined-only "$o" | awk -v n="$node" '$2 ~ /^[TDRBCGSV]$/ { print "D", n, $1 }'
    nm -P --undefined-only "$o" | awk -v n="$node" '{ print "U", n, $1 }'
done | awk '
    $1 == "D" { def[$3] = $2; next }
    { use[++nu] = $2 " " $3 }
    END {
        for (i = 1; i <= nu; i++) {
            split(use[i], f, " ")
            if ((f[2] in def) && def[f[2]] != f[1]) print f[1], def[f[2]], "calls", f[2]
        }
    }' | sort -u -k1,2 >>"$edges"

# Includes: "dir/name.h" as the project writes them (-Isrc).
grep -H '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*/[A-Za-z0-9_]*\.h"' \
    src/*/*.c src/*/*.h |
    sed -E 's|^src/([^:]*):.*"([^"]*\.h)".*|\1 \2 includes \2|' |
    awk '$1 != $2' | sort -u -k1,2 >>"$edges"

awk '
function rank(d) {
    if (d == "base") return 0
    if (d == "store") return 1
    if (d == "acl" || d == "vector" || d == "text") return 2
    if (d == "authz") return 3
    if (d == "query") return 4
    if (d == "api") return 5
    if (d == "http") return 6
    if (d == "cli") return 7
    return -1
}
function dir(n) { sub(/\/.*/, "", n); return n }
# Tarjan strongly connected components over the edges inside one folder.
function visit(v,    i, w) {
    idx[v] = low[v] = ++counter
    stack[++sp] = v
    onstack[v] = 1
    for (i = 1; i <= nout[v]; i++) {
        w = out[v, i]
        if (!(w in idx)) {
            visit(w)
            if (low[w] < low[v]) low[v] = low[w]
        } else if (onstack[w] && idx[w] < low[v]) {
            low[v] = idx[w]
        }
    }
    if (low[v] == idx[v]) {
        ncomp++
        size = 0
        do {
            w = stack[sp--]
            onstack[w] = 0
            comp[w] = ncomp
            size++
        } while (w != v)
        csize[ncomp] = size
    }
}
{
    a = $1; b = $2; why = $3 " " $4
    nodes[a] = 1; nodes[b] = 1
    if (dir(a) == dir(b)) {
        if (!((a, b) in seen)) { seen[a, b] = why; out[a, ++nout[a]] = b }
        else if (index(seen[a, b], why) == 0) seen[a, b] = seen[a, b] ", " why
    } else if (rank(dir(b)) >= rank(dir(a))) {
        up[++nup] = sprintf("  %s -> %s (%s %s %s)", a, b, dir(a), $3, $4)
    } else if (dir(a) == "http" && dir(b) != "base" && !(dir(b) == "api" && $3 == "calls")) {
        # The server is a client of include/cordon.h like any embedding program.
        up[++nup] = sprintf("  %s -> %s (http may use only cordon.h and base/: %s %s)", a, b, $3, $4)
    }
}
END {
    for (v in nodes) if (!(v in idx)) visit(v)
    bad = 0
    for (c = 1; c <= ncomp; c++) {
        if (csize[c] < 2) continue
        bad++
        members = ""
        for (v in comp) if (comp[v] == c) members = members " " v
        printf "circle in src/%s:%s\n", dir(substr(members, 2)), members
        for (v in comp) {
            if (comp[v] != c) continue
            for (i = 1; i <= nout[v]; i++) {
                w = out[v, i]
                if (comp[w] == c) printf "  %s -> %s (%s)\n", v, w, seen[v, w]
            }
        }
    }
    if (nup) {
        bad += nup
        print "edges that do not go down a layer:"
        for (i = 1; i <= nup; i++) print up[i]
    }
    if (bad) { printf "structure: %d problem(s)\n", bad; exit 1 }
    n = 0
    for (v in nodes) n++
    printf "structure: %d files, no circle inside a folder, every edge between folders goes down\n", n
}' "$edges"

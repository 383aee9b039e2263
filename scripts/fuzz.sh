#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS from its seeds (tests/fuzz/seeds/<target>/ and what
# the target writes itself), records PASS/FAIL lines for run-tests.sh --summary, and keeps a
# failing input under build/fuzz/crashes/. Relies on bash and the targets built by MODE=fuzz.
set -u
secs=$1; shift
results=build/test-results.txt
mkdir -p build/fuzz/crashes
fail=0
for t in "$@"; do
    name=$(basename "$t")
    corpus=build/fuzz/corpus/$name
    log=build/fuzz/logs/$name.log
    mkdir -p "$corpus" "$(dirname "$log")"
    [ -d "tests/fuzz/seeds/$name" ] && cp -n tests/fuzz/seeds/"$name"/* "$corpus"/ 2>/dev/null
    CORDON_FUZZ_SEEDS=$corpus "$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix=build/fuzz/crashes/"$name"- -print_final_stats=1 "$corpus" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    if [ $rc -eq 0 ]; then
        echo "[fuzz] $name: ${runs:-0} inputs in ${secs}s, 1 passed"
        echo "fuzz/$name PASS 1 0 0" >>"$results"
    else
        echo "[fuzz] $name: FAILED after ${runs:-?} inputs, log follows"
        tail -n 40 "$log"
        echo "fuzz/$name FAIL 0 1 0" >>"$results"
        fail=1
    fi
done
exit $fail

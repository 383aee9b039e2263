#!/usr/bin/env bash
# Runs each libFuzzer target, records PASS/FAIL lines for run-tests.sh --summary, and keeps a
# failing input under build/fuzz/crashes/. Relies on bash and the targets built by MODE=fuzz.
#   fuzz.sh SECONDS TARGET...   explore: SECONDS each, growing build/fuzz/corpus/<target>
#   fuzz.sh --fixed TARGET...   what make test runs: from the committed seeds only, seed 1 and a
#                               fixed number of inputs each, so that every run (CI's too) tries
#                               the same inputs and a pass is repeatable
set -u
fixed=0
if [ "$1" = "--fixed" ]; then fixed=1; else secs=$1; fi
shift
results=build/test-results.txt
mkdir -p build/fuzz/crashes
fail=0
for t in "$@"; do
    name=$(basename "$t")
    log=build/fuzz/logs/$name.log
    if [ $fixed = 1 ]; then
        corpus=build/fuzz/fixed-corpus/$name
        rm -rf "$corpus"
        # The model target exports each input's model after every line and imports it, the
        # HTTP target runs a real data directory (rebuilt after every write): fewer inputs.
        case $name in fuzz_model) runs=12000 ;; fuzz_http) runs=15000 ;; *) runs=150000 ;; esac
        how=(-seed=1 -runs=$runs)
        what="fixed, seed 1"
    else
        corpus=build/fuzz/corpus/$name
        how=(-max_total_time="$secs")
        what="${secs}s"
    fi
    mkdir -p "$corpus" "$(dirname "$log")"
    [ -d "tests/fuzz/seeds/$name" ] && cp tests/fuzz/seeds/"$name"/* "$corpus"/ 2>/dev/null
    CORDON_FUZZ_SEEDS=$corpus "$t" "${how[@]}" -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix=build/fuzz/crashes/"$name"- -print_final_stats=1 "$corpus" >"$log" 2>&1
    rc=$?
    runs_done=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)
    if [ $rc -eq 0 ]; then
        echo "[fuzz] $name: ${runs_done:-0} inputs ($what), 1 passed"
        echo "fuzz/$name PASS 1 0 0" >>"$results"
    else
        echo "[fuzz] $name: FAILED after ${runs_done:-?} inputs, log follows"
        tail -n 40 "$log"
        echo "fuzz/$name FAIL 0 1 0" >>"$results"
        fail=1
    fi
done
exit $fail

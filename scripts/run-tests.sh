#!/usr/bin/env bash
# Runs cordon's unit-test binaries, records their results under build/, and with --summary
# prints the closing line over every mode run so far (passed, failed, skipped). Relies on bash
# and cmocka's exit codes and summary lines.
set -u
results=build/test-results.txt
if [ "${1:-}" = "--summary" ]; then
    # Each line: "<mode>/<binary> PASS|FAIL <cases passed> <cases failed> <cases skipped>".
    passed=$(awk '{p += $3} END {print p + 0}' "$results" 2>/dev/null || echo 0)
    failed=$(awk '{f += $4 + ($2 == "FAIL" && $4 == 0)} END {print f + 0}' "$results" 2>/dev/null || echo 0)
    skipped=$(awk '{k += $5} END {print k + 0}' "$results" 2>/dev/null || echo 0)
    rm -f "$results"
    # CI reads "N passed, M failed" and then ", K skipped" on this one line.
    echo "tests: ${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped"
    [ "${failed:-0}" -eq 0 ] && [ "${passed:-0}" -gt 0 ]
    exit $?
fi
if [ "${1:-}" = "--pytest" ]; then
    # Command-line and wire tests through the binary of this mode ($CORDON_BIN), with Debian's
    # pytest: the paths given after the mode, or all of them.
    mode=$2
    shift 2
    [ $# -gt 0 ] || set -- tests/cli tests/http
    mkdir -p "build/$mode/logs"
    log=build/$mode/logs/cli.log
    /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@" >"$log" 2>&1
    rc=$?
    np=$(grep -Eo '[0-9]+ passed' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
    nf=$(grep -Eo '[0-9]+ (failed|error)' "$log" | awk '{s += $1} END {print s + 0}')
    nk=$(grep -Eo '[0-9]+ skipped' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)
    if [ $rc -eq 0 ]; then
        echo "[$mode] cli (pytest): ${np:-0} passed$([ "${nk:-0}" -gt 0 ] && echo ", $nk skipped")"
        echo "$mode/cli PASS ${np:-0} $nf ${nk:-0}" >>"$results"
    else
        echo "[$mode] cli (pytest): FAILED, log follows"
        tail -n 60 "$log"
        # A sanitizer's report sits inside a failed assertion's text, often far above the tail.
        if grep -q -E "ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer)|runtime error:" "$log"; then
            echo "[$mode] cli (pytest): the sanitizer's report:"
            grep -E -m 3 -A 60 "ERROR: (AddressSanitizer|LeakSanitizer|ThreadSanitizer)|runtime error:" "$log" |
                sed 's/\\n/\n/g' | head -n 200
        fi
        echo "$mode/cli FAIL ${np:-0} $nf ${nk:-0}" >>"$results"
    fi
    exit $rc
fi
mode=$1; shift
mkdir -p build
fail=0
for t in "$@"; do
    name=${t#build/$mode/tests/unit/}
    log=build/$mode/logs/$name.log
    mkdir -p "$(dirname "$log")"
    start=$(date +%s)
    "$t" >"$log" 2>&1
    rc=$?
    np=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
    nf=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
    # cmocka's skip(): "[  SKIPPED ] N test(s), listed below:", not counted as passed.
    nk=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
    skipped=""
    [ "$nk" -gt 0 ] && skipped=", $nk skipped"
    if [ $rc -eq 0 ]; then
        echo "[$mode] $name: $np passed$skipped ($(( $(date +%s) - start ))s)"
        echo "$mode/$name PASS $np $nf $nk" >>"$results"
    else
        echo "[$mode] $name: FAILED, log follows"
        tail -n 60 "$log"
        echo "$mode/$name FAIL $np $nf $nk" >>"$results"
        fail=1
    fi
    grep -h '^SKIP:' "$log" | sed "s|^|[$mode] $name: |" || true
done
exit $fail

#!/bin/sh
# `make grade` in a stage (or a kit): run the stage's tests, then benchmark
# the graded kernels in the stage's one declared build, and print tests
# passed and speed as % of OpenBLAS, with what was measured, on which
# machine, against which OpenBLAS.
#   tools/grade.sh MAKE STAGE KERNELS SIZE BUILD   (run from the stage directory)
set -u
make="$1"; stage="$2"; kernels="$3"; size="$4"; build="$5"
root=$(cd ../.. && pwd)
results="$root/build/results/stage-$stage.csv"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

echo "== grading stage $stage: tests"
CRITERION_VERBOSITY_LEVEL=1 $make --no-print-directory test >"$log" 2>&1
summary=$(grep 'Synthesis:' "$log" | tail -n 1)
# Tests of an instruction set this CPU lacks are skipped, not counted.
skipped=$(grep '^\[SKIP\]' "$log" | grep -c 'cannot run')
tested=$(echo "$summary" | sed -n 's/.*Tested: \([0-9]*\).*/\1/p')
passing=$(echo "$summary" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
if [ -z "$tested" ]; then
    tail -n 20 "$log"
    echo "error: the tests did not build or run (see above)" >&2
    exit 1
fi
grep -E '^\[(FAIL|----)\]' "$log" | head -n 20

# A stage with no kernel of its own to time (stage 06) is graded on its tests.
if [ -z "$kernels" ]; then
    echo
    echo "tests passed: $passing of $tested"
    [ "$skipped" -gt 0 ] && echo "tests skipped, for instructions this CPU lacks: $skipped"
    [ "$passing" = "$tested" ]
    exit
fi

echo "== grading stage $stage: speed at n = $size, $build"
rm -f "$results"
$make --no-print-directory bench GRADE=1 SIZES="$size" KERNELS="$kernels" REPS=3 >"$log" 2>&1
bench_ok=$?
[ $bench_ok -eq 0 ] || grep 'error:' "$log"

# What the CSV header says of the machine and of OpenBLAS.
meta() { sed -n "s/^# $1: //p" "$results" 2>/dev/null | head -n 1; }

echo
echo "measured:  kernels $kernels at n = $size (median of 3 runs), $build"
if [ -r "$results" ]; then
    echo "machine:   $(meta cpu), $(meta cores) cores, best ISA $(meta isa_best)," \
         "peak $(meta peak.machine.1) GFLOPS on 1 thread"
    echo "compiler:  $(meta compiler) $(meta cflags)"
    echo "against:   OpenBLAS core $(meta openblas_core) ($(meta openblas_isa))," \
         "OPENBLAS_CORETYPE $(meta openblas_coretype), OPENBLAS_L2_SIZE $(meta openblas_l2_size)"
    note=$(meta openblas_note)
    [ -n "$note" ] && echo "note:      $note"
fi
echo "tests passed: $passing of $tested"
[ "$skipped" -gt 0 ] && echo "tests skipped, for instructions this CPU lacks: $skipped"
for kernel in $(echo "$kernels" | tr ',' ' '); do
    lines=$(grep "^$kernel[-,]" "$results" 2>/dev/null)
    if [ -z "$lines" ]; then
        if grep -q "skipping $kernel:" "$log"; then
            echo "$kernel: not run: $(grep "skipping $kernel:" "$log" | head -n 1 | sed 's/.*: //')"
            continue
        fi
        echo "$kernel: no result (wrong answer or not built): 0 % of OpenBLAS"
        continue
    fi
    echo "$lines" | awk -F, '{ printf "%s: %.1f GFLOPS on %d thread(s), %.1f %% of OpenBLAS, %.1f %% of peak\n", $1, $8, $3, 100 * $10, $9 }'
done
awk -F, -v k=",$kernels," '!/^#/ && $1 != "kernel" {
        name = $1; sub(/-.*/, "", name)
        if (index(k, "," name ",") && 100 * $10 > best) best = 100 * $10
    } END { printf "performance score: %.1f %% of OpenBLAS (best graded kernel)\n", best }' \
    "$results" 2>/dev/null || echo "performance score: 0 % of OpenBLAS"
[ "$passing" = "$tested" ] && [ $bench_ok -eq 0 ]

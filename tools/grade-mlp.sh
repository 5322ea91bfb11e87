#!/bin/sh
# `make grade` in stage 07: the tests (through tools/grade.sh), then, in the
# release build, the test accuracy after three epochs on the committed
# sample, and an epoch's time for 784-256-10, batch 64, Adam on the auto
# backend against the same steps on OpenBLAS, same run, same threads.
#   tools/grade-mlp.sh MAKE STAGE KERNELS SIZE BUILD   (run from the stage directory)
set -u
make="$1"; stage="$2"; build="$5"
root=$(cd ../.. && pwd)
bin="$root/build/stage-$stage"
log=$(mktemp)
csv=$(mktemp)
trap 'rm -f "$log" "$csv"' EXIT

"$root/tools/grade.sh" "$make" "$stage" "" "" "$build"
tests_ok=$?

echo
echo "== grading stage $stage: accuracy and speed, in the release build (-O2)"
if ! $make --no-print-directory build >"$log" 2>&1; then
    tail -n 20 "$log"
    echo "error: the programs did not build (see above)" >&2
    exit 1
fi
if ! "$bin/run_mlp" --data sample --epochs 3 --seed 1 --threads 1 --csv "$csv" >"$log" 2>&1; then
    cat "$log"
    echo "accuracy: no result (the training run failed): 0 %"
    exit 1
fi
acc=$(grep -v '^#' "$csv" | tail -n 1 | cut -d, -f13)
echo "accuracy:  784-256-10 after 3 epochs on the sample (1,600 train, 400 test images):" \
     "$(awk -v a="$acc" 'BEGIN { printf "%.1f %%", 100 * a }')" \
     "(70 % or more passes)"
acc_ok=$(awk -v a="$acc" 'BEGIN { print (a >= 0.70) ? 0 : 1 }')

threads=${THREADS:-$(nproc)}
if ! "$bin/bench_mlp" --kernels auto,openblas --threads "$threads" --steps 30 --no-sweep \
        --csv "$csv" >"$log" 2>&1; then
    grep 'error:' "$log"
    echo "speed: no result: 0 % of OpenBLAS"
    exit 1
fi
meta() { sed -n "s/^# $1: //p" "$csv" | head -n 1; }
echo "machine:   $(meta cpu), $(meta cores) cores, best ISA $(meta isa_best)"
echo "against:   OpenBLAS core $(meta openblas_core) ($(meta openblas_isa))," \
     "OPENBLAS_CORETYPE $(meta openblas_coretype), OPENBLAS_L2_SIZE $(meta openblas_l2_size)"
note=$(meta openblas_note)
[ -n "$note" ] && echo "note:      $note"
grep -v '^#' "$csv" | awk -F, '
    $1 == "784-256-10" && $5 == 64 { s[$3] = $6
        printf "%-9s %.3f s per epoch of 60,000 images on %d thread(s)\n", $3 ":", $6, $4 }
    END { if (s["auto"] > 0 && s["openblas"] > 0)
              printf "performance score: %.1f %% of OpenBLAS (its epoch time over yours)\n",
                     100 * s["openblas"] / s["auto"]
          else print "performance score: 0 % of OpenBLAS (no result)" }'
[ "$tests_ok" -eq 0 ] && [ "$acc_ok" -eq 0 ]

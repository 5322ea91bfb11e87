#!/bin/sh
# `make grade` in stage 08: the tests (through tools/grade.sh), then, in the
# release build, the test accuracy of the CNN after three epochs on the
# committed sample, and an epoch's time (batch 256, Adam) on the auto conv
# path against the im2col one, same run, same threads, with the training
# step's share of the machine's FMA peak as the speed score.
#   tools/grade-cnn.sh MAKE STAGE KERNELS SIZE BUILD   (run from the stage directory)
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
if ! "$bin/run_cnn" --data sample --epochs 3 --batch 64 --seed 1 --threads 1 --csv "$csv" \
        >"$log" 2>&1; then
    cat "$log"
    echo "accuracy: no result (the training run failed): 0 %"
    exit 1
fi
acc=$(grep -v '^#' "$csv" | tail -n 1 | cut -d, -f13)
echo "accuracy:  the CNN after 3 epochs of batch 64 on the sample (1,600 train, 400 test" \
     "images): $(awk -v a="$acc" 'BEGIN { printf "%.1f %%", 100 * a }') (75 % or more passes)"
acc_ok=$(awk -v a="$acc" 'BEGIN { print (a >= 0.75) ? 0 : 1 }')

threads=${THREADS:-$(nproc)}
if ! "$bin/bench_cnn" --kernels im2col,auto --threads "$threads" --steps 10 --reps 3 \
        --data sample --csv "$csv" >"$log" 2>&1; then
    grep 'error:' "$log"
    echo "speed: no result: 0 % of peak"
    exit 1
fi
meta() { sed -n "s/^# $1: //p" "$csv" | head -n 1; }
echo "machine:   $(meta cpu), $(meta cores) cores, best ISA $(meta isa_best)"
grep -v '^#' "$csv" | awk -F, '
    $1 == "cnn" { s[$3] = $6; p[$3] = $9
        printf "%-7s %.3f s per epoch of 60,000 images on %d thread(s), %.1f %% of peak\n",
               $3 ":", $6, $4, $9 }
    END { if (s["auto"] > 0 && s["im2col"] > 0)
              printf "auto against im2col: %.2f times as fast\n", s["im2col"] / s["auto"]
          if (s["auto"] > 0) printf "performance score: %.1f %% of peak (the auto path)\n", p["auto"]
          else print "performance score: 0 % of peak (no result)" }'
[ "$tests_ok" -eq 0 ] && [ "$acc_ok" -eq 0 ]

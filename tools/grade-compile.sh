#!/bin/sh
# `make grade` in stage 09: the tests (through tools/grade.sh), then, in the
# release build, the test accuracy of the compiled MLP after three epochs on
# the committed sample, and an epoch's time compiled against the eager tape
# (784-256-10, batch 64, Adam), same run, same threads.
#   tools/grade-compile.sh MAKE STAGE KERNELS SIZE BUILD   (run from the stage directory)
. "$(dirname "$0")/grade-train.sh"

grade_accuracy "784-256-10 compiled, after 3 epochs on the sample (1,600 train, 400 test images)" \
    0.70 run_compiled --data sample --epochs 3 --seed 1 --threads 1

threads=${THREADS:-$(nproc)}
if ! "$bin/bench_compiled" --data sample --batches 64 --steps 30 --rounds 3 \
        --threads "$threads" --csv "$csv" >"$log" 2>&1; then
    grep 'error:' "$log"
    echo "speed: no result: 0 % of the eager tape's speed"
    exit 1
fi
echo "machine:   $(meta cpu), $(meta cores) cores, kernels on $(meta isa)"
grep -v '^#' "$csv" | awk -F, '
    $1 == "784-256-10" && $5 == 64 && ($3 == "eager" || $3 == "compiled") { s[$3] = $6
        printf "%-9s %.3f s per epoch of 60,000 images on %d thread(s)\n", $3 ":", $6, $4 }
    END { if (s["eager"] > 0 && s["compiled"] > 0)
              printf "performance score: %.1f %% of the eager tape'"'"'s time (its epoch time over yours)\n",
                     100 * s["eager"] / s["compiled"]
          else print "performance score: 0 % (no result)" }'
[ "$tests_ok" -eq 0 ] && [ "$acc_ok" -eq 0 ]

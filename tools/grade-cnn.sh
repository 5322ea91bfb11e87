#!/bin/sh
# `make grade` in stage 08: the tests (through tools/grade.sh), then, in the
# release build, the test accuracy of the CNN after three epochs on the
# committed sample, and an epoch's time (batch 256, Adam) on the auto conv
# path against the im2col one, same run, same threads, with the training
# step's share of the machine's FMA peak as the speed score.
#   tools/grade-cnn.sh MAKE STAGE KERNELS SIZE BUILD   (run from the stage directory)
. "$(dirname "$0")/grade-train.sh"

grade_accuracy "the CNN after 3 epochs of batch 64 on the sample (1,600 train, 400 test images)" \
    0.75 run_cnn --data sample --epochs 3 --batch 64 --seed 1 --threads 1

threads=${THREADS:-$(nproc)}
if ! "$bin/bench_cnn" --conv im2col,auto --threads "$threads" --steps 10 --reps 3 \
        --data sample --csv "$csv" >"$log" 2>&1; then
    grep 'error:' "$log"
    echo "speed: no result: 0 % of peak"
    exit 1
fi
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

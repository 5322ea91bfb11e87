#!/bin/sh
# `make grade` in stage 07: the tests (through tools/grade.sh), then, in the
# release build, the test accuracy after three epochs on the committed
# sample, and an epoch's time for 784-256-10, batch 64, Adam on the auto
# backend against the same steps on OpenBLAS, same run, same threads.
#   tools/grade-mlp.sh MAKE STAGE KERNELS SIZE BUILD   (run from the stage directory)
. "$(dirname "$0")/grade-train.sh"

grade_accuracy "784-256-10 after 3 epochs on the sample (1,600 train, 400 test images)" 0.70 \
    run_mlp --data sample --epochs 3 --seed 1 --threads 1

threads=${THREADS:-$(nproc)}
if ! "$bin/bench_mlp" --gemm auto,openblas --threads "$threads" --steps 30 --no-sweep \
        --csv "$csv" >"$log" 2>&1; then
    grep 'error:' "$log"
    echo "speed: no result: 0 % of OpenBLAS"
    exit 1
fi
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

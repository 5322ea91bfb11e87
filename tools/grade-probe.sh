#!/bin/sh
# One timing of the code a stage's tasks ask for, in the stage's release
# build: prints `seconds: S`, the time of the graded work (smaller is
# faster), or fails. tools/grade_platform.py runs it in turns on the
# student's tree and on the book's solution, and keeps the best of each.
#   tools/grade-probe.sh MAKE STAGE KERNELS SIZE   (run from the stage directory)
# What each stage times:
#   01-05  the graded kernels (GRADE_KERNELS) at n = GRADE_SIZE: the fastest
#   06     nothing (graded on its tests): exits 3
#   07     a training step of 784-256-10 (batch 64, Adam) on the auto backend:
#          the Linear layer, Adam and the step of tasks 7.1-7.3
#   08     a training step of the CNN with every convolution on im2col and no
#          pooling fused: im2col, col2im and the max-pool backward of 8.1-8.3
#   09     the steps of 784-256-10 compiled with every op a kernel of its own
#          (the compiled-unfused engine): each kernel is the generator's of
#          task 9.2, on the graph the rules of task 9.1 simplified (the fused
#          engine's kernels are mostly matmuls with their epilogues)
set -u
make="$1"; stage="$2"; kernels="$3"; size="$4"
root=$(cd ../.. && pwd)
bin="$root/build/stage-$stage"
threads=${THREADS:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
$make --no-print-directory build >"$out" 2>&1 || { tail -n 20 "$out" >&2; exit 1; }
case "$stage" in
    0[1-5])
        csv="$root/build/results/stage-$stage.csv"
        rm -f "$csv"
        $make --no-print-directory bench GRADE=1 SIZES="$size" KERNELS="$kernels" REPS=3 \
            THREADS="${THREADS:-}" >"$out" 2>&1 || { grep 'error:' "$out" >&2; exit 1; }
        awk -F, -v k=",$kernels," '!/^#/ && $1 != "kernel" {
                name = $1; sub(/-.*/, "", name)
                if (index(k, "," name ",") && (best == "" || $7 < best)) best = $7
            } END { if (best == "") exit 1; printf "seconds: %.9f\n", best }' "$csv"
        ;;
    07)
        "$bin/bench_mlp" --gemm auto --threads "$threads" --steps 20 --no-sweep \
            --data sample --csv "$out.csv" >"$out" 2>&1 || { grep 'error:' "$out" >&2; exit 1; }
        awk -F, '!/^#/ && $1 == "784-256-10" && $3 == "auto" && $5 == 64 { s = $6 }
                 END { if (s == "") exit 1; printf "seconds: %.9f\n", s }' "$out.csv"
        status=$?; rm -f "$out.csv"; exit $status
        ;;
    08)
        "$bin/bench_cnn" --im2col-step --data sample --batch 64 --steps 4 --reps 1 \
            --threads "$threads" >"$out" 2>&1 || { grep 'error:' "$out" >&2; exit 1; }
        sed -n 's/^im2col step.*: \([0-9.]*\) s$/seconds: \1/p' "$out"
        ;;
    09)
        # the generated kernels' cache of this tree, so two trees never share one
        LAZY_CACHE="$root/build/lazy-cache" "$bin/bench_compiled" --data sample --batches 64 \
            --steps 20 --rounds 1 --threads "$threads" --csv "$out.csv" >"$out" 2>&1 ||
            { grep 'error:' "$out" >&2; exit 1; }
        awk -F, '!/^#/ && $1 == "784-256-10" && $3 == "compiled-unfused" && $5 == 64 { s = $6 }
                 END { if (s == "") exit 1; printf "seconds: %.9f\n", s }' "$out.csv"
        status=$?; rm -f "$out.csv"; exit $status
        ;;
    *) exit 3 ;;
esac

# What the training stages' grading scripts (tools/grade-mlp.sh,
# tools/grade-cnn.sh) share, sourced by them with the arguments of
# tools/grade.sh (MAKE STAGE KERNELS SIZE BUILD), from the stage directory:
# the tests through tools/grade.sh (tests_ok), the release build, and the
# accuracy of a short training run (grade_accuracy).
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

# grade_accuracy WHAT PASS PROGRAM ARGS...: runs the training driver with
# --csv, prints the test accuracy after its last epoch and whether it
# reaches PASS (a fraction); acc_ok is 0 when it does. Exits when the run
# fails.
grade_accuracy() {
    what=$1; pass=$2; program=$3; shift 3
    if ! "$bin/$program" "$@" --csv "$csv" >"$log" 2>&1; then
        cat "$log"
        echo "accuracy: no result (the training run failed): 0 %"
        exit 1
    fi
    acc=$(grep -v '^#' "$csv" | tail -n 1 | cut -d, -f13)
    echo "accuracy:  $what: $(awk -v a="$acc" 'BEGIN { printf "%.1f %%", 100 * a }')" \
         "($(awk -v p="$pass" 'BEGIN { printf "%.0f", 100 * p }') % or more passes)"
    acc_ok=$(awk -v a="$acc" -v p="$pass" 'BEGIN { print (a >= p) ? 0 : 1 }')
}

# meta NAME: a '# NAME: value' line of the results file.
meta() { sed -n "s/^# $1: //p" "$csv" | head -n 1; }

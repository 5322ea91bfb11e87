#!/bin/sh
# A checkout moved after it was built runs as it is: the programs find the
# checkout from their own location (common/base/checkout.c), and nothing of
# where they were built is compiled in.
#
# Copies this checkout as `make` left it (its sources, and the objects and
# programs of stages 08 and 09 as far as they are built: what is missing or
# stale is built in the copy), moves the copy to another directory and runs
# there what a reader would: `make stage-08 bench QUICK=1` and
# `make stage-09 run EPOCHS=1`. The original stays where it is, so the
# programs are also checked to hold no string naming it. Then a program
# copied out of any checkout must stop with a clear error.
#
#   tools/check-moved.sh          from the repository's root (`make test`
#                                 runs it); about a minute on two cores once
#                                 `make` has built the stages
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/moved-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
fail() {
    echo "error: check-moved: $*" >&2
    exit 1
}

mkdir "$work/built"
tar -C "$root" --exclude=./build --exclude=./.git -cf - . | tar -C "$work/built" -xf -
# What `make` built, times kept, so that make in the copy rebuilds only what
# is stale; and the measured peaks and compiled kernels, which the copy
# would otherwise measure and compile again.
mkdir -p "$work/built/build/obj"
for f in "$root"/build/obj/*-release "$root/build/stage-08" "$root/build/stage-09" \
         "$root/build/lazy-cache" "$root/build/peak.csv"; do
    [ -e "$f" ] || continue
    case $f in
    */obj/*) cp -a "$f" "$work/built/build/obj/" ;;
    *) cp -a "$f" "$work/built/build/" ;;
    esac
done
jobs=$(nproc 2>/dev/null || echo 2)
make --no-print-directory -C "$work/built" -j"$jobs" stage-08 build > "$work/build.log" 2>&1 ||
    { tail -n 20 "$work/build.log" >&2; fail "the copy did not build stage 08"; }
make --no-print-directory -C "$work/built" -j"$jobs" stage-09 build >> "$work/build.log" 2>&1 ||
    { tail -n 20 "$work/build.log" >&2; fail "the copy did not build stage 09"; }
# A path compiled in lives among a program's constants.
for p in "$work"/built/build/stage-08/bench_cnn "$work"/built/build/stage-09/run_compiled; do
    objcopy -O binary --only-section=.rodata "$p" "$work/rodata" 2>/dev/null || continue
    if grep -q -a -F "$root" "$work/rodata"; then
        fail "$(basename "$p") holds the path of the checkout it was built in ($root)"
    fi
done

mv "$work/built" "$work/moved"
moved="$work/moved"
# The environment a reader's shell has: no data directory or cache of ours.
unset DATA_DIR LAZY_CACHE
(cd "$moved" && make --no-print-directory stage-08 bench QUICK=1) > "$work/bench.log" 2>&1 ||
    { tail -n 20 "$work/bench.log" >&2; fail "make stage-08 bench QUICK=1 failed in the moved copy"; }
(cd "$moved" && make --no-print-directory stage-09 run EPOCHS=1) > "$work/run.log" 2>&1 ||
    { tail -n 20 "$work/run.log" >&2; fail "make stage-09 run EPOCHS=1 failed in the moved copy"; }
for f in stage-08.csv stage-08-layers.csv stage-09-train.csv; do
    [ -s "$moved/build/results/$f" ] || fail "the moved copy wrote no build/results/$f"
done
# The data was read from the moved copy, not from where it was built.
grep -q "^# dataset_dir: $moved/" "$moved/build/results/stage-09-train.csv" ||
    fail "stage 09 read its data from elsewhere: $(grep '^# dataset_dir' "$moved/build/results/stage-09-train.csv")"

# Out of any checkout, a program says so and stops.
mkdir "$work/alone"
cp "$moved/build/stage-09/run_compiled" "$work/alone/"
if (cd "$work/alone" && ./run_compiled --data sample --epochs 1) > "$work/alone.log" 2>&1; then
    fail "a program outside any checkout ran without its data"
fi
grep -q "cannot find the checkout" "$work/alone.log" ||
    fail "a program outside any checkout did not say why it stopped: $(cat "$work/alone.log")"
echo "check-moved: a checkout moved after make runs stage 08's quick bench and stage 09's run"

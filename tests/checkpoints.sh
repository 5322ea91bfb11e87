#!/bin/sh
# Saves a checkpoint after one short epoch of every GEMM backend (the MLP of
# stage 07) and every convolution path (the CNN of stage 08), on 1 and 2
# threads and on the scalar and the widest ISA, into DIR. Run it before and
# after a change that should not move a bit, and compare the two folders
# (`cmp` each pair, or `diff -r`): same seed, same data, same flags give the
# same bits.
#
#   tests/checkpoints.sh DIR [BUILD]
#
# BUILD is the build folder holding stage-07/run_mlp and stage-08/run_cnn
# (build/ of this checkout by default; `make stage-07 build stage-08 build`
# makes them). The data is a small set cut from the committed sample (the
# first 256 training and 64 test images), so that every run takes seconds.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: tests/checkpoints.sh DIR [BUILD]}
build=${2:-$here/build}
mkdir -p "$out"
data=$out/tiny
mkdir -p "$data"
/usr/bin/python3 - "$here/datasets" "$data" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import idxio
src, dst = sys.argv[1] + "/sample", sys.argv[2]
for name, count in (("train", 256), ("t10k", 64)):
    dims, body = idxio.read(f"{src}/{name}-images-idx3-ubyte.gz")
    size = dims[1] * dims[2]
    idxio.write_gz(f"{dst}/{name}-images-idx3-ubyte.gz",
                   idxio.encode((count, dims[1], dims[2]), body[:count * size]))
    dims, body = idxio.read(f"{src}/{name}-labels-idx1-ubyte.gz")
    idxio.write_gz(f"{dst}/{name}-labels-idx1-ubyte.gz", idxio.encode((count,), body[:count]))
PY
# ISAS= names the instruction sets (the default: scalar and avx2).
isas=${ISAS:-scalar avx2}
export GEMM_STRASSEN_RULE=
run() { # name program flags...
    name=$1; shift
    "$@" --data "$data" --epochs 1 --batch 32 --seed 7 --save "$out/$name.ckpt" >"$out/$name.log" 2>&1 ||
        { echo "failed: $name"; cat "$out/$name.log"; exit 1; }
    echo "$name"
}
for isa in $isas; do
    for t in 1 2; do
        for g in naive tiled simd packed parallel auto openblas; do
            run "mlp-$g-$isa-t$t" "$build/stage-07/run_mlp" --gemm "$g" --isa "$isa" --threads "$t"
        done
        for c in auto im2col direct implicit winograd; do
            run "cnn-$c-$isa-t$t" "$build/stage-08/run_cnn" --conv "$c" --isa "$isa" --threads "$t"
        done
        for g in packed parallel openblas; do
            run "cnn-im2col-$g-$isa-t$t" "$build/stage-08/run_cnn" --conv im2col --gemm "$g" --isa "$isa" --threads "$t"
        done
        run "cnn-auto-arena-$isa-t$t" "$build/stage-08/run_cnn" --memory arena --isa "$isa" --threads "$t"
    done
done

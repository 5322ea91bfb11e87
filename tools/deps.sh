#!/bin/sh
# Checks that what a target needs is installed, installs what is missing on
# Debian/Ubuntu (apt-get as root, or through sudo), and otherwise prints the
# exact command to run and fails.
#
#   tools/deps.sh build|stage|test|all|cross|datasets|fuzz|compare|blas [quiet]
#
# quiet: print nothing when everything is there (the per-stage check).
#
# build: compile and benchmark; stage: + Criterion, a stage's own tests (what
# a kit's build, tests and grade need, and no more: a grading machine has no
# pandoc); test: + pandoc for the book check;
# all: + gnuplot, pandoc and weasyprint for plots and the book;
# cross: the AArch64 cross compiler and qemu, to build and test the NEON code,
# and SIMDe, to test the AVX-512 code on a CPU without it;
# datasets: Fashion-MNIST; fuzz: clang's libFuzzer, for `make fuzz-idx`;
# compare: PyTorch, the peer of `make stage-07 compare` and `stage-08
# compare`, and the two mallocs a PyTorch user preloads to speed it up;
# NumPy, whose float32 matmul `make stage-05 preload` runs on each BLAS;
# blas: netlib's BLAS tester, the standard `make blas-check` holds the
# book's BLAS (build/lib/libmmblas.so) to.
set -u

want="${1:-all}"
quiet="${2:-}"

# "package:command-or-file" pairs; the second part is what we probe for.
build="gcc:gcc make:make pkg-config:pkg-config libopenblas-dev:openblas_config.h python3:python3 zlib1g-dev:/usr/include/zlib.h"
criterion="libcriterion-dev:/usr/include/criterion/criterion.h"
test="$criterion pandoc:pandoc"
book="gnuplot-nox:gnuplot pandoc:pandoc weasyprint:weasyprint"
cross="gcc-aarch64-linux-gnu:aarch64-linux-gnu-gcc qemu-user:qemu-aarch64 libsimde-dev:/usr/include/simde/x86/avx512.h"
datasets="dataset-fashion-mnist:/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
fuzz="clang:clang libclang-rt-14-dev:libfuzzer"
compare="python3-torch:/usr/lib/python3/dist-packages/torch/__init__.py libtcmalloc-minimal4:libtcmalloc_minimal.so.4 libjemalloc2:libjemalloc.so.2 python3-numpy:/usr/lib/python3/dist-packages/numpy/__init__.py"
blas="libblas-test:blas/xblat3s"

case "$want" in
build) list="$build" ;;
stage) list="$build $criterion" ;;
test) list="$build $test" ;;
all) list="$build $test $book" ;;
cross) list="$cross" ;;
datasets) list="$datasets" ;;
fuzz) list="$fuzz" ;;
compare) list="$compare" ;;
blas) list="$blas" ;;
*) echo "usage: tools/deps.sh build|stage|test|all|cross|datasets|fuzz|compare|blas" >&2; exit 2 ;;
esac

# OpenBLAS's headers live under the target triplet on Debian; netlib's
# libblas-dev ships a cblas.h there too, so probe for OpenBLAS's own header.
# The mallocs live under the same triplet in /usr/lib.
triplet=$(gcc -dumpmachine 2>/dev/null || echo unknown)
triplet_include="/usr/include/$triplet"

have() {
    case "$1" in
    openblas_config.h) [ -e "$triplet_include/$1" ] || [ -e "/usr/include/openblas/$1" ] || [ -e "/usr/include/$1" ] ;;
    libfuzzer) set -- /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a; [ -e "$1" ] ;;
    *.so.*|blas/*) [ -e "/usr/lib/$triplet/$1" ] || [ -e "/usr/lib/$1" ] ;;
    /*) [ -e "$1" ] ;;
    *) command -v "$1" >/dev/null 2>&1 ;;
    esac
}

missing=""
seen=""
for pair in $list; do
    pkg="${pair%%:*}"
    probe="${pair#*:}"
    case " $seen " in *" $pkg "*) continue ;; esac
    seen="$seen $pkg"
    if have "$probe"; then
        [ -n "$quiet" ] || printf '  \342\234\223 %s\n' "$pkg"
    else
        printf '  \342\234\227 %s (no %s)\n' "$pkg" "$probe"
        missing="$missing $pkg"
    fi
done

[ -z "$missing" ] && exit 0

line="apt-get install -y$missing"
if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: missing:$missing; this is not a Debian-like system, install them with your package manager" >&2
    exit 1
fi
if [ "$(id -u)" = 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo"
else
    echo "error: missing:$missing" >&2
    echo "run:   sudo apt-get update && sudo $line" >&2
    exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null || true
# shellcheck disable=SC2086
if ! $sudo apt-get install -y -q $missing >/dev/null; then
    echo "error: apt-get could not install:$missing" >&2
    echo "run:   sudo apt-get update && sudo $line" >&2
    exit 1
fi
for pkg in $missing; do printf '  \342\234\223 %s (installed)\n' "$pkg"; done

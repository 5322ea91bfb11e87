#!/bin/sh
# Cross-builds the NEON test driver (tests/neon/test_neon.c) for AArch64 and
# runs it under qemu-aarch64, when both tools are installed; `make test`
# calls it. The driver's last line is "N passed, M failed".
#   tools/test-neon.sh
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cc=aarch64-linux-gnu-gcc
if ! command -v "$cc" >/dev/null 2>&1 || ! command -v qemu-aarch64 >/dev/null 2>&1; then
    echo "NEON tests skipped: aarch64-linux-gnu-gcc or qemu-aarch64 not installed" \
         "(apt-get install gcc-aarch64-linux-gnu qemu-user)"
    exit 0
fi

# The driver and what it tests. More NEON code: add its sources here and a
# row to the kernel table in tests/neon/test_neon.c.
SRCS="tests/neon/test_neon.c
      common/base/mat.c common/base/cpu.c
      common/loops/naive.c common/loops/simd.c common/loops/simd_scalar.c common/loops/simd_neon.c
      common/loops/simd_avx2.c common/loops/simd_avx512.c stages/03_simd/autovec_neon.c
      common/gemm/gemm.c common/gemm/gemm_small.c common/gemm/gemm_packed.c common/gemm/gemm_parallel.c
      common/gemm/gemm_pack.c common/gemm/gemm_macro.c common/gemm/gemm_operand.c
      common/gemm/gemm_kernel.c common/gemm/gemm_blocking.c
      common/gemm/gemm_strassen.c common/gemm/gemm_strassen_fused.c common/gemm/gemm_strassen_rule.c
      common/gemm/gemm_kernel_scalar.c common/gemm/gemm_kernel_neon.c
      common/gemm/gemm_kernel_avx2.c common/gemm/gemm_kernel_avx512.c
      common/autograd/vec.c common/autograd/vec_neon.c common/autograd/tensor.c common/autograd/arena.c
      common/nn/optim.c common/nn/optim_neon.c
      common/conv/conv_direct.c common/conv/conv_direct_neon.c common/conv/pool_row.c common/conv/pool_neon.c
      common/conv/conv_implicit.c common/conv/conv_implicit_scalar.c common/conv/conv_implicit_neon.c
      common/conv/conv_winograd.c common/conv/conv_winograd_scalar.c common/conv/conv_winograd_avx2.c
      common/conv/im2col.c"
INCLUDES="-I$root/common/base -I$root/common/loops -I$root/common/gemm -I$root/common/autograd
          -I$root/common/nn -I$root/common/conv -I$root/common/cli -I$root/stages/03_simd"
CFLAGS="-std=c17 -O2 -g -fopenmp -Wall -Wextra -Wpedantic -Werror"

out=$root/build/neon
mkdir -p "$out"
objs=""
for src in $SRCS; do
    obj=$out/$(echo "$src" | tr / _ | sed 's/\.c$/.o/')
    # The autovec kernels are built as the stage builds them (see its Makefile).
    extra=""
    case "$src" in */autovec_*) extra="-O3 -ffp-contract=fast" ;; common/loops/simd*) extra="-O3" ;; esac
    # shellcheck disable=SC2086
    $cc $CFLAGS $extra $INCLUDES -c "$root/$src" -o "$obj" || {
        echo "error: test-neon.sh: $src does not build for AArch64" >&2; exit 1; }
    objs="$objs $obj"
done
# Static, so qemu needs no AArch64 libraries at run time.
# shellcheck disable=SC2086
# (Static libgomp warns that it would need glibc's dlopen at run time for
# OpenACC profiling, which we never use: the link log is shown only on failure.)
$cc -static -fopenmp $objs -lm -o "$out/test_neon" 2>"$out/link.log" || {
    cat "$out/link.log" >&2
    echo "error: test-neon.sh: linking the NEON test driver failed" >&2; exit 1; }
echo "running the NEON tests under qemu-aarch64"
qemu-aarch64 "$out/test_neon"

#!/bin/sh
# Checks that the GEMM library is laid out in layers: each file of
# common/gemm/ calls only functions defined in files of a lower layer (or in
# itself), so no path calls a sibling and nothing calls back up.
#
#   tools/check-layers.sh OBJDIR     OBJDIR holds the objects of common/gemm/
#
# The layers, top to bottom (a file not listed is an error, so a new file
# must be given its place):
set -u
layers="gemm_flags
gemm_backend
gemm
gemm_strassen
gemm_small gemm_packed gemm_parallel gemm_strassen_fused
gemm_pack gemm_macro gemm_operand
gemm_kernel
gemm_blocking gemm_strassen_rule
gemm_kernel_scalar gemm_kernel_avx2 gemm_kernel_avx512 gemm_kernel_neon"

dir="${1:?usage: tools/check-layers.sh OBJDIR}"
command -v nm >/dev/null 2>&1 || { echo "error: check-layers: nm not found (apt-get install binutils)" >&2; exit 1; }

level_of() {
    echo "$layers" | awk -v f="$1" '{ for (i = 1; i <= NF; i++) if ($i == f) print NR }'
}

status=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# Which file defines each global function.
for obj in "$dir"/gemm*.o; do
    [ -e "$obj" ] || { echo "error: check-layers: no objects in $dir" >&2; exit 1; }
    f=$(basename "$obj" .o)
    if [ -z "$(level_of "$f")" ]; then
        echo "error: check-layers: common/gemm/$f.c has no layer in tools/check-layers.sh" >&2
        status=1
    fi
    nm --defined-only -g "$obj" | awk -v f="$f" '$2 == "T" { print $3, f }' >> "$tmp"
done
for obj in "$dir"/gemm*.o; do
    f=$(basename "$obj" .o)
    mine=$(level_of "$f")
    [ -n "$mine" ] || continue
    for sym in $(nm -u "$obj" | awk '{ print $2 }'); do
        to=$(awk -v s="$sym" '$1 == s { print $2 }' "$tmp")
        [ -n "$to" ] || continue   # outside the GEMM library
        theirs=$(level_of "$to")
        if [ "$theirs" -le "$mine" ]; then
            echo "error: check-layers: $f.c calls $sym() of $to.c, which is not in a lower layer" >&2
            status=1
        fi
    done
done
[ $status = 0 ] && echo "check-layers: common/gemm/ calls only downwards ($(echo "$layers" | wc -l) layers)"
exit $status

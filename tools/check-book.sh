#!/bin/sh
# check-book.sh: run the book filter over markdown files without building
# anything, so a missing listing, source file, CSV, row or plot source is
# found in seconds.
#
#   tools/check-book.sh FILE...            check each file on its own
#   tools/check-book.sh --book [BOOK.md]   check BOOK.md (default book.md) and
#                                          every chapter its `chapters:` list names
#   tools/check-book.sh --chapters [BOOK.md]
#                                          print that chapter list, one a line
#
# Paths inside the files are taken relative to the repository root (this
# script's parent directory), or to $BOOK_ROOT when set. Plots need not be
# built: build/plots/stage-NN.svg only needs plots/data/stage-NN.csv.
# Exit status: 0 when everything resolves, 1 on any problem, 2 on bad usage.
set -eu

usage() {
    echo "usage: tools/check-book.sh FILE... | --book [BOOK.md] | --chapters [BOOK.md]" >&2
    exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
BOOK_ROOT=${BOOK_ROOT:-$(cd "$here/.." && pwd)}
export BOOK_ROOT
filter=$here/book.lua
PANDOC=${PANDOC:-pandoc}

command -v "$PANDOC" >/dev/null 2>&1 || {
    echo "error: check-book: pandoc not found (apt-get install pandoc)" >&2
    exit 1
}

# The `chapters:` list of a book.md, read by pandoc itself (so any YAML
# list form works), one path a line.
list_chapters() {
    book=$1
    if [ ! -r "$book" ]; then
        echo "error: check-book: cannot read $book" >&2
        return 1
    fi
    tpl=$(mktemp "${TMPDIR:-/tmp}/chapters.XXXXXX")
    printf '$for(chapters)$\n$chapters$\n$endfor$\n' > "$tpl"
    if ! "$PANDOC" -f markdown-smart -t plain --wrap=none --template="$tpl" "$book" \
            > "$tpl.out"; then
        rm -f "$tpl" "$tpl.out"
        echo "error: check-book: pandoc could not read $book" >&2
        return 1
    fi
    status=0
    n=0
    while IFS= read -r ch; do
        [ -n "$ch" ] || continue
        n=$((n + 1))
        case $ch in
            /*) path=$ch ;;
            *) path=$BOOK_ROOT/$ch ;;
        esac
        if [ ! -f "$path" ]; then
            echo "error: check-book: $book lists chapter '$ch', which does not exist" >&2
            status=1
        fi
        printf '%s\n' "$ch"
    done < "$tpl.out"
    rm -f "$tpl" "$tpl.out"
    if [ "$n" -eq 0 ]; then
        echo "error: check-book: $book has no 'chapters:' list in its YAML metadata" >&2
        return 1
    fi
    return $status
}

check_files() {
    failed=0
    total=0
    for f in "$@"; do
        total=$((total + 1))
        if [ ! -r "$f" ]; then
            echo "check-book: $f: cannot read file" >&2
            failed=$((failed + 1))
            continue
        fi
        if ! "$PANDOC" -f markdown -t native -o /dev/null --lua-filter="$filter" \
                -M book-check=true "$f"; then
            echo "check-book: $f: FAILED" >&2
            failed=$((failed + 1))
        fi
    done
    if [ "$failed" -ne 0 ]; then
        echo "check-book: $failed of $total file(s) failed" >&2
        return 1
    fi
    echo "check-book: $total file(s) OK"
}

[ $# -ge 1 ] || usage
case $1 in
    --chapters)
        [ $# -le 2 ] || usage
        list_chapters "${2:-book.md}"
        ;;
    --book)
        [ $# -le 2 ] || usage
        book=${2:-book.md}
        chapters=$(list_chapters "$book") || exit 1
        # chapter paths are relative to the root; the files to check are
        # opened from the current directory
        set -- "$book"
        here_is_root=0
        [ "$(pwd -P)" = "$(cd "$BOOK_ROOT" && pwd -P)" ] && here_is_root=1
        for ch in $chapters; do
            case $ch in
                /*) set -- "$@" "$ch" ;;
                *) if [ $here_is_root = 1 ]; then set -- "$@" "$ch"; else set -- "$@" "$BOOK_ROOT/$ch"; fi ;;
            esac
        done
        check_files "$@"
        ;;
    -h|--help) usage ;;
    -*) echo "error: check-book: unknown option $1" >&2; usage ;;
    *) check_files "$@" ;;
esac

#!/bin/sh
# check-book.sh: run the book filter over markdown files without building
# anything, so a missing listing, source file, CSV, row or plot source is
# found in seconds.
#
#   tools/check-book.sh FILE...            check each file on its own
#   tools/check-book.sh --book [BOOK.md]   check BOOK.md (default book.md) and
#                                          every chapter its `chapters:` list names,
#                                          then print listing coverage: for each
#                                          source file of common/ and stages/ (and
#                                          any other file a listing shows), how
#                                          many of its lines the book shows; and
#                                          check that every function on gemm()'s
#                                          path (tools/gemm-path.txt) is shown or named
#   tools/check-book.sh --student [BOOK.md]
#                                          build the student edition of BOOK.md
#                                          (no plots needed) and check that it
#                                          holds no task's answer (tools/kit-check.py --book)
#   tools/check-book.sh --provenance [BOOK.md]
#                                          check that every results file BOOK.md and
#                                          its chapters quote was measured with the
#                                          compiler BOOK.md's `reference:` header
#                                          names, all in one run of make reference
#                                          (one '# run_id:'; two is an error), on one
#                                          machine, after the last change to the code
#                                          it measures (its '# commit:', else its
#                                          date, against git log of its stage and
#                                          common/); STRICT=1 makes a file without a
#                                          run id, from another machine or stale an
#                                          error, else a warning
#   tools/check-book.sh --chapters [BOOK.md]
#                                          print that chapter list, one a line
#   tools/check-book.sh --words [BOOK.md]  print each chapter's prose word count and
#                                          fail when one is above $BOOK_MAX_WORDS
#                                          (default 6000)
#
# Paths inside the files are taken relative to the repository root (this
# script's parent directory), or to $BOOK_ROOT when set. Plots need not be
# built: build/plots/stage-NN.svg only needs plots/data/stage-NN.csv.
# Exit status: 0 when everything resolves, 1 on any problem, 2 on bad usage.
set -eu

usage() {
    echo "usage: tools/check-book.sh FILE... | --book [BOOK.md] | --student [BOOK.md] |" \
         "--provenance [BOOK.md] | --chapters [BOOK.md] | --words [BOOK.md]" >&2
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

# Listing coverage: of each source file's lines (not blank, not a marker),
# how many some listing shows. Files of common/ and stages/ that no listing
# shows are listed too, at 0.
coverage() {
    (cd "$BOOK_ROOT" && ls common/*/*.[ch] stages/*/*.[ch] 2>/dev/null) |
    awk -F'\t' -v root="$BOOK_ROOT" '
        function lines_of(f,    line, n, path) {
            n = 0; path = root "/" f
            while ((getline line < path) > 0)
                if (line ~ /[^ \t]/ && line !~ /^[ \t]*(\/\/|#)[ \t]*(listing:|end listing|BEGIN SOLUTION|END SOLUTION|stub:|earlier kits:|in the kit:)/) n++
            close(path)
            return n
        }
        FILENAME == "-" { files[$0] = 1; next }
        { if (!(($1, $2) in seen)) { seen[$1, $2] = 1; shown[$1]++ }; files[$1] = 1 }
        END {
            n = 0
            for (f in files) list[++n] = f
            for (a = 1; a <= n; a++) for (b = a + 1; b <= n; b++)
                if (list[b] < list[a]) { t = list[a]; list[a] = list[b]; list[b] = t }
            print "listing coverage (lines the book shows, of lines that are not blank):"
            for (a = 1; a <= n; a++) {
                f = list[a]; total = lines_of(f); s = shown[f] + 0
                printf "  %5d / %5d  %5.1f %%  %s\n", s, total, total ? 100 * s / total : 0, f
                if (f ~ /^(common|stages)\/.*\.[ch]$/) { all_s += s; all_t += total }
            }
            printf "  %5d / %5d  %5.1f %%  all of common/ and stages/ (.c and .h)\n", \
                all_s, all_t, all_t ? 100 * all_s / all_t : 0
        }' - "$BOOK_COVERAGE"
}

# Every function on gemm()'s path (tools/gemm-path.txt: FILE FUNCTION a
# line) is shown or named: its definition starts inside a listing the book
# includes, or a chapter names it in code style (`name` or `name()`) and
# says why it is left out. Reports the count, fails on any that is neither.
# GEMM_PATH_LIST names another list (the tests use one).
path_check() {
    list=${GEMM_PATH_LIST:-$BOOK_ROOT/tools/gemm-path.txt}
    [ -r "$list" ] || return 0
    n_shown=0 n_named=0 missing=0
    while read -r file fn; do
        case $file in ''|'#'*) continue ;; esac
        if [ ! -r "$BOOK_ROOT/$file" ]; then
            echo "error: check-book: tools/gemm-path.txt: no file $file" >&2
            missing=$((missing + 1)); continue
        fi
        # the definition: a line that starts at column 0 and is no prototype
        def=$(grep -n -E "^[A-Za-z_].*[ *]$fn\(" "$BOOK_ROOT/$file" | grep -v ';[[:space:]]*$' |
              head -n 1 | cut -d: -f1)
        if [ -z "$def" ]; then
            echo "error: check-book: tools/gemm-path.txt: $file defines no $fn" >&2
            missing=$((missing + 1)); continue
        fi
        if grep -q -x -F "$(printf '%s\t%s' "$file" "$def")" "$BOOK_COVERAGE"; then
            n_shown=$((n_shown + 1))
        elif grep -q -F -e "\`$fn\`" -e "\`$fn()\`" "$@"; then
            n_named=$((n_named + 1))
        else
            echo "error: check-book: $fn ($file) is on gemm()'s path, but no listing shows it" \
                 "and no chapter names it (\`$fn\`) to say why it is left out" >&2
            missing=$((missing + 1))
        fi
    done < "$list"
    echo "gemm() path (${list#"$BOOK_ROOT"/}): $n_shown functions shown in listings," \
         "$n_named named and left out, $missing neither"
    [ "$missing" -eq 0 ]
}

# Prose words of each file: words split on blanks, leaving out fenced code
# blocks (``` or ~~~), indented code (a line that starts with four spaces or
# a tab) and attributes such as the {.result ...} of a number the filter
# fills in (the number itself, an empty [] in the source, counts as one).
# Prints "WORDS FILE" a line.
prose_words() {
    awk '
        function flush() { if (name != "") print n, name }
        FNR == 1 { flush(); name = FILENAME; n = 0; fence = 0; inattr = 0 }
        /^[ \t]*(```|~~~)/ { fence = !fence; next }
        fence { next }
        /^(    |\t)/ { next }
        {
            line = $0
            if (inattr) {
                if (!sub(/^[^}]*\}/, "", line)) next
                inattr = 0
            }
            gsub(/\{\.[^}]*\}/, "", line)
            if (match(line, /\{\.[^}]*$/)) { line = substr(line, 1, RSTART - 1); inattr = 1 }
            n += split(line, w, /[ \t]+/) - (line ~ /^[ \t]/) - (line ~ /[ \t]$/)
        }
        END { flush() }' "$@"
}

[ $# -ge 1 ] || usage

# The preface's map of the tasks (the table whose columns include "Tasks";
# a row's stage is the stages/NN_ directory it names, its chapters may be
# two) lists each task the code holds, a `BEGIN SOLUTION task N.M` region, and no
# other: the map is what an instructor reads to plan a course.
task_map_check() {
    preface="$BOOK_ROOT/chapters/00-preface.md"
    [ -r "$preface" ] || return 0
    code=$(cd "$BOOK_ROOT" && grep -rhoE 'BEGIN SOLUTION task [0-9]+\.[0-9]+' common stages |
           sed 's/.*task //' | sort -u)
    map=$(awk -F'|' '/^\| *Ch\. *\|/ { for (i = 2; i < NF; i++) if ($i ~ /Tasks/) col = i; next }
                     col && /^\| *[0-9, ]+ *\|/ && match($0, /stages\/[0-9][0-9]_/) {
                         ch = substr($0, RSTART + 7, 2) + 0; t = $col
                         while (match(t, /(^|[^0-9.])[0-9]+\.[0-9]+/)) {
                             id = substr(t, RSTART, RLENGTH); sub(/^[^0-9]/, "", id)
                             if (id + 0 == ch || id ~ ("^" ch "\\.")) print id
                             t = substr(t, RSTART + RLENGTH) } }
                     col && !/^\|/ { col = 0 }' "$preface" | sort -u)
    bad=0
    for t in $code; do
        printf '%s\n' "$map" | grep -qxF "$t" ||
            { echo "check-book: the preface's task map does not list task $t, which the code holds" >&2; bad=1; }
    done
    for t in $map; do
        printf '%s\n' "$code" | grep -qxF "$t" ||
            { echo "check-book: the preface's task map lists task $t, which no solution region holds" >&2; bad=1; }
    done
    [ $bad -eq 0 ] && echo "check-book: the preface's task map lists the $(printf '%s\n' "$code" | wc -l) tasks of the code"
    return $bad
}

case $1 in
    --words)
        [ $# -le 2 ] || usage
        book=${2:-book.md}
        chapters=$(list_chapters "$book") || exit 1
        max=${BOOK_MAX_WORDS:-6000}
        # shellcheck disable=SC2086
        (cd "$BOOK_ROOT" && prose_words $chapters) | awk -v max="$max" '
            {
                note = ""
                if ($1 + 0 > max + 0) { note = "  (above " max ")"; over++ }
                printf "  %6d  %s%s\n", $1, $2, note
            }
            END {
                if (over) { printf "check-book: %d chapter(s) above %d words of prose\n", over, max > "/dev/stderr"; exit 1 }
                print "check-book: every chapter at or under " max " words of prose"
            }' || exit 1
        ;;
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
        BOOK_COVERAGE=$(mktemp "${TMPDIR:-/tmp}/coverage.XXXXXX")
        export BOOK_COVERAGE
        trap 'rm -f "$BOOK_COVERAGE"' EXIT
        check_files "$@" || exit 1
        coverage
        path_check "$@" || exit 1
        task_map_check || exit 1
        ;;
    --student)
        [ $# -le 2 ] || usage
        book=${2:-book.md}
        chapters=$(list_chapters "$book") || exit 1
        out=$(mktemp "${TMPDIR:-/tmp}/student.XXXXXX")
        trap 'rm -f "$out"' EXIT
        # shellcheck disable=SC2086
        (cd "$BOOK_ROOT" && "$PANDOC" -f markdown -t html5 --lua-filter="$filter" \
            -M book-check=true -M book-edition=student -M book-provenance=off \
            -o "$out" "$book" $chapters) || {
            echo "check-book: the student edition of $book did not build" >&2
            exit 1
        }
        python3 "$here/kit-check.py" --book "$out" >/dev/null || {
            echo "check-book: the student edition of $book holds answers (above)" >&2
            exit 1
        }
        echo "check-book: the student edition of $book holds no task's answer"
        ;;
    --provenance)
        [ $# -le 2 ] || usage
        book=${2:-book.md}
        chapters=$(list_chapters "$book") || exit 1
        # one run over the book and its chapters, so the filter sees the header
        # shellcheck disable=SC2086
        # STRICT=1: a file from no reference run, from another machine, or
        # stale is an error, not a warning (two run ids always are)
        runs=warn
        [ "${STRICT:-0}" = 0 ] || [ -z "${STRICT:-}" ] || runs=error
        if ! (cd "$BOOK_ROOT" && "$PANDOC" -f markdown -t native -o /dev/null \
                --lua-filter="$filter" -M book-check=true -M book-provenance=error \
                -M book-runs=$runs "$book" $chapters); then
            echo "check-book: results the book quotes come from another compiler or machine" \
                 "than $book's reference: header names, from more than one run, or are stale" \
                 "(above)" >&2
            exit 1
        fi
        echo "check-book: every results file $book quotes comes from its compiler" \
             "(runs and staleness: above)"
        ;;
    -h|--help) usage ;;
    -*) echo "error: check-book: unknown option $1" >&2; usage ;;
    *) check_files "$@" ;;
esac

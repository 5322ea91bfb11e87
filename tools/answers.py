"""What it means for a kit, or for the student edition of the book, to hold
the answer to a task. tools/kit-check.py applies these rules.

A task's answer is the code of its solution regions (`// BEGIN SOLUTION task
N.M` ... `// END SOLUTION`), stub lines left out. Code is read as C tokens:
comments and preprocessor lines apart; `const`, `static`, `restrict` and the
like dropped (they do not change what a statement does); cut into statements
at `;`, at braces and after the heads of `for`, `if`, `while` and `switch`; a
declaration of several names (`int a = 1, b = 2;`) is one statement per name.
A statement *modulo names* has its identifiers numbered by first appearance
within it, its numbers and strings made alike, and the type names (`int`,
`long`, `float`, ...) made alike: `out[k] += m[k] > 0.0f ? g[k] : 0.0f` and
`g[j] += o[j] > 0 ? d[j] : 0` are one statement.

An *idiom* is a statement that, modulo names, appears in IDIOM or more of the
repository's functions outside the solution regions: a loop over 0..n,
`float *dx = tape_grad(t, x);` and its error check. A bounds check (an `if`
or `while` that only compares names and numbers, `if (iy < 0 || iy >= h)`)
says where, not what. Knowing either gives nothing away; the rules skip them.

The rules; each finding names the task, where, and what matched:

  copied    Of the answer's statements that are no idiom, half or more (by
            tokens) appear modulo names outside the answer, wherever: the
            answer is there to assemble (task 7.1's backward was task 6.1's
            GEMMs plus a bias's column sums).
  key line  A statement of the answer, no idiom, of KEY_TOKENS tokens or more,
            appears word for word, names kept, in code, in a comment or in any
            other text (task 6.4's reverse walk in another loop of tape.c; task
            8.3's line in the comment above it). In a kit, a statement that is
            also part of an earlier task's answer is the student's own work
            (task 5.1 shares the five loops of 4.3): it does not count.
  helper    The answer is one statement calling a function of this stage's files
            whose body the kit ships and that is no answer to write itself
            (task 6.2 was one call of vec.c's loop): the helper is the answer.
"""
import html
import os
import re
import zipfile

import make_assignment as kits

IDIOM = 5
KEY_TOKENS = 7
COPIED_SHARE = 0.5

TOKEN = re.compile(r"""
  (?P<comment>//[^\n]*|/\*.*?\*/)
 |(?P<pp>^[ \t]*\#(?:[^\n\\]|\\.)*)
 |(?P<str>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
 |(?P<num>0[xX][0-9a-fA-F]+[uUlL]*|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFuUlL]*)
 |(?P<id>[A-Za-z_]\w*)
 |(?P<op>->|\+\+|--|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=|[][(){};,.?:~!+\-*/%&|^=<>])
 |(?P<ws>\s+)
 |(?P<other>.)
""", re.X | re.S | re.M)

# Words that change nothing a statement does.
QUALIFIERS = {"const", "static", "inline", "restrict", "volatile", "register", "extern"}
# Type names: alike modulo names, and what starts a declaration.
TYPES = {"int", "long", "float", "double", "char", "short", "unsigned", "signed", "void",
         "size_t", "_Bool", "bool", "int64_t", "uint64_t", "int32_t", "uint32_t", "uint8_t"}
KEYWORDS = {"for", "while", "do", "if", "else", "return", "break", "continue", "switch",
            "case", "default", "sizeof", "struct", "enum", "union", "goto", "typedef"}
HEADS = {"for", "while", "if", "switch"}
# What a bounds check is made of, besides names and numbers.
GUARD_WORDS = {"(", ")", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "!"}
# Statements that say nothing of their own.
TRIVIAL = {("return",), ("continue",), ("break",), ("else",), ("do",), ()}


class Token:
    __slots__ = ("kind", "text", "line")

    def __init__(self, kind, text, line):
        self.kind, self.text, self.line = kind, text, line


def tokenize(text):
    """The C tokens of text (qualifiers dropped) and its comments, each
    comment as (line, its text without the comment marks)."""
    tokens, comments, line = [], [], 1
    for m in TOKEN.finditer(text):
        kind, s = m.lastgroup, m.group()
        if kind == "comment":
            body = s[2:-2] if s.startswith("/*") else s[2:]
            comments.append((line, body))
        elif kind == "id":
            if s not in QUALIFIERS:
                tokens.append(Token("kw" if s in KEYWORDS else "id", s, line))
        elif kind in ("str", "num", "op", "other"):
            tokens.append(Token(kind, s, line))
        line += s.count("\n")
    return tokens, comments


class Statement:
    __slots__ = ("exact", "norm", "line")

    def __init__(self, toks):
        toks = [t for t in toks if t.text != ";"]
        self.exact = tuple(t.text for t in toks)
        self.line = toks[0].line if toks else 0
        names, norm = {}, []
        for t in toks:
            if t.kind == "id":
                norm.append("T" if t.text in TYPES else "I%d" % names.setdefault(t.text,
                                                                                 len(names)))
            elif t.kind in ("num", "str"):
                norm.append("N")
            else:
                norm.append(t.text)
        self.norm = tuple(norm)

    def trivial(self):
        return self.exact in TRIVIAL

    def guard(self):
        """An `if` or `while` whose condition only compares names and numbers:
        a bounds check says where, not what."""
        return (len(self.exact) > 2 and self.exact[0] in ("if", "while")
                and all(t in GUARD_WORDS or k in ("I", "T", "N") or k.startswith("I")
                        for t, k in zip(self.exact[1:], self.norm[1:])))


def split_declaration(toks):
    """`int a = 1, b = 2` as `int a = 1` and `int b = 2`; anything else whole."""
    if not toks or toks[0].text not in TYPES:
        return [toks]
    head = []
    for t in toks:
        if t.text in TYPES:
            head.append(t)
        else:
            break
    parts, cur, depth = [], [], 0
    for t in toks:
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            depth -= 1
        if t.text == "," and depth == 0:
            parts.append(cur)
            cur = list(head)
        else:
            cur.append(t)
    parts.append(cur)
    return parts


def matching(tokens, i, step=1):
    """The index of the parenthesis that closes (step 1) or opens (step -1)
    the one at i; len(tokens) or -1 if none does."""
    depth = 0
    while 0 <= i < len(tokens):
        depth += {"(": step, ")": -step}.get(tokens[i].text, 0)
        if depth == 0:
            return i
        i += step
    return i


def statements(tokens):
    """The statements of a run of tokens, trivial ones left out."""
    out, cur, i, n, depth = [], [], 0, len(tokens), 0

    def flush():
        if cur:
            for part in split_declaration(cur):
                s = Statement(part)
                if not s.trivial():
                    out.append(s)
        cur.clear()

    while i < n:
        t = tokens[i]
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        if t.text in ("{", "}") and depth <= 0:
            depth = 0
            flush()
        elif t.text in HEADS and not cur:
            j = matching(tokens, i + 1)
            cur.extend(tokens[i:j + 1])
            flush()
            i = j
        elif t.text == "else" and not cur:
            pass
        else:
            cur.append(t)
            if t.text == ";":
                flush()
        i += 1
    flush()
    return out


def functions(tokens):
    """(name, first token index, last token index) of each function definition."""
    found, depth, start = [], 0, None
    for i, t in enumerate(tokens):
        if t.text == "{":
            if depth == 0 and i > 0 and tokens[i - 1].text == ")":
                j = matching(tokens, i - 1, -1)
                if j > 0 and tokens[j - 1].kind == "id":
                    start = (tokens[j - 1].text, i)
            depth += 1
        elif t.text == "}":
            depth -= 1
            if depth == 0 and start:
                found.append((start[0], start[1], i))
                start = None
    return found


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return None


def without_regions(text, path):
    """text with every solution region's lines blanked (line numbers kept)."""
    lines = text.split("\n")
    for start, end, *_ in kits.regions(lines, path):
        for i in range(start, end + 1):
            lines[i] = ""
    return "\n".join(lines)


class Answer:
    """One solution region: its task, where it is, and its statements."""

    def __init__(self, task, path, line, body):
        self.task, self.path, self.line = task, path, line
        self.stage = int(task.split(".")[0])
        self.text = "\n".join(body)
        self.statements = statements(tokenize(self.text)[0])


def source_files(root):
    for top in ("common", "stages", "tests"):
        for rel in kits.all_files(root, top):
            if rel.endswith(kits.SOURCE_ENDINGS) and not rel.startswith("tests/book/") \
                    and not rel.startswith("tests/kit/"):
                yield rel


def answers(root):
    """Every solution region of the repository, in file order."""
    found = []
    for rel in source_files(root):
        lines = read(os.path.join(root, rel)).split("\n")
        for start, end, stage, task, _, _ in kits.regions(lines, rel):
            body = [l for l in lines[start + 1:end] if not kits.is_marker(l)]
            found.append(Answer(f"{stage}.{task}", rel, start + 2, body))
    return found


def idioms(root):
    """The statements, modulo names, of IDIOM or more functions outside the
    solution regions."""
    count = {}
    for rel in source_files(root):
        toks = tokenize(without_regions(read(os.path.join(root, rel)), rel))[0]
        for _, first, last in functions(toks):
            for norm in {s.norm for s in statements(toks[first:last + 1])}:
                count[norm] = count.get(norm, 0) + 1
    return {norm for norm, n in count.items() if n >= IDIOM}


class Place:
    """A text the rules search: a file of a kit, or the student edition.
    units: its functions (a file's top level counts as one more), each as
    its list of statements, for `copied`; empty when it holds no C.
    words: its tokens, code and comments alike, for `key line`."""

    def __init__(self, name, text, code=True, stubs=()):
        self.name = name
        toks, comments = tokenize(text)
        # lines inside a kit's TODO blocks hold stubs, not code to copy
        toks = [t for t in toks if not any(a <= t.line <= b for a, b in stubs)]
        self.units = []
        if code:
            inside = set()
            for _, first, last in functions(toks):
                self.units.append(statements(toks[first:last + 1]))
                inside.update(range(first, last + 1))
            self.units.append(statements([t for i, t in enumerate(toks) if i not in inside]))
        # `;` is left out of statements, so of the words too
        words = [(t.text, t.line) for t in toks if t.text != ";"]
        for line, body in comments:
            words += [(t.text, line) for t in tokenize(body)[0] if t.text != ";"]
        self.words = words
        self.index = {}
        for i, (w, _) in enumerate(words):
            self.index.setdefault(w, []).append(i)

    def find_words(self, seq):
        """The line where the tokens seq appear in a row, or None."""
        for i in self.index.get(seq[0], ()):
            if tuple(w for w, _ in self.words[i:i + len(seq)]) == seq:
                return self.words[i][1]
        return None


def in_order(wanted, unit):
    """The tokens of the longest run of wanted's statements that appear in unit
    in the same order (modulo names), and the line of the first."""
    n, m = len(wanted), len(unit)
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if wanted[i].norm == unit[j].norm:
                best[i][j] = len(wanted[i].norm) + best[i + 1][j + 1]
            else:
                best[i][j] = max(best[i + 1][j], best[i][j + 1])
    first = next((s.line for s in unit if any(s.norm == w.norm for w in wanted)), 0)
    return best[0][0], first


def todo_blocks(text):
    """(first, last) line numbers of each `// TODO task` ... `// END TODO` block."""
    blocks, start = [], None
    for i, line in enumerate(text.split("\n"), 1):
        if kits.TODO.match(line):
            start = i
        elif start is not None and kits.END_TODO.match(line):
            blocks.append((start, i))
            start = None
    return blocks


def telling(statements, common):
    """The statements that are no idiom and no bounds check."""
    return [s for s in statements if s.norm not in common and not s.guard()]


def copied(answer, places, common):
    """The `copied` rule: a finding, or None."""
    wanted = telling(answer.statements, common)
    total = sum(len(s.norm) for s in wanted)
    if total == 0:
        return None
    for p in places:
        for unit in p.units:
            found, line = in_order(wanted, unit)
            if found and found >= COPIED_SHARE * total:
                return (f"{p.name}:{line}: holds {int(100 * found / total)} % of its "
                        "statements, modulo names, in its order")
    return None


def key_lines(answer, places, common, own=frozenset()):
    """The `key line` rule: findings (own: exact statements that do not count)."""
    out = []
    for s in telling(answer.statements, common):
        if len(s.exact) < KEY_TOKENS or s.exact in own:
            continue
        for p in places:
            line = p.find_words(s.exact)
            if line is not None:
                out.append(f"{p.name}:{line}: holds its line `{' '.join(s.exact)}`")
                break
    return out


def called(answer):
    """The calls the answer's statement is, outermost: (name, member?) pairs
    (`vec_current()->relu_backward(...)` is a call of relu_backward)."""
    toks = [t for t in tokenize(answer.text)[0] if t.text != ";"]
    out = []
    for i, t in enumerate(toks[:-1]):
        if t.kind == "id" and toks[i + 1].text == "(":
            if matching(toks, i + 1) == len(toks) - 1:  # its argument list ends the statement
                out.append((t.text, i > 0 and toks[i - 1].text in ("->", ".")))
    return out


def names_match(defined, name, member):
    if not member:
        return defined == name
    parts, want = defined.split("_"), name.split("_")
    return any(parts[i:i + len(want)] == want for i in range(len(parts) - len(want) + 1))


def helpers(answer, kit, stage, common):
    """The `helper` rule over a kit directory: findings."""
    if len(answer.statements) != 1:
        return []
    calls = called(answer)
    if not calls:
        return []
    out = []
    for rel in kits.all_files(kit, "."):
        if not rel.endswith(kits.SOURCE_ENDINGS):
            continue
        brought = kits.brought_by(rel)
        if not (brought == stage or rel.startswith(f"stages/{stage:02d}_")):
            continue
        text = read(os.path.join(kit, rel))
        stubs = todo_blocks(text)
        toks = tokenize(text)[0]
        for name, first, last in functions(toks):
            if rel == answer.path and toks[first].line <= answer.line <= toks[last].line:
                continue  # the function the answer is written in
            if not any(names_match(name, n, m) for n, m in calls):
                continue
            body = [t for t in toks[first:last + 1]
                    if not any(a <= t.line <= b for a, b in stubs)]
            if telling(statements(body), common):
                out.append(f"{rel}:{toks[first].line}: {name}() is its answer: the answer is "
                           f"one call of it, and the kit ships its body")
    return out


def kit_places(kit):
    """A Place for each text file of a kit."""
    places = []
    for rel in sorted(kits.all_files(kit, ".")):
        text = read(os.path.join(kit, rel))
        if text is None:
            continue
        places.append(Place(os.path.normpath(rel), text, code=rel.endswith(kits.SOURCE_ENDINGS),
                            stubs=todo_blocks(text)))
    return places


def check_kit(root, kit, stage, common=None, every=None):
    """Findings for the kit of a stage: (task, answer's place, finding)."""
    common = idioms(root) if common is None else common
    every = answers(root) if every is None else every
    places = kit_places(kit)
    earlier = {s.exact for a in every if a.stage < stage for s in a.statements}
    found = []
    for a in every:
        if a.stage != stage:
            continue
        where = f"{a.path}:{a.line}"
        c = copied(a, places, common)
        if c:
            found.append((a.task, where, c))
        found += [(a.task, where, k) for k in key_lines(a, places, common, earlier)]
        found += [(a.task, where, h) for h in helpers(a, kit, stage, common)]
    return found


# --- the student edition ------------------------------------------------------

BLOCK = re.compile(r"<(?:script|style)\b.*?</(?:script|style)>", re.S | re.I)
PIECE = re.compile(r'data-file="([^"]*)"|<pre\b[^>]*>(.*?)</pre>', re.S | re.I)
TAG = re.compile(r"<[^>]+>")


def html_text(markup):
    """The text of an HTML page: its prose (code blocks cut out), and its code
    blocks, each with the file its listing comes from (None if not a listing)."""
    markup = BLOCK.sub(" ", markup)
    code, prose, last, source = [], [], 0, None
    for m in PIECE.finditer(markup):
        if m.group(1) is not None:
            source = html.unescape(m.group(1))
            continue
        prose.append(markup[last:m.start()])
        last = m.end()
        code.append((source, html.unescape(TAG.sub("", m.group(2)))))
        source = None
    prose.append(markup[last:])
    return html.unescape(TAG.sub(" ", " ".join(prose))), code


def book_pages(path):
    """(name, html) of each page of a book file: .html, or the XHTML of an .epub."""
    if path.endswith(".epub"):
        with zipfile.ZipFile(path) as z:
            return [(f"{path}:{n}", z.read(n).decode("utf-8", "replace"))
                    for n in sorted(z.namelist()) if n.endswith((".xhtml", ".html"))]
    return [(path, read(path) or "")]


def squeeze(text):
    return re.sub(r"\s+", "", text)


def stage_of(path):
    """The stage whose kit first holds a file, or None."""
    if path is None:
        return None
    m = re.match(r"stages/(\d\d)_", path)
    return int(m.group(1)) if m else kits.brought_by(path)


def check_book(root, paths, common=None, every=None):
    """Findings for student-edition files: no answer of any task, whole (its
    text, whitespace removed) anywhere, or in part by the rules above in its
    prose and in the listings of its own and earlier stages' files. A later
    stage's listing may repeat a line of it (chapter 4's micro-kernels are
    chapter 3's kernels grown up), as a later stage's kit may not."""
    common = idioms(root) if common is None else common
    every = answers(root) if every is None else every
    places, flat = [], []
    for path in paths:
        for name, markup in book_pages(path):
            text, code = html_text(markup)
            places.append((None, Place(f"{name} (prose)", text, code=False)))
            for i, (source, block) in enumerate(code):
                label = f"{name} (listing of {source})" if source else f"{name} (code block {i + 1})"
                places.append((stage_of(source), Place(label, block)))
            flat.append((name, squeeze(text + " ".join(b for _, b in code))))
    found = []
    for a in every:
        where = f"{a.path}:{a.line}"
        body = squeeze(a.text)
        for name, text in flat:
            if body and body in text:
                found.append((a.task, where, f"{name}: holds the whole answer"))
        mine = [p for stage, p in places if stage is None or stage <= a.stage]
        c = copied(a, mine, common)
        if c:
            found.append((a.task, where, c))
        found += [(a.task, where, k) for k in key_lines(a, mine, common)]
    return found

--[[
book.lua: the pandoc Lua filter that builds the book (pandoc 2.17 API).

It pulls code and numbers out of the real files, so nothing measured or
compiled is ever typed into a chapter by hand.

Listings (a code block with an include= attribute, any classes):

  ```{.c include="common/gemm/gemm_pack.c" listing="pack_b"}
  ```

  is replaced by the lines strictly between `// listing: pack_b` and its
  `// end listing` (`#` instead of `//` in Makefiles, shell and gnuplot).
  Without listing= the whole file is shown. Marker lines are never shown:
  listing:/end listing, BEGIN SOLUTION/END SOLUTION, `stub:`,
  `earlier kits:` and `in the kit:` lines.
  Listings may nest: an unnamed `end listing` closes the innermost open
  listing; `// end listing pack_b` (or `end listing: pack_b`) closes that
  name, which allows overlapping regions. Common indentation is removed.

  The student edition (book-edition=student) reads each file as the
  assignment kits ship it (tools/make_assignment.py --student): every task's
  solution replaced by its stub, between `// TODO task N.M: what` and
  `// END TODO task N.M`. A listing that holds a stub says so in its caption:
  the task, what to write, and the tests that check it (the Test(task_N_M, ...)
  of tests/test_*.c).

Tables from CSV (a code block with class results-table or csv-table):

  ```{.results-table results="stage-01" columns="kernel,n,gflops,pct_peak"
      where="threads=1,kernel=ijk|ikj" caption="Naive loops"}
  ```

  results=NAME reads plots/data/NAME.csv (the reference machine) and, if
  build/results/NAME.csv exists, adds a second table for "Your machine".
  file=PATH reads any CSV instead. Options: columns=, where=, last=, sort=,
  headers=, pivot=, value=, rows=, mine=no, machine= (what to call the
  book's copy instead of "Reference machine", for a study measured elsewhere).
  last=COL keeps, of the rows where= selects, those with the largest value
  of COL (last="epoch": the final epoch, however many a run trained).
  A CSV whose header has an `openblas_note` line (OpenBLAS held to a lesser
  path than the CPU runs) gets that note in a paragraph under its table.
  untimed="avx512" (or neon, or both, comma-separated) marks a table of
  kernels by ISA: when the file's `# isas:` line lacks one (in a file
  without that line: when it has no peak.ISA.1 line), a paragraph under the
  table says so: "Not timed on this machine: it has no AVX-512, so the
  AVX-512 kernels have no rows; `make test-avx512` tests them under
  emulation." When the machine runs it, nothing is added. Where where=
  selects no row at all (a table of the AVX-512 kernels alone), the note
  stands in place of the table, rather than the error it would be without
  untimed=. "Your machine"'s table gets its own note, from its own file.

Inline numbers (an empty span with class result):

  []{.result results="stage-01" where="kernel=openblas,m=1024,threads=1" column="gflops"}
  []{.result results="stage-01" meta="cpu"}
  []{.result results="stage-01" meta="machine"}   (the machine, named from the
                                                   file's `#` lines: cpu, family
                                                   and model, cores, ISA, caches)
  []{.result results="stage-03" meta="fma_latency_cycles"}

  A meta= key kept per ISA (fma_latency_cycles.avx2, fmas_per_cycle.avx512),
  named without its ISA, reads the widest ISA's: the file's isa_best, else
  the widest with a measured peak. So a sentence holds on any machine. A
  file from before its `isas` and `isa_best` lines were written gets them
  from its peak.ISA.1 lines.

  []{.result results="stage-08-compare-train" where="framework=ours" last="epoch" column="test_acc"}

  source="mine" prefers build/results/NAME.csv, falling back to the
  reference. format="%.0f" overrides the number format (of the percent, for
  a column that holds a fraction: share, test_acc). last= as for tables.
  scale="1e-6" multiplies the value first (bytes shown as megabytes with
  format="%.1f"), and format= then formats the product (default %g).

  stat="mean", "sd" (the sample standard deviation), "min", "max" or "n"
  sums up the column over every row where= (and last=) select, instead of
  wanting exactly one: the spread between seeds, from one row per seed.

  []{.result results="stage-07-seeds" last="epoch" column="test_acc" stat="sd"}

Races (an empty span with class race): ours against a peer, from a
results file that keeps every round (kernel/roundN or model/roundN rows
beside the result row, each round with the yardstick it timed and a slow
mark: the `yardstick` and `slow` columns).

  []{.race results="stage-07-compare" where="model=784-256-10,framework=ours" column="vs_pytorch"}

  where= selects the result row (exactly one); column= is its ratio to the
  peer (vs_openblas, vs_pytorch). It prints the ratio and its range over
  the rounds, two significant figures each: "2.8×, rounds 2.6–3.1" (three
  for a range that two would print as one number: "1.1×, rounds 1.10–1.15"). The
  rounds are the rows where= selects once its kernel= or model= value gets
  /roundN, less those marked slow. A file without the yardstick column
  (measured before rounds were kept), or with one round, gives the ratio
  alone: "2.8×".

  say="verdict" writes the comparison instead, from the same numbers:
  faster= when every round's ratio is above 1, slower= when every one is
  below, even= when the rounds' range holds 1 (defaults "faster",
  "slower", "within the spread"); without rounds, the ratio alone decides.

  against="stage-08-compare" (a results name, or a path.csv) and
  against-where="model=cnn,framework=ours" (with say="verdict") hold the race against another race's ratio instead
  of 1: larger= when every round of this one is above every round of that
  one, smaller= when every one is below, even= when the ranges overlap
  (defaults "larger", "smaller", "within the spread").

Provenance: book.md's front matter names the book's compiler and the
machines whose results it quotes, each by a signature of what a results
file's `#` lines say (cpu, cores, the widest ISA with a measured peak, the
L1d size):

  reference:
    compiler: gcc 12.2.0
    machines:
      - name: "AMD EPYC Zen 5, 2 cores, AVX-512"
        cpu: AMD EPYC
        cores: 2
        isa: avx512
        l1d: 48 KiB
      - name: "AMD EPYC Zen 3, 2 cores, AVX2"
        label: Zen 3 machine
        cpu: AMD EPYC
        ...

Every results file the book quotes (results= and file= tables and spans,
and the data of its plots) must name that compiler, if it names one, and
a machine that matches exactly one of them; the caption of its table or
figure names that machine, as "Reference machine: NAME", or "LABEL: NAME"
for a machine with a label (one that is not the reference machine). With
book-provenance=error (check-book.sh --provenance) a file that does not is
an error; otherwise a warning.

Without a `machines:` list (book.md has none) a table's or figure's caption
names the machine from its file's `#` lines: "Reference machine: AMD EPYC
(family 25, model 1), 2 cores, AVX2, L1d 32 KiB, L2 512 KiB".

Runs (book-runs=error|warn; check-book.sh --provenance, error under
STRICT=1): every results file the book quotes carries one run id (`#
run_id:`, which make reference writes): two ids are an error, a file
without one is "not from a reference run"; the files come from one
machine; and a file measured before the last change to the code it
measures (its `# commit:` against git log of its stage's folder and
common/; a file without a commit by its `# date:`) is stale. In a shallow
clone staleness cannot be told, and says so.

Other machines: a whole run of another machine is a folder of plots/other/
(book-other / BOOK_OTHER), and enters the book only through

  ```{.other-machines caption="..."}
  ```

one row per run, this book's first: each race's seconds per epoch, ours
and PyTorch's, and the ratio. A table or span whose file= points into
plots/other/ is an error.

Images: build/plots/stage-NN[-reference].svg must correspond to an
existing plots/data/stage-NN.csv (in check mode the plot itself need not
exist yet); stage-NN-train.svg may come from stage-NN-compare-train.csv
instead. With -M plots-format=png, or when writing a .pdf, plots are taken
as .png (weasyprint 57 cannot read gnuplot's SVG).

  ![](build/plots/stage-08.svg){caption="drawn"}

  takes its caption from build/plots/stage-08.caption, which the plot
  script wrote with the plot, saying what it drew.

Settings (metadata, else environment): book-root / BOOK_ROOT (repository
root, default "."), book-data / BOOK_DATA (reference CSV folder, default
plots/data), book-results / BOOK_RESULTS (your results, default
build/results), book-check / BOOK_CHECK (check mode), book-edition /
BOOK_EDITION ("reader", the default, or "student"), book-provenance
("error", "warn", the default, or "off"), plots-format.

Any problem prints "book.lua: error: ..." on stderr and makes pandoc exit
non-zero after the whole document has been scanned.
]]

local stringify = pandoc.utils.stringify

-- ---------------------------------------------------------------------
-- settings and errors

local cfg = {
  root = os.getenv("BOOK_ROOT") or ".",
  data = os.getenv("BOOK_DATA") or "plots/data",
  results = os.getenv("BOOK_RESULTS") or "build/results",
  check = (os.getenv("BOOK_CHECK") or "") ~= "" and os.getenv("BOOK_CHECK") ~= "0",
  edition = os.getenv("BOOK_EDITION") or "reader",
  provenance = "warn",
  -- "error", "warn" or "off" (the default): check that every results file
  -- the book quotes comes from one `make reference` run, of the code as it is
  runs = "off",
  -- where whole runs of other machines live, one folder each
  other = os.getenv("BOOK_OTHER") or "plots/other",
  -- When set, each listing appends "file<TAB>line" for every line it shows
  -- (tools/check-book.sh --book reports listing coverage from it).
  coverage = os.getenv("BOOK_COVERAGE"),
  plots_format = nil,
}

local n_errors = 0

local function report(msg)
  n_errors = n_errors + 1
  io.stderr:write("book.lua: error: " .. msg .. "\n")
end

local function warn(msg)
  io.stderr:write("book.lua: warning: " .. msg .. "\n")
end

-- Raised inside a handler; caught by guard(), which reports it and leaves
-- a visible marker in the output. The run fails at the end.
local Failure = {}
local function fail(msg)
  error(setmetatable({ msg = msg }, Failure), 0)
end

local function guard(fn, el, what)
  local ok, res = pcall(fn, el)
  if ok then return res end
  if type(res) == "table" and getmetatable(res) == Failure then
    report(res.msg)
  else
    report(what .. ": " .. tostring(res))
  end
  return nil
end

local function is_abs(p) return p:sub(1, 1) == "/" end

local function join(dir, p)
  if is_abs(p) or dir == "" or dir == "." then return p end
  return dir:gsub("/+$", "") .. "/" .. p
end

local function rooted(p) return join(cfg.root, p) end

local function file_exists(p)
  local f = io.open(p, "r")
  if f then f:close() return true end
  return false
end

local function read_lines(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local lines = {}
  for line in f:lines() do
    lines[#lines + 1] = (line:gsub("\r$", ""))
  end
  f:close()
  return lines
end

local function trim(s) return (s:gsub("^%s+", ""):gsub("%s+$", "")) end

local function split(s, sep)
  local out = {}
  if s == nil or s == "" then return out end
  for part in (s .. sep):gmatch("(.-)" .. sep:gsub("%p", "%%%0")) do
    out[#out + 1] = trim(part)
  end
  return out
end

local function truthy(v)
  if v == nil then return false end
  if type(v) == "boolean" then return v end
  v = stringify(v):lower()
  return v ~= "" and v ~= "false" and v ~= "no" and v ~= "0"
end

-- ---------------------------------------------------------------------
-- listings

local LEADERS = { "//", "#" }

-- The listing name that a start marker opens, or nil.
local function start_marker(line)
  for _, c in ipairs(LEADERS) do
    local name = line:match("^%s*" .. c:gsub("%p", "%%%0") .. "%s*listing:%s*(%S+)%s*$")
    if name then return name end
  end
  return nil
end

-- For an end marker: true, plus the name it closes if it gives one.
local function end_marker(line)
  for _, c in ipairs(LEADERS) do
    local rest = line:match("^%s*" .. c:gsub("%p", "%%%0") .. "%s*end listing(.*)$")
    if rest then
      local name = rest:match("^:?%s*(%S+)%s*$")
      if rest:match("^%s*$") then return true, nil end
      if name then return true, name end
    end
  end
  return false
end

local function other_marker(line)
  for _, c in ipairs(LEADERS) do
    local q = "^%s*" .. c:gsub("%p", "%%%0") .. "%s*"
    if line:match(q .. "BEGIN SOLUTION") or line:match(q .. "END SOLUTION")
        or line:match(q .. "stub:") or line:match(q .. "earlier kits:")
        or line:match(q .. "in the kit:") then
      return true
    end
  end
  return false
end

local function is_marker(line)
  return start_marker(line) ~= nil or end_marker(line) or other_marker(line)
end

-- Drop marker lines, blank lines at both ends, and common indentation.
local function tidy(lines)
  local kept = {}
  for _, l in ipairs(lines) do
    if not is_marker(l) then kept[#kept + 1] = (l:gsub("%s+$", "")) end
  end
  while #kept > 0 and kept[1] == "" do table.remove(kept, 1) end
  while #kept > 0 and kept[#kept] == "" do table.remove(kept) end
  local prefix = nil
  for _, l in ipairs(kept) do
    if l ~= "" then
      local ws = l:match("^[ \t]*")
      if prefix == nil then
        prefix = ws
      else
        local i = 0
        while i < #prefix and i < #ws and prefix:sub(i + 1, i + 1) == ws:sub(i + 1, i + 1) do
          i = i + 1
        end
        prefix = prefix:sub(1, i)
      end
    end
  end
  if prefix and #prefix > 0 then
    for i, l in ipairs(kept) do kept[i] = l:sub(#prefix + 1) end
  end
  return kept
end

-- Returns the lines of listing `name` and the 1-based first/last line numbers.
local function extract(lines, name, file)
  local start = nil
  for i, l in ipairs(lines) do
    if start_marker(l) == name then
      if start then
        fail(string.format("%s: listing '%s' appears twice (lines %d and %d)", file, name, start, i))
      end
      start = i
    end
  end
  if not start then
    fail(string.format("%s: listing '%s' not found (no line '// listing: %s')", file, name, name))
  end
  local open = {}
  local stop = nil
  for i = start + 1, #lines do
    local l = lines[i]
    local s = start_marker(l)
    if s then
      open[#open + 1] = s
    else
      local is_end, ename = end_marker(l)
      if is_end then
        if ename == name or (ename == nil and #open == 0) then
          stop = i
          break
        elseif ename == nil then
          table.remove(open)
        else
          for j = #open, 1, -1 do
            if open[j] == ename then table.remove(open, j) break end
          end
        end
      end
    end
  end
  if not stop then
    fail(string.format("%s: listing '%s' (line %d) has no 'end listing'", file, name, start))
  end
  local body = {}
  for i = start + 1, stop - 1 do body[#body + 1] = lines[i] end
  return body, start + 1, stop - 1
end

-- The student edition's text of a file: the kits' stubs in place of every
-- task's solution, from the kit maker itself, so both show the same stub.
local student_cache = {}
local function student_lines(file)
  if student_cache[file] then return student_cache[file] end
  local ok, out = pcall(pandoc.pipe, "python3",
    { rooted("tools/make_assignment.py"), "--student", rooted(file) }, "")
  if not ok then
    fail(string.format("%s: the kit maker could not stub it for the student edition (%s)",
      file, tostring(type(out) == "table" and out.output or out)))
  end
  local lines = {}
  for line in (out .. "\n"):gmatch("(.-)\n") do lines[#lines + 1] = line end
  if lines[#lines] == "" then table.remove(lines) end
  student_cache[file] = lines
  return lines
end

-- The tests of each task: Test(task_N_M, name) in tests/test_*.c.
local task_tests = nil
local function tests_of(task)
  if task_tests == nil then
    task_tests = {}
    local ok, listing = pcall(pandoc.pipe, "sh",
      { "-c", "cd \"$1\" && ls tests/test_*.c", "sh", cfg.root }, "")
    for path in ((ok and listing) or ""):gmatch("[^\n]+") do
      for line in io.lines(rooted(path)) do
        local n, m, name = line:match("^Test%(task_(%d+)_(%d+),%s*([%w_]+)")
        if n then
          local key = n .. "." .. m
          task_tests[key] = task_tests[key] or {}
          table.insert(task_tests[key], name)
        end
      end
    end
  end
  return task_tests[task] or {}
end

-- What a listing of the student edition says of the stubs it shows: for
-- each task, what to write and the command and tests that check it.
local function stub_note(shown)
  local out, seen = {}, {}
  for _, l in ipairs(shown) do
    local task, what = l:match("//%s*TODO task (%d+%.%d+):%s*(.-)%s*$")
    if task and not seen[task] then
      seen[task] = true
      -- a hint that asks a question ends with its question mark
      local stop = what:match("[?.]$") and "" or "."
      local text = string.format("Task %s is yours to write: %s%s", task, what, stop)
      local names = tests_of(task)
      local stage = string.format("%02d", tonumber(task:match("^(%d+)")))
      local tests = {}
      for _, n in ipairs(names) do tests[#tests + 1] = "`" .. n .. "`" end
      if #tests > 0 then
        text = text .. string.format(" `make stage-%s test TASK=%s` runs its tests: %s.",
          stage, task, table.concat(tests, ", "))
      else
        text = text .. string.format(" `make stage-%s test TASK=%s` runs its tests.", stage, task)
      end
      out[#out + 1] = text
    end
  end
  if #out == 0 then return nil end
  return table.concat(out, " ")
end

local function listing_block(el)
  local file = el.attributes["include"]
  local name = el.attributes["listing"]
  if file == nil or file == "" then fail("code block has an empty include= attribute") end
  local lines = read_lines(rooted(file))
  if not lines then
    fail(string.format("%s: file not found (looked for %s%s)", file, rooted(file),
      name and (", listing '" .. name .. "'") or ""))
  end
  if cfg.edition == "student" then lines = student_lines(file) end
  local body, first, last
  if name and name ~= "" then
    body, first, last = extract(lines, name, file)
  else
    body, first, last = lines, 1, #lines
  end
  local shown = tidy(body)
  if cfg.coverage and cfg.coverage ~= "" then
    local log = io.open(cfg.coverage, "a")
    if log then
      for i = first, last do
        if not is_marker(lines[i]) and lines[i]:match("%S") then
          log:write(file, "\t", i, "\n")
        end
      end
      log:close()
    end
  end
  if #shown == 0 then
    if name then fail(string.format("%s: listing '%s' is empty", file, name)) end
    fail(string.format("%s: file is empty", file))
  end

  local attrs = {}
  for k, v in pairs(el.attributes) do
    if k ~= "include" and k ~= "listing" and k ~= "caption" then attrs[k] = v end
  end
  attrs["title"] = file
  local code = pandoc.CodeBlock(table.concat(shown, "\n"),
    pandoc.Attr("", el.classes, attrs))

  local cap = { pandoc.Code(file) }
  if name and name ~= "" then
    cap[#cap + 1] = pandoc.Str(string.format(", lines %d–%d", first, last))
  end
  local text = el.attributes["caption"]
  local note = cfg.edition == "student" and stub_note(shown) or nil
  if note then
    -- a caption that only names the task gives way to the note, which names it
    if text == nil or text:match("^%s*tasks?%s+[%d%.,%s]+$") then text = note
    else text = text .. ". " .. note end
  end
  if text then
    local extra = pandoc.read(text, "markdown").blocks
    if #extra > 0 and extra[1].content then
      cap[#cap + 1] = pandoc.Str(":")
      cap[#cap + 1] = pandoc.Space()
      for _, x in ipairs(extra[1].content) do cap[#cap + 1] = x end
    end
  end
  -- data-file lets tools/kit-check.py --book tell where a listing comes from
  local div_attr = pandoc.Attr(el.identifier, { "listing" },
    name and { ["data-listing"] = name, ["data-file"] = file } or { ["data-file"] = file })
  return pandoc.Div({
    pandoc.Div({ pandoc.Plain(cap) }, pandoc.Attr("", { "listing-caption" })),
    code,
  }, div_attr)
end

-- ---------------------------------------------------------------------
-- CSV files

local csv_cache = {}

-- Columns that hold a fraction of 1 (0.289), shown in percent (28.9 %). A
-- value outside 0..1 is an error: a percent stored in one of them would
-- print a hundred times too large. format= applies to the percent.
local FRACTIONS = { test_acc = true, val_acc = true, share = true }


local function parse_csv_line(line)
  local out, i, n = {}, 1, #line
  if n == 0 then return { "" } end
  while i <= n + 1 do
    if line:sub(i, i) == '"' then
      local buf, j = {}, i + 1
      while true do
        local c = line:sub(j, j)
        if c == "" then break end
        if c == '"' then
          if line:sub(j + 1, j + 1) == '"' then
            buf[#buf + 1] = '"'; j = j + 2
          else
            j = j + 1; break
          end
        else
          buf[#buf + 1] = c; j = j + 1
        end
      end
      out[#out + 1] = table.concat(buf)
      local comma = line:find(",", j, true)
      if not comma then break end
      i = comma + 1
    else
      local comma = line:find(",", i, true)
      if comma then
        out[#out + 1] = trim(line:sub(i, comma - 1)); i = comma + 1
      else
        out[#out + 1] = trim(line:sub(i)); break
      end
    end
  end
  return out
end

-- { path=, meta={key=value}, cols={names}, rows={ {col=value} } } or fail().
local function load_csv(path, label)
  local key = rooted(path)
  if csv_cache[key] then return csv_cache[key] end
  local lines = read_lines(key)
  if not lines then fail(string.format("%s: results file not found (%s)", label or path, key)) end
  local t = { path = path, meta = {}, cols = nil, rows = {} }
  for no, line in ipairs(lines) do
    if line:match("^%s*#") then
      local k, v = line:match("^%s*#%s*([%w_%.%-]+)%s*:%s*(.-)%s*$")
      if k and t.cols == nil and t.meta[k] == nil then t.meta[k] = v end
    elseif line:match("^%s*$") then
      -- skip
    elseif t.cols == nil then
      t.cols = parse_csv_line(line)
      t.colset = {}
      for _, c in ipairs(t.cols) do t.colset[c] = true end
    else
      local f = parse_csv_line(line)
      if #f ~= #t.cols then
        fail(string.format("%s:%d: %d fields, header has %d", path, no, #f, #t.cols))
      end
      local row = {}
      for i, c in ipairs(t.cols) do
        row[c] = f[i]
        local x = FRACTIONS[c] and tonumber(f[i])
        if x and (x < 0 or x > 1) then
          fail(string.format("%s:%d: column %s holds %s: it is a fraction of 1 (%g %% is %g), "
            .. "which the book shows in percent", path, no, c, f[i], x, x / 100))
        end
      end
      t.rows[#t.rows + 1] = row
    end
  end
  if t.cols == nil then fail(string.format("%s: no header row", path)) end
  csv_cache[key] = t
  return t
end

local function size_of(row)
  local m, n, k = row.m, row.n, row.k
  if m == nil or n == nil or k == nil then return n or m or "" end
  if m == n and n == k then return n end
  return m .. "×" .. n .. "×" .. k
end

local function size_volume(row)
  local m, n, k = tonumber(row.m), tonumber(row.n), tonumber(row.k)
  if m and n and k then return m * n * k end
  return tonumber(row.n) or 0
end

local function cell_value(row, col)
  if col == "size" then return size_of(row) end
  return row[col]
end

local function same_value(a, b)
  if a == b then return true end
  local x, y = tonumber(a), tonumber(b)
  return x ~= nil and y ~= nil and x == y
end

-- "threads=1,kernel=ijk|ikj" -> list of {col=, alts={}}
local function parse_where(s, t, label)
  local conds = {}
  for _, part in ipairs(split(s or "", ",")) do
    if part ~= "" then
      local col, val = part:match("^([^=!]+)=(.*)$")
      if not col then fail(string.format("%s: bad where clause '%s' (expected col=value)", label, part)) end
      col = trim(col)
      if col ~= "size" and not t.colset[col] then
        fail(string.format("%s: where: no column '%s' (columns: %s)", label, col, table.concat(t.cols, ",")))
      end
      conds[#conds + 1] = { col = col, alts = split(val, "|") }
    end
  end
  return conds
end

-- A round's row of a race (kernel or model NAME/roundN) is selected only by
-- a where= that names rounds; the others see the result rows alone.
local function names_rounds(conds)
  for _, c in ipairs(conds) do
    if c.col == "kernel" or c.col == "model" then
      for _, a in ipairs(c.alts) do
        if a:match("/round%d+$") then return true end
      end
    end
  end
  return false
end

local function is_round_row(row)
  local name = row.kernel or row.model
  return name ~= nil and name:match("/round%d+$") ~= nil
end

-- Whether row meets every condition but skip (a condition, or nil).
local function meets(row, conds, skip)
  for _, c in ipairs(conds) do
    if c ~= skip then
      local v = cell_value(row, c.col)
      local any = false
      for _, a in ipairs(c.alts) do
        if same_value(v, a) then any = true break end
      end
      if not any then return false end
    end
  end
  return true
end

local function select_rows(t, conds)
  local out = {}
  local rounds = names_rounds(conds)
  for _, row in ipairs(t.rows) do
    if (rounds or not is_round_row(row)) and meets(row, conds) then out[#out + 1] = row end
  end
  return out
end

-- last=COL: of the rows selected, those whose COL is largest (numerically).
local function keep_last(rows, col, t, label)
  if col == nil or col == "" then return rows end
  if col ~= "size" and not t.colset[col] then
    fail(string.format("%s: last: no column '%s' (columns: %s)", label, col, table.concat(t.cols, ",")))
  end
  local best = nil
  for _, r in ipairs(rows) do
    local v = col == "size" and size_volume(r) or tonumber(r[col])
    if v == nil then
      fail(string.format("%s: last: column '%s' holds '%s', not a number", label, col, tostring(r[col])))
    end
    if best == nil or v > best then best = v end
  end
  local out = {}
  for _, r in ipairs(rows) do
    local v = col == "size" and size_volume(r) or tonumber(r[col])
    if v == best then out[#out + 1] = r end
  end
  return out
end

-- ---------------------------------------------------------------------
-- number formatting

local function sig4(x)
  local s = string.format("%#.4g", x)
  return s
end

local FORMATS = {
  seconds = function(x) return sig4(x) end,
  gflops = function(x) return string.format("%.1f", x) end,
  pct_peak = function(x) return string.format("%.1f %%", x) end,
  vs_openblas = function(x) return string.format("%.2f×", x) end,
  -- the training stages' columns (accuracies and shares: FRACTIONS)
  test_acc = function(x) return string.format("%.2f %%", 100 * x) end,
  val_acc = function(x) return string.format("%.2f %%", 100 * x) end,
  val_loss = function(x) return string.format("%.4f", x) end,
  share = function(x) return string.format("%.1f %%", 100 * x) end,
  train_loss = function(x) return string.format("%.4f", x) end,
  test_loss = function(x) return string.format("%.4f", x) end,
  seconds_per_epoch = function(x) return sig4(x) end,
  images_per_s = function(x) return string.format("%.0f", x) end,
  peak_rss_mb = function(x) return string.format("%.1f", x) end,
  vs_pytorch = function(x) return string.format("%.2f×", x) end,
}

local function format_value(col, raw, fmt)
  if raw == nil then return "—" end
  local x = tonumber(raw)
  if x == nil then return raw end
  if FRACTIONS[col] and fmt and fmt ~= "" then x = 100 * x end
  if fmt and fmt ~= "" then
    local ok, s = pcall(string.format, fmt, x)
    if not ok then fail("bad format '" .. fmt .. "'") end
    return s
  end
  local f = FORMATS[col]
  if f then return f(x) end
  return raw
end

local HEADERS = {
  kernel = "Kernel", isa = "ISA", threads = "Threads", size = "Size",
  seconds = "Time (s)", gflops = "GFLOPS", pct_peak = "% of peak",
  vs_openblas = "vs OpenBLAS",
}

local NUMERIC = { threads = true, m = true, n = true, k = true, size = true,
  seconds = true, gflops = true, pct_peak = true, vs_openblas = true }

-- ---------------------------------------------------------------------
-- tables

local function inlines_of(text)
  if text == nil or text == "" then return {} end
  local doc = pandoc.read(text, "markdown")
  if #doc.blocks == 0 then return {} end
  local b = doc.blocks[1]
  if b.content then return b.content end
  return { pandoc.Str(text) }
end

local function cell(text) return { pandoc.Plain({ pandoc.Str(text) }) } end

-- Resolve the column list; "n" means the size column unless m or k is listed.
local function resolve_columns(spec, t, label)
  local cols = split(spec or "", ",")
  if #cols == 0 then
    cols = {}
    for _, c in ipairs(t.cols) do cols[#cols + 1] = c end
    return cols
  end
  local has_mk = false
  for _, c in ipairs(cols) do if c == "m" or c == "k" then has_mk = true end end
  for i, c in ipairs(cols) do
    if c == "n" and not has_mk and t.colset.m and t.colset.k then cols[i] = "size" end
    if cols[i] ~= "size" and not t.colset[cols[i]] then
      fail(string.format("%s: no column '%s' (columns: %s)", label, c, table.concat(t.cols, ",")))
    end
    if cols[i] == "size" and not (t.colset.m or t.colset.n) then
      fail(string.format("%s: no size columns (m,n,k) for '%s'", label, c))
    end
  end
  return cols
end

local function sort_rows(rows, spec, t, label)
  if spec == nil or spec == "" then return rows end
  local desc = spec:sub(1, 1) == "-"
  local col = desc and spec:sub(2) or spec
  if col ~= "size" and not t.colset[col] then
    fail(string.format("%s: sort: no column '%s'", label, col))
  end
  local keyed = {}
  for i, r in ipairs(rows) do
    local v = col == "size" and size_volume(r) or (tonumber(r[col]) or r[col])
    keyed[i] = { r = r, v = v, i = i }
  end
  table.sort(keyed, function(a, b)
    if a.v == b.v then return a.i < b.i end
    if type(a.v) ~= type(b.v) then return tostring(a.v) < tostring(b.v) end
    if desc then return a.v > b.v end
    return a.v < b.v
  end)
  local out = {}
  for i, k in ipairs(keyed) do out[i] = k.r end
  return out
end

local function flat_table(t, rows, attrs, label)
  local cols = resolve_columns(attrs.columns, t, label)
  local names = split(attrs.headers or "", ",")
  if #names > 0 and #names ~= #cols then
    fail(string.format("%s: headers= has %d names for %d columns", label, #names, #cols))
  end
  local heads, aligns, widths = {}, {}, {}
  for i, c in ipairs(cols) do
    heads[i] = cell(names[i] or HEADERS[c] or c)
    aligns[i] = NUMERIC[c] and pandoc.AlignRight or pandoc.AlignLeft
    widths[i] = 0
  end
  local body = {}
  for _, r in ipairs(rows) do
    local line = {}
    for i, c in ipairs(cols) do
      line[i] = cell(format_value(c, cell_value(r, c), nil))
    end
    body[#body + 1] = line
  end
  return heads, aligns, widths, body
end

local function pivot_table(t, rows, attrs, label)
  local pcol = attrs.pivot
  if pcol ~= "size" and not t.colset[pcol] then
    fail(string.format("%s: pivot: no column '%s'", label, pcol))
  end
  local vcol = attrs.value or "gflops"
  if not t.colset[vcol] then fail(string.format("%s: value: no column '%s'", label, vcol)) end
  local rcol = attrs.rows or "size"
  if rcol ~= "size" and not t.colset[rcol] then
    fail(string.format("%s: rows: no column '%s'", label, rcol))
  end

  local pvals, pseen = {}, {}
  local wanted = split(attrs.columns or "", ",")
  if #wanted > 0 then
    for _, p in ipairs(wanted) do pvals[#pvals + 1] = p; pseen[p] = true end
  else
    for _, r in ipairs(rows) do
      local p = cell_value(r, pcol)
      if not pseen[p] then pseen[p] = true; pvals[#pvals + 1] = p end
    end
  end

  local rkeys, rseen, order = {}, {}, {}
  local cells = {}
  for _, r in ipairs(rows) do
    local rk = cell_value(r, rcol)
    local p = cell_value(r, pcol)
    if pseen[p] then
      if not rseen[rk] then
        rseen[rk] = true
        rkeys[#rkeys + 1] = rk
        order[rk] = rcol == "size" and size_volume(r) or (tonumber(rk) or #rkeys)
        cells[rk] = {}
      end
      if cells[rk][p] ~= nil then
        fail(string.format("%s: pivot: more than one row for %s=%s, %s=%s; narrow it with where=",
          label, rcol, rk, pcol, p))
      end
      cells[rk][p] = r[vcol]
    end
  end
  table.sort(rkeys, function(a, b) return order[a] < order[b] end)

  local heads = { cell((split(attrs.headers or "", ",")[1]) or HEADERS[rcol] or rcol) }
  local aligns, widths = { pandoc.AlignRight }, { 0 }
  for _, p in ipairs(pvals) do
    heads[#heads + 1] = cell(p)
    aligns[#aligns + 1] = pandoc.AlignRight
    widths[#widths + 1] = 0
  end
  local body = {}
  for _, rk in ipairs(rkeys) do
    local line = { cell(rk) }
    for _, p in ipairs(pvals) do
      line[#line + 1] = cell(format_value(vcol, cells[rk][p], attrs.format))
    end
    body[#body + 1] = line
  end
  return heads, aligns, widths, body
end

local function build_table(t, attrs, caption, label, id)
  local conds = parse_where(attrs.where, t, label)
  local rows = keep_last(select_rows(t, conds), attrs.last, t, label)
  if #rows == 0 then
    fail(string.format("%s: no rows match where=\"%s\"", label, attrs.where or ""))
  end
  rows = sort_rows(rows, attrs.sort, t, label)
  local heads, aligns, widths, body
  if attrs.pivot and attrs.pivot ~= "" then
    heads, aligns, widths, body = pivot_table(t, rows, attrs, label)
  else
    heads, aligns, widths, body = flat_table(t, rows, attrs, label)
  end
  local st = pandoc.SimpleTable(caption, aligns, widths, heads, body)
  local tbl = pandoc.utils.from_simple_table(st)
  tbl.attr = pandoc.Attr(id or "", { "results" })
  return tbl
end

-- ---------------------------------------------------------------------
-- provenance: the book's compiler and machines (book.md's `reference:`)

local reference = nil
local SIGNATURE = { "cpu", "cores", "isa", "l1d" }
local ISAS = { "avx512", "avx2", "neon", "scalar" }

-- What a results file's `#` lines say of its machine; a field it does not
-- give is nil. isa: the widest with a measured peak; l1d in KiB.
local function signature(t)
  local m = t.meta
  local s = { cpu = m.cpu ~= "" and m.cpu or nil, cores = tonumber(m.cores), isa = m.isa_best }
  for _, isa in ipairs(ISAS) do
    if s.isa then break end
    for k, _ in pairs(m) do
      if k:match("^peak%." .. isa .. "%.") then s.isa = isa break end
    end
  end
  s.l1d = tonumber(m.l1d_kib)
  return s
end

local function describe(s)
  local parts = {}
  if s.cpu then parts[#parts + 1] = "cpu " .. s.cpu end
  if s.cores then parts[#parts + 1] = string.format("%d cores", s.cores) end
  if s.isa then parts[#parts + 1] = "widest ISA " .. s.isa end
  if s.l1d then parts[#parts + 1] = string.format("L1d %g KiB", s.l1d) end
  return table.concat(parts, ", ")
end

local function same(a, b)
  if tonumber(a) and tonumber(b) then return tonumber(a) == tonumber(b) end
  return tostring(a) == tostring(b)
end

-- The header's machine a file was measured on, or nil and why not.
local function machine_of(t)
  local s = signature(t)
  if next(s) == nil then
    return nil, "names no machine (no '# cpu:', '# cores:' or '# l1d_kib:' line)"
  end
  local found = {}
  for _, mach in ipairs(reference.machines) do
    local ok = true
    for _, f in ipairs(SIGNATURE) do
      if s[f] ~= nil and mach[f] ~= nil and not same(s[f], mach[f]) then ok = false end
    end
    if ok then found[#found + 1] = mach end
  end
  if #found == 1 then return found[1] end
  local names = {}
  for _, mach in ipairs(reference.machines) do names[#names + 1] = mach.name end
  if #found == 0 then
    return nil, string.format("was measured on %s, none of the book's machines (%s)", describe(s),
      table.concat(names, "; "))
  end
  names = {}
  for _, mach in ipairs(found) do names[#names + 1] = mach.name end
  return nil, string.format("says only %s, which fits more than one of the book's machines (%s)",
    describe(s), table.concat(names, "; "))
end

-- Checks a results file the book quotes against the header, once a file.
local checked = {}
local cite
local function provenance(t, label)
  cite(t, label)
  if reference == nil or cfg.provenance == "off" or checked[label] then return end
  checked[label] = true
  local problems = {}
  local compiler = t.meta.compiler
  if compiler and compiler ~= "" and reference.compiler and compiler ~= reference.compiler then
    problems[#problems + 1] = string.format("was measured with %s; the book's compiler is %s",
      compiler, reference.compiler)
  end
  if reference.machines then
    local mach, why = machine_of(t)
    if not mach then problems[#problems + 1] = why end
  end
  for _, p in ipairs(problems) do
    local msg = string.format("%s: %s (book.md, reference:)", label, p)
    if cfg.provenance == "error" then report(msg) else warn(msg) end
  end
end

local ISA_NAMES = { avx512 = "AVX-512", avx2 = "AVX2", neon = "NEON", scalar = "scalar" }

-- The machine as a results file's `#` lines name it: "AMD EPYC (family 25,
-- model 1), 2 cores, AVX2, L1d 32 KiB, L2 512 KiB". Nothing of it is typed
-- into the book: a run on another machine names that one.
local function machine_described(t)
  local m, s = t.meta, signature(t)
  local parts = { s.cpu or "unknown CPU" }
  local family, model = (m.cpu_id or ""):match("^family (%d+), model (%d+)")
  if family then parts[1] = string.format("%s (family %s, model %s)", parts[1], family, model) end
  if s.cores then parts[#parts + 1] = string.format("%d cores", s.cores) end
  if s.isa then parts[#parts + 1] = ISA_NAMES[s.isa] or s.isa end
  if s.l1d then parts[#parts + 1] = string.format("L1d %g KiB", s.l1d) end
  if tonumber(m.l2_kib) then parts[#parts + 1] = string.format("L2 %g KiB", tonumber(m.l2_kib)) end
  return table.concat(parts, ", ")
end

-- "Reference machine: AMD EPYC Zen 5, ..." from the header's list of
-- machines when it has one, else from the file's `#` lines.
-- A header machine with a label is called by it instead of "Reference
-- machine" ("Zen 3 machine: AMD EPYC Zen 3, ..."), unless the table says
-- machine= itself.
local function machine_name(who, t)
  if reference ~= nil and reference.machines and who ~= "Your machine" then
    local mach = machine_of(t)
    if mach then
      if who == "Reference machine" and mach.label then who = mach.label end
      return who .. ": " .. mach.name
    end
  end
  if (t.meta.cpu and t.meta.cpu ~= "") or t.meta.cores then return who .. ": " .. machine_described(t) end
  return who
end

local function machine_caption(base, who, t)
  local cap = {}
  for _, x in ipairs(base) do cap[#cap + 1] = x end
  if #cap > 0 then
    cap[#cap + 1] = pandoc.Str(" —")
    cap[#cap + 1] = pandoc.Space()
  end
  cap[#cap + 1] = pandoc.Emph({ pandoc.Str(machine_name(who, t)) })
  return cap
end

local function read_reference(meta)
  local r = meta.reference
  if r == nil then return nil end
  local ref = { compiler = r.compiler and stringify(r.compiler) or nil, machines = {} }
  if ref.compiler == nil then report("book.md: reference: names no compiler") end
  for i, m in ipairs(r.machines or {}) do
    local function field(k) return m[k] ~= nil and stringify(m[k]) or nil end
    local mach = { name = field("name"), label = field("label"), cpu = field("cpu"),
      cores = tonumber(field("cores")),
      isa = field("isa"), l1d = tonumber((field("l1d") or ""):match("^%s*([%d.]+)")) }
    if not mach.name then report(string.format("book.md: reference: machine %d has no name", i)) end
    ref.machines[#ref.machines + 1] = mach
  end
  -- Without a list the machine is named from each file's `#` lines, and
  -- the runs check (book-runs) holds the files to one run on one machine.
  if #ref.machines == 0 then ref.machines = nil end
  return ref
end

-- A results file measured with OpenBLAS held to a lesser path than the CPU
-- runs says so in its header (openblas_note); its table says so too, right
-- under it, so no ratio against OpenBLAS is read without it.
local function openblas_note(t)
  local note = t.meta.openblas_note
  if note == nil or note == "" then return nil end
  local inlines = { pandoc.Strong({ pandoc.Str("Note:") }) }
  for word in note:gmatch("%S+") do
    inlines[#inlines + 1] = pandoc.Space()
    inlines[#inlines + 1] = pandoc.Str(word)
  end
  return pandoc.Para(inlines)
end

-- untimed="avx512": a table of kernels by ISA, some of which its machine
-- may not run. Such kernels have no rows in the file (the benchmark skips
-- what the CPU cannot run), so the table says why, under it, and where
-- those kernels are tested instead.
local UNTIMED = {
  avx512 = { name = "AVX-512", test = "make test-avx512", how = "under emulation" },
  neon = { name = "NEON", test = "make test-neon", how = "under qemu" },
}

-- Whether a results file's machine runs an ISA: its `# isas:` line, or in
-- a file from before that line was written, a measured peak for the ISA.
local function runs_isa(t, isa)
  local isas = t.meta.isas
  if isas ~= nil and isas ~= "" then
    for _, i in ipairs(split(isas, ",")) do
      if trim(i) == isa then return true end
    end
    return false
  end
  return t.meta["peak." .. isa .. ".1"] ~= nil
end

-- The note under a table whose file's machine lacks an ISA untimed= names;
-- nil when it runs them all.
local function untimed_note(t, spec, label)
  if spec == nil or spec == "" then return nil end
  local blocks = {}
  for _, isa in ipairs(split(spec, ",")) do
    isa = trim(isa)
    local u = UNTIMED[isa]
    if u == nil then
      fail(string.format("%s: untimed=\"%s\": the ISAs it takes are avx512 and neon", label, isa))
    end
    if not runs_isa(t, isa) then
      local text = string.format("it has no %s, so the %s kernels have no rows; `%s` tests "
        .. "them %s.", u.name, u.name, u.test, u.how)
      local inlines = { pandoc.Strong({ pandoc.Str("Not timed on this machine:") }), pandoc.Space() }
      for _, x in ipairs(inlines_of(text)) do inlines[#inlines + 1] = x end
      blocks[#blocks + 1] = pandoc.Para(inlines)
    end
  end
  if #blocks == 0 then return nil end
  return blocks
end

-- ---------------------------------------------------------------------
-- runs: the book's numbers come from one `make reference`, of the code as
-- it is (book-runs=error|warn, check-book.sh --provenance; STRICT=1 errors)

-- Every results file the book quotes, in the order first quoted.
local cited_files, cited_order = {}, {}
cite = function(t, label)
  if cited_files[label] then return end
  cited_files[label] = t
  cited_order[#cited_order + 1] = label
end

local function basename(p) return (p:gsub("^.*/", "")) end

-- git in the book's root: its output without the last newline, or nil and
-- the exit code when it failed.
local function git(args)
  -- its complaints (an unknown commit, say) are answers here, not noise
  local argv = { "-c", 'cd "$1" && shift && exec git "$@" 2>/dev/null', "sh", cfg.root }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local ok, out = pcall(pandoc.pipe, "sh", argv, "")
  if ok then return (out:gsub("%s+$", "")) end
  return nil, type(out) == "table" and out.error_code or -1
end

-- The last change to the code a results file measures: its stage's folder
-- (stage-08-layers.csv: stages/08_*) and common/. { commit=, date= } or nil.
local last_change_cache = {}
local function last_change(label)
  local nn = basename(label):match("^stage%-(%d%d)")
  local key = nn or "common"
  if last_change_cache[key] == nil then
    local paths = { "common" }
    if nn then paths[#paths + 1] = "stages/" .. nn .. "_*" end
    local args = { "log", "-1", "--date=format-local:%Y-%m-%dT%H:%M:%SZ", "--format=%H %cd", "--" }
    for _, p in ipairs(paths) do args[#args + 1] = p end
    local out = git(args) or ""
    local commit, date = out:match("^(%x+) (%S+)$")
    last_change_cache[key] = commit and { commit = commit, date = date,
      what = table.concat(paths, " and ") } or false
  end
  return last_change_cache[key] or nil
end

-- Why staleness cannot be told in this checkout, or nil when it can.
local function history_missing()
  local shallow = git({ "rev-parse", "--is-shallow-repository" })
  if shallow == nil then return "no git history here" end
  if shallow == "true" then return "a shallow clone, without the code's history" end
  return nil
end

-- "stale", "fresh", or "cannot tell" and why, of one file.
local function staleness(t, label)
  local change = last_change(label)
  if not change then return "cannot tell", "git names no change to its code" end
  local commit = t.meta.commit
  if commit and commit ~= "" and commit ~= "unknown" then
    local measured = commit:gsub("%-dirty$", "")
    if not git({ "cat-file", "-e", measured .. "^{commit}" }) then
      return "cannot tell", "its commit " .. commit .. " is not in this clone"
    end
    local _, code = git({ "merge-base", "--is-ancestor", change.commit, measured })
    if code == nil then return "fresh" end
    if code == 1 then return "stale", "at " .. commit:sub(1, 12), change end
    return "cannot tell", "git could not compare the commits"
  end
  -- Files from before the commit line: their date against the change's.
  local date = t.meta.date
  if not date or date == "" then return "cannot tell", "no '# commit:' or '# date:' line" end
  if date < change.date then return "stale", "on " .. date, change end
  return "fresh"
end

local function list_of(labels)
  local names = {}
  for _, l in ipairs(labels) do names[#names + 1] = basename(l) end
  return table.concat(names, ", ")
end

local function check_runs()
  if cfg.runs == "off" or #cited_order == 0 then return end
  local say = cfg.runs == "error" and report or warn
  -- one run id
  local ids, id_order, without = {}, {}, {}
  for _, label in ipairs(cited_order) do
    local id = cited_files[label].meta.run_id
    if id and id ~= "" then
      if not ids[id] then ids[id] = {}; id_order[#id_order + 1] = id end
      table.insert(ids[id], label)
    else
      without[#without + 1] = label
    end
  end
  if #id_order > 1 then
    local parts = {}
    for _, id in ipairs(id_order) do
      parts[#parts + 1] = string.format("%s (%d: %s)", id, #ids[id], list_of(ids[id]))
    end
    -- two runs in one book is always an error
    report(string.format("the results the book quotes come from %d runs, not one: %s", #id_order,
      table.concat(parts, "; ")))
  end
  if #without > 0 then
    say(string.format("%d of %d results files the book quotes are not from a reference run "
      .. "(no '# run_id:' line; make reference writes them): %s", #without, #cited_order,
      list_of(without)))
  end
  -- one machine
  local machines, m_order = {}, {}
  for _, label in ipairs(cited_order) do
    local name = machine_described(cited_files[label])
    if not machines[name] then machines[name] = {}; m_order[#m_order + 1] = name end
    table.insert(machines[name], label)
  end
  if #m_order > 1 then
    local parts = {}
    for _, name in ipairs(m_order) do
      parts[#parts + 1] = string.format("%s (%d files)", name, #machines[name])
    end
    say(string.format("the results the book quotes come from %d machines: %s", #m_order,
      table.concat(parts, "; ")))
  end
  -- stale
  local missing = history_missing()
  if missing then
    io.stderr:write(string.format("book.lua: cannot tell which results files are stale (%s)\n",
      missing))
  else
    -- grouped by the change they predate: one line per stage
    local n_stale, groups, g_order, unsure = 0, {}, {}, {}
    for _, label in ipairs(cited_order) do
      local state, why, change = staleness(cited_files[label], label)
      if state == "stale" then
        n_stale = n_stale + 1
        local key = change.what
        if not groups[key] then
          groups[key] = { change = change, files = {} }; g_order[#g_order + 1] = key
        end
        table.insert(groups[key].files, basename(label) .. " " .. why)
      elseif state == "cannot tell" then
        unsure[#unsure + 1] = basename(label) .. " (" .. why .. ")"
      end
    end
    if n_stale > 0 then
      local lines = {}
      for _, key in ipairs(g_order) do
        local g = groups[key]
        lines[#lines + 1] = string.format("%s changed in %s (%s), after %s", key,
          g.change.commit:sub(1, 12), g.change.date, table.concat(g.files, ", "))
      end
      say(string.format("%d of %d results files the book quotes are stale, measured before the "
        .. "last change to the code they measure:\n  %s", n_stale, #cited_order,
        table.concat(lines, "\n  ")))
    end
    if #unsure > 0 then
      io.stderr:write(string.format("book.lua: cannot tell whether %d results file(s) are "
        .. "stale:\n  %s\n", #unsure, table.concat(unsure, "\n  ")))
    end
  end
  io.stderr:write(string.format("book.lua: %d results files quoted; reference machine (from "
    .. "their '#' lines): %s; run: %s\n", #cited_order,
    #m_order == 1 and m_order[1] or ("none: " .. #m_order .. " machines"),
    #id_order == 1 and id_order[1] or (#id_order == 0 and "none" or (#id_order .. " of them"))))
end

-- ---------------------------------------------------------------------
-- other machines: whole runs of other machines, each a folder of
-- plots/other/ holding what make reference wrote there, side by side with
-- the book's own run in one table (```{.other-machines}```): each run's
-- headline races, ours against PyTorch at its best.

local OTHER_COLUMNS = {
  { file = "stage-07-compare", model = "784-256-10", what = "MLP" },
  { file = "stage-08-compare", model = "cnn", what = "CNN" },
}

local function other_runs()
  local ok, out = pcall(pandoc.pipe, "sh",
    { "-c", "cd \"$1\" 2>/dev/null && ls -d */ 2>/dev/null", "sh", rooted(cfg.other) }, "")
  local dirs = {}
  for d in ((ok and out) or ""):gmatch("[^\n]+") do dirs[#dirs + 1] = (d:gsub("/$", "")) end
  table.sort(dirs)
  return dirs
end

local function other_machines_block(el)
  local heads = { "Machine", "Run" }
  for _, c in ipairs(OTHER_COLUMNS) do
    heads[#heads + 1] = c.what .. ", ours (s/epoch)"
    heads[#heads + 1] = c.what .. ", PyTorch (s/epoch)"
    heads[#heads + 1] = c.what .. ", ours ×"
  end
  local body = {}
  local function row(dir, label)
    local line, machine, run = {}, nil, nil
    for _, c in ipairs(OTHER_COLUMNS) do
      local path = join(dir, c.file .. ".csv")
      local ours, peer = "—", "—"
      local ratio = "—"
      if file_exists(rooted(path)) then
        local t = load_csv(path, path)
        machine = machine or machine_described(t)
        local id = t.meta.run_id or ""
        if run ~= nil and id ~= run then
          fail(string.format("%s: two runs in one folder (run ids '%s' and '%s'): a folder of "
            .. "%s holds one whole run", dir, run, id, cfg.other))
        end
        run = id
        local function value(fw, col)
          local rows = select_rows(t, parse_where("model=" .. c.model .. ",framework=" .. fw, t, path))
          if #rows ~= 1 then
            fail(string.format("%s: %d rows of model=%s, framework=%s; need one", path, #rows,
              c.model, fw))
          end
          return format_value(col, rows[1][col], nil)
        end
        ours, peer, ratio = value("ours", "seconds_per_epoch"), value("pytorch", "seconds_per_epoch"),
          value("ours", "vs_pytorch")
      end
      line[#line + 1] = ours; line[#line + 1] = peer; line[#line + 1] = ratio
    end
    if machine == nil then fail(string.format("%s: no %s.csv of any race", dir, OTHER_COLUMNS[1].file)) end
    -- a run without an id (from before make reference wrote one) goes by its folder
    if run == "" then run = label and "—" or basename(dir) end
    local cells = { cell(machine .. (label and (" (" .. label .. ")") or "")), cell(run) }
    for _, v in ipairs(line) do cells[#cells + 1] = cell(v) end
    body[#body + 1] = cells
  end
  row(cfg.data, "this book's")
  for _, d in ipairs(other_runs()) do row(join(cfg.other, d), nil) end
  local hcells, aligns, widths = {}, {}, {}
  for i, h in ipairs(heads) do
    hcells[i] = cell(h); aligns[i] = i <= 2 and pandoc.AlignLeft or pandoc.AlignRight; widths[i] = 0
  end
  local cap = inlines_of(el.attributes.caption)
  local st = pandoc.SimpleTable(cap, aligns, widths, hcells, body)
  local tbl = pandoc.utils.from_simple_table(st)
  tbl.attr = pandoc.Attr(el.identifier or "", { "results" })
  return tbl
end

local function mine_path(results)
  return join(cfg.results, results .. ".csv")
end

local function ref_path(results)
  return join(cfg.data, results .. ".csv")
end

-- Another machine's run enters the book only whole, in the table of other
-- machines: never a table or number of a chapter's own.
local function not_other(path)
  local dir = cfg.other:gsub("/+$", "") .. "/"
  if path:sub(1, #dir) == dir then
    fail(string.format("%s: a results file of another machine's run; those enter the book only "
      .. "through the table of other machines (```{.other-machines}```)", path))
  end
end

-- A table and the notes its file calls for, under it: OpenBLAS held back,
-- kernels untimed= names that its machine does not run. When where= selects
-- only such kernels, the note stands alone in place of the table.
local function noted_table(t, a, cap, label, id)
  local untimed = untimed_note(t, a.untimed, label)
  local blocks = {}
  if untimed == nil or #keep_last(select_rows(t, parse_where(a.where, t, label)), a.last, t,
      label) > 0 then
    blocks[1] = build_table(t, a, cap, label, id)
    blocks[2] = openblas_note(t)
  end
  for _, b in ipairs(untimed or {}) do blocks[#blocks + 1] = b end
  return blocks
end

local function table_block(el)
  local a = {}
  for k, v in pairs(el.attributes) do a[k] = v end
  local base = inlines_of(a.caption)
  local blocks
  if a.file and a.file ~= "" then
    not_other(a.file)
    local t = load_csv(a.file)
    provenance(t, a.file)
    local cap = base
    if reference ~= nil or (t.meta.cpu and t.meta.cpu ~= "") then
      cap = machine_caption(base, a.machine or "Reference machine", t)
    end
    blocks = noted_table(t, a, cap, a.file, el.identifier)
  else
    local results = a.results
    if results == nil or results == "" then
      fail("results-table needs results=\"stage-NN\" or file=\"path.csv\"")
    end
    local ref = load_csv(ref_path(results), ref_path(results))
    provenance(ref, ref_path(results))
    blocks = noted_table(ref, a, machine_caption(base, a.machine or "Reference machine", ref),
      ref_path(results), el.identifier)
    local mp = mine_path(results)
    if not cfg.check and (a.mine or "yes") ~= "no" and file_exists(rooted(mp)) then
      local ok, res = pcall(function()
        local mine = load_csv(mp, mp)
        return noted_table(mine, a, machine_caption(base, "Your machine", mine), mp,
          el.identifier ~= "" and (el.identifier .. "-mine") or "")
      end)
      if ok then
        for _, b in ipairs(res) do blocks[#blocks + 1] = b end
      else
        local msg = (type(res) == "table" and res.msg) or tostring(res)
        warn(msg .. " (your results table left out)")
      end
    end
  end
  if #blocks == 1 then return blocks[1] end
  return pandoc.Div(blocks, pandoc.Attr("", { "results-pair" }))
end

-- ---------------------------------------------------------------------
-- inline numbers

-- stat=: one number from a column over several rows.
local function summed_up(stat, col, rows, fmt, label)
  local xs = {}
  for _, r in ipairs(rows) do
    local x = tonumber(cell_value(r, col))
    if x == nil then
      fail(string.format("%s: stat=%s: column '%s' holds '%s', not a number", label, stat, col,
        tostring(cell_value(r, col))))
    end
    xs[#xs + 1] = x
  end
  local n, sum = #xs, 0
  for _, x in ipairs(xs) do sum = sum + x end
  local mean = sum / n
  if stat == "n" then return tostring(n) end
  local v
  if stat == "mean" then
    v = mean
  elseif stat == "sd" then
    if n < 2 then fail(string.format("%s: stat=sd needs two rows or more, where= selects %d", label, n)) end
    local ss = 0
    for _, x in ipairs(xs) do ss = ss + (x - mean) ^ 2 end
    v = math.sqrt(ss / (n - 1))
  elseif stat == "min" or stat == "max" then
    v = xs[1]
    for _, x in ipairs(xs) do
      if (stat == "min" and x < v) or (stat == "max" and x > v) then v = x end
    end
  else
    fail(string.format("%s: stat=\"%s\": the one values are mean, sd, min, max and n", label, stat))
  end
  return format_value(col, string.format("%.17g", v), fmt)
end

-- A `#` line's value. A key kept per ISA, named without one, is the widest
-- ISA's (fma_latency_cycles: fma_latency_cycles.avx2 on a machine without
-- AVX-512). A file from before isas and isa_best were written gets them
-- from its peak.ISA.1 lines.
local function meta_value(t, key)
  if t.meta[key] ~= nil then return t.meta[key] end
  local widest = signature(t).isa
  if key == "isa_best" then return widest end
  if key == "isas" then
    local list = {}
    for _, isa in ipairs({ "scalar", "avx2", "avx512", "neon" }) do
      if runs_isa(t, isa) then list[#list + 1] = isa end
    end
    return #list > 0 and table.concat(list, ",") or nil
  end
  return widest and t.meta[key .. "." .. widest] or nil
end

local function result_span(el)
  local a = el.attributes
  local t, label
  if a.file and a.file ~= "" then
    not_other(a.file)
    t, label = load_csv(a.file), a.file
  else
    local results = a.results
    if results == nil or results == "" then
      fail("result span needs results=\"stage-NN\" or file=\"path.csv\"")
    end
    label = ref_path(results)
    if a.source == "mine" and not cfg.check and file_exists(rooted(mine_path(results))) then
      label = mine_path(results)
    elseif a.source ~= nil and a.source ~= "mine" and a.source ~= "reference" then
      fail(string.format("%s: source= must be 'mine' or 'reference', not '%s'", label, a.source))
    end
    t = load_csv(label, label)
  end
  if label ~= mine_path(a.results or "") then provenance(t, label) end
  if a.meta == "machine" then
    -- the machine as the file's `#` lines name it (machine_described)
    return pandoc.Str(machine_described(t))
  end
  if a.meta and a.meta ~= "" then
    local v = meta_value(t, a.meta)
    if v == nil then fail(string.format("%s: no '# %s:' header line", label, a.meta)) end
    return pandoc.Str(v)
  end
  local col = a.column
  if col == nil or col == "" then fail(string.format("%s: result span needs column= or meta=", label)) end
  if col ~= "size" and not t.colset[col] then
    fail(string.format("%s: no column '%s' (columns: %s)", label, col, table.concat(t.cols, ",")))
  end
  local rows = keep_last(select_rows(t, parse_where(a.where, t, label)), a.last, t, label)
  if #rows == 0 then
    fail(string.format("%s: no row matches where=\"%s\"", label, a.where or ""))
  elseif a.stat and a.stat ~= "" then
    return pandoc.Str(summed_up(a.stat, col, rows, a.format, label))
  elseif #rows > 1 then
    fail(string.format("%s: %d rows match where=\"%s\"; need exactly one", label, #rows, a.where or ""))
  end
  local raw = cell_value(rows[1], col)
  if a.scale and a.scale ~= "" then
    -- scale="1e-6": bytes as megabytes, say; format= then formats the product
    local k, x = tonumber(a.scale), tonumber(raw)
    if k == nil then fail(string.format("%s: scale=\"%s\" is not a number", label, a.scale)) end
    if x == nil then fail(string.format("%s: scale= on column '%s', which holds '%s'", label, col, tostring(raw))) end
    local ok, s = pcall(string.format, a.format or "%g", x * k)
    if not ok then fail("bad format '" .. tostring(a.format) .. "'") end
    return pandoc.Str(s)
  end
  return pandoc.Str(format_value(col, raw, a.format))
end

-- ---------------------------------------------------------------------
-- races: a ratio with its range over rounds

-- n significant figures: with n = 2, 2.8, 0.94, 12, 120.
local function sig(x, n)
  if x == 0 then return "0" end
  local digits = n - 1 - math.floor(math.log(math.abs(x), 10))
  local s
  if digits > 0 then
    s = string.format("%." .. digits .. "f", x)
    -- rounding up to the next decade (0.996 -> 1.00) leaves a digit too many
    if math.abs(tonumber(s)) >= 10 ^ (n - digits) then s = string.format("%." .. (digits - 1) .. "f", x) end
  else
    local unit = 10 ^ (-digits)
    s = string.format("%.0f", math.floor(x / unit + 0.5) * unit)
  end
  return s
end

local function sig2(x) return sig(x, 2) end

-- The ratios of the rounds behind a result row: the rows where= selects
-- once its kernel= or model= value is NAME/roundN, less those whose round
-- ran slow (slow=1). Nil when the file keeps no rounds (no yardstick
-- column: measured before rounds were kept, whose round rows hold ratios
-- to the median) or keeps one.
local function round_ratios(t, conds, col, label)
  if not t.colset.yardstick or not t.colset.slow then return nil end
  local name_cond
  for _, c in ipairs(conds) do
    if c.col == "kernel" or c.col == "model" then name_cond = c end
  end
  if name_cond == nil or #name_cond.alts ~= 1 then
    fail(string.format("%s: race: where= must name one kernel= or model=, whose rounds it reads", label))
  end
  local name = name_cond.alts[1]
  local ratios = {}
  for _, row in ipairs(t.rows) do
    local n = row[name_cond.col]:match("^(.*)/round%d+$")
    if n == name and row.slow ~= "1" and meets(row, conds, name_cond) then
      local x = tonumber(row[col])
      if x == nil then
        fail(string.format("%s: race: round row %s holds '%s' in %s, not a number", label,
          row[name_cond.col], tostring(row[col]), col))
      end
      ratios[#ratios + 1] = x
    end
  end
  if #ratios < 2 then return nil end
  return ratios
end

-- A race's ratio and the range of its rounds (lo = hi = the ratio without
-- rounds), from results= or file=, where= and column=.
local function race_of(file, results, where, col)
  if (results == nil or results == "") and (file == nil or file == "") then
    fail("race span needs results=\"stage-NN\" or file=\"path.csv\"")
  end
  local label = (file and file ~= "") and file or ref_path(results)
  local t = load_csv(label, label)
  provenance(t, label)
  if col ~= "vs_openblas" and col ~= "vs_pytorch" then
    fail(string.format("%s: race: column= must be a ratio to the peer (vs_openblas, vs_pytorch), not '%s'",
      label, tostring(col)))
  end
  if not t.colset[col] then
    fail(string.format("%s: no column '%s' (columns: %s)", label, col, table.concat(t.cols, ",")))
  end
  local conds = parse_where(where, t, label)
  local rows = select_rows(t, conds)
  if #rows ~= 1 then
    fail(string.format("%s: %d rows match where=\"%s\"; need exactly one", label, #rows, where or ""))
  end
  local value = tonumber(rows[1][col])
  if value == nil then fail(string.format("%s: race: %s holds '%s', not a number", label, col, tostring(rows[1][col]))) end
  local ratios = round_ratios(t, conds, col, label)
  local lo, hi = value, value
  if ratios then
    lo, hi = math.huge, -math.huge
    for _, x in ipairs(ratios) do lo = math.min(lo, x); hi = math.max(hi, x) end
  end
  return { value = value, lo = lo, hi = hi, rounds = ratios ~= nil, label = label }
end

local function race_span(el)
  local a = el.attributes
  local r = race_of(a.file, a.results, a.where, a.column)
  local value, lo, hi, label = r.value, r.lo, r.hi, r.label
  local say = a.say or "ratio"
  if say == "verdict" and a.against then
    local file = a.against:match("%.csv$") and a.against or nil
    local o = race_of(file, not file and a.against or nil, a["against-where"], a.column)
    if lo > o.hi then return pandoc.Str(a.larger or "larger") end
    if hi < o.lo then return pandoc.Str(a.smaller or "smaller") end
    return pandoc.Str(a.even or "within the spread")
  elseif say == "verdict" then
    if lo > 1 then return pandoc.Str(a.faster or "faster") end
    if hi < 1 then return pandoc.Str(a.slower or "slower") end
    return pandoc.Str(a.even or "within the spread")
  elseif say ~= "ratio" then
    fail(string.format("%s: race: say= is 'ratio' or 'verdict', not '%s'", label, say))
  end
  if not r.rounds then return pandoc.Str(sig2(value) .. "×") end
  -- A range narrower than two figures show (1.10-1.15) gets a third.
  local low, high = sig2(lo), sig2(hi)
  if low == high and lo ~= hi then low, high = sig(lo, 3), sig(hi, 3) end
  return pandoc.Str(string.format("%s×, rounds %s–%s", sig2(value), low, high))
end

-- ---------------------------------------------------------------------
-- images

-- caption="drawn": the plot script wrote the figure's caption beside it
-- (build/plots/NAME.caption, Markdown), saying what it drew; the chapter
-- types none. Without the file (the plot not drawn yet) check mode goes on.
local function drawn_caption(el, src)
  local file = src:gsub("%.[sp][vn]g$", ".caption")
  local lines = read_lines(rooted(file))
  if lines == nil then
    if not cfg.check then
      fail(string.format("image %s: no caption %s, which its plot script writes (run 'make plots')",
        src, file))
    end
    return
  end
  local caption = inlines_of(table.concat(lines, "\n"))
  if #caption == 0 then fail(string.format("image %s: %s is empty", src, file)) end
  el.caption = caption
  el.title = "fig:"  -- alone in its paragraph: a figure with this caption
end

local function image(el)
  local src = el.src
  if src:match("^%a[%w+.-]*://") or src:match("^data:") then return nil end
  local drawn = false
  if el.attributes["caption"] ~= nil then
    if el.attributes["caption"] ~= "drawn" then
      fail(string.format("image %s: caption=\"%s\"; the one value is \"drawn\"", src,
        el.attributes["caption"]))
    end
    el.attributes["caption"] = nil
    drawn_caption(el, src)
    drawn = true
  end
  -- build/plots/stage-NN[-study][-reference].svg is drawn from
  -- plots/data/stage-NN[-study].csv by `make plots`.
  local stage = src:match("^build/plots/(stage%-[%w_%-]+)%.[sp][vn]g$")
  if stage then
    stage = stage:gsub("%-reference$", "")
  end
  -- A tape (run_spirals --dot) or a lazy graph (run_compiled --dot) is drawn
  -- from a Graphviz file, the same on every machine: no measured numbers, so
  -- no machine in its caption.
  local tape = stage and (stage:match("%-tape$") or stage:match("%-graph$"))
  if tape then
    local dot = ref_path(stage):gsub("%.csv$", ".dot")
    if not file_exists(rooted(dot)) then
      fail(string.format("image %s: no reference data %s to draw it from", src, dot))
    end
  end
  if stage and not tape then
    local ref = ref_path(stage)
    local mine = mine_path(stage)
    -- The training curves (stage-NN-train) are drawn from the comparison's
    -- curves when it ran, else from the training run's, yours before the
    -- reference's (tools/plot-lib.sh): the caption names the machine of
    -- the file they came from.
    local base = stage:match("^(stage%-%d%d)%-train$")
    if base and file_exists(rooted(ref_path(base .. "-compare-train"))) then
      ref = ref_path(base .. "-compare-train")
    end
    if base and file_exists(rooted(mine_path(base .. "-compare-train"))) then
      mine = mine_path(base .. "-compare-train")
    end
    if not file_exists(rooted(ref)) then
      fail(string.format("image %s: no reference data %s to draw it from", src, ref))
    end
    -- Drawn from your results when you have them (as `make plots` does),
    -- else from the reference: its caption names the machine (a drawn
    -- caption names it itself: the plot script knows what it drew from).
    local t = load_csv(ref, ref)
    provenance(t, ref)
    local who, data = "Reference machine", t
    if not cfg.check and not src:match("%-reference%.[sp][vn]g$") and file_exists(rooted(mine)) then
      local ok, m = pcall(load_csv, mine, mine)
      if ok then who, data = "Your machine", m end
    end
    if not drawn then
      if el.caption and #el.caption > 0 then
        el.caption:insert(pandoc.Str(" —"))
        el.caption:insert(pandoc.Space())
      end
      el.caption:insert(pandoc.Emph({ pandoc.Str(machine_name(who, data)) }))
    end
  end
  if cfg.plots_format and src:match("%.svg$") then
    local alt = src:gsub("%.svg$", "." .. cfg.plots_format)
    if stage or file_exists(rooted(alt)) then
      src = alt
      el.src = alt
    end
  end
  if not stage and not file_exists(rooted(src)) then
    fail(string.format("image %s: file not found", src))
  end
  if stage and not cfg.check and not file_exists(rooted(src)) then
    fail(string.format("image %s: not drawn yet (run 'make plots')", src))
  end
  return el
end

-- ---------------------------------------------------------------------
-- the passes

local function has_class(el, c)
  for _, x in ipairs(el.classes) do if x == c then return true end end
  return false
end

local function read_meta(meta)
  local function m(k) return meta[k] ~= nil and stringify(meta[k]) or nil end
  cfg.root = m("book-root") or cfg.root
  cfg.data = m("book-data") or cfg.data
  cfg.results = m("book-results") or cfg.results
  if meta["book-check"] ~= nil then cfg.check = truthy(meta["book-check"]) end
  cfg.edition = m("book-edition") or cfg.edition
  cfg.provenance = m("book-provenance") or cfg.provenance
  cfg.runs = m("book-runs") or cfg.runs
  if cfg.runs ~= "error" and cfg.runs ~= "warn" and cfg.runs ~= "off" then
    report(string.format("book-runs must be 'error', 'warn' or 'off', not '%s'", cfg.runs))
    cfg.runs = "off"
  end
  cfg.other = m("book-other") or cfg.other
  if cfg.provenance ~= "error" and cfg.provenance ~= "warn" and cfg.provenance ~= "off" then
    report(string.format("book-provenance must be 'error', 'warn' or 'off', not '%s'",
      cfg.provenance))
  end
  reference = read_reference(meta)
  if cfg.edition ~= "reader" and cfg.edition ~= "student" then
    report(string.format("book-edition must be 'reader' or 'student', not '%s'", cfg.edition))
    cfg.edition = "reader"
  end
  cfg.plots_format = m("plots-format")
  if cfg.plots_format == nil then
    local out = PANDOC_STATE and PANDOC_STATE.output_file
    if out and out:match("%.pdf$") then cfg.plots_format = "png" end
  end
  if cfg.plots_format == "svg" or cfg.plots_format == "" then cfg.plots_format = nil end
end

local function failed_block(msg)
  return pandoc.Para({ pandoc.Strong({ pandoc.Str("[book.lua error: " .. msg .. "]") }) })
end

local main = {
  CodeBlock = function(el)
    if el.attributes["include"] ~= nil then
      return guard(listing_block, el, "listing") or failed_block("listing")
    end
    if has_class(el, "other-machines") then
      return guard(other_machines_block, el, "other machines") or failed_block("other machines")
    end
    if has_class(el, "results-table") or has_class(el, "csv-table") then
      return guard(table_block, el, "table") or failed_block("table")
    end
    return nil
  end,
  Span = function(el)
    if has_class(el, "result") then
      return guard(result_span, el, "result") or pandoc.Strong({ pandoc.Str("[?]") })
    end
    if has_class(el, "race") then
      return guard(race_span, el, "race") or pandoc.Strong({ pandoc.Str("[?]") })
    end
    return nil
  end,
  Image = function(el)
    return guard(image, el, "image")
  end,
}

local finish = {
  Pandoc = function(doc)
    check_runs()
    if n_errors > 0 then
      error(string.format("book.lua: %d error%s (see above)", n_errors, n_errors == 1 and "" or "s"), 0)
    end
    return doc
  end,
}

return {
  { Meta = function(meta)
      read_meta(meta)
      -- The student edition says so on its title page.
      if cfg.edition == "student" and meta.title ~= nil then
        local sub = meta.subtitle and stringify(meta.subtitle) or ""
        meta.subtitle = pandoc.MetaInlines({ pandoc.Str(sub ~= "" and (sub .. " (student edition)")
          or "Student edition") })
        return meta
      end
      return nil
    end },
  main,
  finish,
}

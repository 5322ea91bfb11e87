#!/usr/bin/env python3
"""Check a results.json against the fields Gradescope's autograder
specification names, and print its scores.

    tools/check-results-json.py FILE [--expect-tests full|zero] [--expect-speed some|none|full]

The file: an object; `score` a number, or `tests` a list (or both); each
test an object with `score` and `max_score` numbers (0 ≤ score ≤ max_score
here), `name` and `output` strings, `visibility` one of visible, hidden,
after_due_date, after_published; an optional `leaderboard`, a list of
objects with a `name` string, a numeric `value` and an `order` of asc or
desc. --expect-tests: every task test at its max_score, or every one at 0;
--expect-speed: the speed test scored above 0, not at all, or in full.
Exits 1 with a line per problem.
"""
import json
import sys

VISIBILITY = {"visible", "hidden", "after_due_date", "after_published"}


def number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    path, opts = args[0], dict(zip(args[1::2], args[2::2]))
    problems = []
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check-results-json: {path}: {e}", file=sys.stderr)
        sys.exit(1)
    if not isinstance(data, dict):
        problems.append("the top level is not an object")
        data = {}
    if "score" not in data and "tests" not in data:
        problems.append("neither score nor tests")
    if "score" in data and not number(data["score"]):
        problems.append("score is not a number")
    tests = data.get("tests", [])
    if not isinstance(tests, list):
        problems.append("tests is not a list")
        tests = []
    for i, t in enumerate(tests):
        where = f"tests[{i}]"
        if not isinstance(t, dict):
            problems.append(f"{where} is not an object")
            continue
        for key in ("name", "output"):
            if not isinstance(t.get(key), str):
                problems.append(f"{where}.{key} is not a string")
        for key in ("score", "max_score"):
            if not number(t.get(key)):
                problems.append(f"{where}.{key} is not a number")
        if number(t.get("score")) and number(t.get("max_score")) and \
                not 0 <= t["score"] <= t["max_score"]:
            problems.append(f"{where}: score {t['score']} outside 0..{t['max_score']}")
        if t.get("visibility") not in VISIBILITY:
            problems.append(f"{where}.visibility is {t.get('visibility')!r}")
    for i, e in enumerate(data.get("leaderboard", [])):
        if not (isinstance(e, dict) and isinstance(e.get("name"), str) and number(e.get("value"))
                and e.get("order", "desc") in ("asc", "desc")):
            problems.append(f"leaderboard[{i}] lacks a name, a numeric value or an asc/desc order")
    tasks = [t for t in tests if isinstance(t, dict) and str(t.get("name", "")).startswith("task")
             and t.get("max_score")]
    speed = [t for t in tests if isinstance(t, dict) and t.get("name") == "speed"]
    want = opts.get("--expect-tests")
    if want == "full" and (not tasks or any(t["score"] != t["max_score"] for t in tasks)):
        problems.append("not every task test has its full score")
    if want == "zero" and (not tasks or any(t["score"] != 0 for t in tasks)):
        problems.append("a task test scored on a stub")
    want = opts.get("--expect-speed")
    s = speed[0]["score"] if speed else 0
    if want == "some" and not s > 0:
        problems.append("no speed score")
    if want == "none" and s != 0:
        problems.append(f"a speed score of {s}")
    if want == "full" and not (speed and s == speed[0]["max_score"] and s > 0):
        problems.append("the speed score is not full")
    for p in problems:
        print(f"check-results-json: {path}: {p}", file=sys.stderr)
    for t in tests:
        if isinstance(t, dict):
            print(f"{t.get('name')}: {t.get('score')} of {t.get('max_score')}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

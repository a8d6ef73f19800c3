#!/usr/bin/env python3
"""Grades single-point mutants of the exercises' solutions and says which the tests catch.

For each mutant of catalogue.py it copies the lesson's folder into a scratch assignment tree,
plants the change, grades it with `attn grade --format gradescope`, and compares every test's
status with the unchanged solution's: a mutant is killed by a visible test when some visible test
that passes on the solution fails, killed by hidden tests only when only hidden ones do, survives
when every test passes, and does not compile when the grader's "compiles" entry fails (reported
apart, never counted as killed). It prints one row per mutant and the totals.

    tests/mutation/mutate.py [--attn build/attn] [--jobs 2] [--lesson 03-softmax ...] [--json out]
                             [--lessons DIR]

attn grade takes only the exercise file from the tree it grades: the tests are the ones built into
the attn given (its share/attn/grader), so rebuild attn after changing a test or a fixture, and
measure older tests with an attn built from their commit. --lessons takes the solutions to mutate
from another copy of lessons/; the catalogue must still apply to it.

Not part of ctest: a full run grades some 190 trees (minutes on two cores).
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
LESSONS = os.path.join(SOURCE, "lessons")
sys.path.insert(0, HERE)
from catalogue import MUTANTS  # noqa: E402


def exercise_file(lesson):
    stem = lesson[3:].replace("-", "_")
    return os.path.join(LESSONS, lesson, stem + "_exercise.cpp")


def solution_spans(text):
    spans, at = [], 0
    while True:
        begin = text.find("// BEGIN SOLUTION", at)
        if begin < 0:
            return spans
        end = text.find("// END SOLUTION", begin)
        spans.append((begin, end))
        at = end


def locate(index, mutant):
    """The line of the mutant's original text; exits when it is not there exactly once, inside a
    solution block."""
    lesson, original, replacement, what = mutant
    path = exercise_file(lesson)
    if not os.path.isfile(path):
        sys.exit(f"mutant {index} ({what}): no lesson {lesson}")
    text = open(path, encoding="utf-8").read()
    first = text.find(original)
    if first < 0 or text.find(original, first + 1) >= 0:
        count = text.count(original)
        sys.exit(f"mutant {index} ({what}): its original text occurs {count} times in "
                 f"{path}, not once: make it longer")
    if not any(b <= first and first + len(original) <= e for b, e in solution_spans(text)):
        sys.exit(f"mutant {index} ({what}): its original text is outside the solution blocks")
    if original == replacement:
        sys.exit(f"mutant {index} ({what}): the replacement is the original")
    return text.count("\n", 0, first + len(original) - len(original.lstrip("\n"))) + 1


def grade(attn, lesson, source_text, scratch):
    """Grades `source_text` as the lesson's exercise: {test name: (status, visibility)}."""
    tree = tempfile.mkdtemp(dir=scratch)
    try:
        os.makedirs(os.path.join(tree, "lessons"))
        shutil.copytree(os.path.join(LESSONS, lesson),
                        os.path.join(tree, "lessons", lesson))
        path = os.path.join(tree, "lessons", lesson, os.path.basename(exercise_file(lesson)))
        with open(path, "w", encoding="utf-8") as out:
            out.write(source_text)
        results = os.path.join(tree, "results.json")
        subprocess.run([attn, "grade", "--dir", tree, "--lesson", lesson, "--format",
                        "gradescope", "--output", results],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        with open(results, encoding="utf-8") as report:
            tests = json.load(report)["tests"]
        return {t["name"]: (t["status"], t.get("visibility", "visible")) for t in tests}
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def classify(baseline, mutant):
    if any(name.endswith(": compiles") and status == "failed"
           for name, (status, _) in mutant.items()):
        return "no-compile", []
    failed = [name for name, (status, _) in mutant.items()
              if status != "passed" and baseline.get(name, ("", ""))[0] == "passed"]
    visible = [n for n in failed if mutant[n][1] == "visible"]
    if visible:
        return "visible", visible
    if failed:
        return "hidden", failed
    return "survived", []


def main():
    global LESSONS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attn", default=os.path.join(SOURCE, "build", "attn"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lesson", action="append", help="only these lessons (repeatable)")
    parser.add_argument("--json", help="also write every mutant's result here")
    parser.add_argument("--lessons", default=LESSONS, help="the lessons/ folder to mutate")
    args = parser.parse_args()
    LESSONS = os.path.abspath(args.lessons)
    if not os.access(args.attn, os.X_OK):
        sys.exit(f"mutate.py: no attn at {args.attn}: build it (cmake --build build --target "
                 "attn) or give --attn")

    rows = []
    for index, mutant in enumerate(MUTANTS, 1):
        line = locate(index, mutant)
        if args.lesson is None or mutant[0] in args.lesson:
            rows.append({"id": index, "lesson": mutant[0], "line": line, "what": mutant[3]})
    lessons = sorted({row["lesson"] for row in rows})

    started = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="attn-mutants-")
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            baselines = {}
            for lesson, result in zip(lessons, pool.map(
                    lambda l: grade(args.attn, l, open(exercise_file(l), encoding="utf-8").read(),
                                    scratch), lessons)):
                failing = [n for n, (s, _) in result.items() if s != "passed"]
                if not result or failing:
                    sys.exit(f"mutate.py: the unchanged solution of {lesson} does not pass: "
                             f"{failing or 'no tests'}")
                baselines[lesson] = result

            def run(row):
                lesson, original, replacement, _ = MUTANTS[row["id"] - 1]
                text = open(exercise_file(lesson), encoding="utf-8").read()
                result = grade(args.attn, lesson, text.replace(original, replacement, 1), scratch)
                row["result"], row["failed"] = classify(baselines[lesson], result)
                return row

            for row in pool.map(run, rows):
                first = row["failed"][0].split(": ", 1)[-1] if row["failed"] else ""
                print(f"{row['id']:4d}  {row['lesson']:<24} {row['line']:4d}  "
                      f"{row['result']:<10}  {row['what']}" + (f"  [{first}]" if first else ""),
                      flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    seconds = time.monotonic() - started

    counted = [r for r in rows if r["result"] != "no-compile"]
    killed = [r for r in counted if r["result"] in ("visible", "hidden")]
    visible = [r for r in counted if r["result"] == "visible"]
    print()
    print(f"{'lesson':<24} mutants  killed  visible  hidden  survived  no-compile")
    for lesson in lessons:
        mine = [r for r in rows if r["lesson"] == lesson]
        count = {k: sum(r["result"] == k for r in mine)
                 for k in ("visible", "hidden", "survived", "no-compile")}
        print(f"{lesson:<24} {len(mine):7d}  {count['visible'] + count['hidden']:6d}  "
              f"{count['visible']:7d}  {count['hidden']:6d}  {count['survived']:8d}  "
              f"{count['no-compile']:10d}")
    total = max(len(counted), 1)
    print(f"\n{len(counted)} mutants that compile ({len(rows) - len(counted)} do not): "
          f"{len(killed)} killed ({100 * len(killed) / total:.1f}%), "
          f"{len(visible)} by a visible test ({100 * len(visible) / total:.1f}%), "
          f"{len(counted) - len(killed)} survived; {seconds:.0f} s")
    survivors = [r for r in counted if r["result"] == "survived"]
    for r in survivors:
        print(f"  survived: {r['id']} {r['lesson']}:{r['line']} {r['what']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"seconds": round(seconds), "mutants": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

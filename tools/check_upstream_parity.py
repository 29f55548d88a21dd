#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks vmetrics' families against the `vllm:` families upstream registers at one commit.

Reads the parity list (tests/fixtures/upstream_families_<commit>.tsv, written by
tools/extract_upstream_families.py from vLLM's source at that commit), the exclusions
(tests/fixtures/upstream_families_exclusions.tsv: name, then why it does not apply to vmetrics)
and what `vmetrics metrics-reference` prints (every family vmetrics can register, with every
option on). Fails, listing each, when an upstream family that is not excluded

  - is not in the reference (by the name a scrape shows: counters with `_total`);
  - has another type;
  - has other label names (compared as sets: the exposition sorts labels, so their order is not
    observable; skipped where the list has `?`, labels built at run time);
  - has other HELP text (skipped where the list has `<runtime>`);

and when an exclusion names no upstream family (a stale exclusion hides nothing and must go).
Families vmetrics has beyond upstream's are not this check's business.

Usage:
    check_upstream_parity.py --families TSV --exclusions TSV (--vmetrics BINARY | --reference MD)
    check_upstream_parity.py --self-test      (the checker on built-in inputs: it can fail)
"""

import argparse
import re
import subprocess
import sys

RUNTIME = "<runtime>"


def read_tsv(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            rows.append([c.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")
                         for c in line.split("\t")])
    return rows


def parse_reference(text):
    """{exposed name: (type, label set, help)} from the reference's tables (first row of a
    name wins: a family fed by several metrics has a row per metric, all alike)."""
    families = {}
    for line in text.splitlines():
        if not line.startswith("| `vllm:"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        name = cells[0].strip("`")
        if name in families:
            continue
        labels_cell = cells[2]
        # Drop parenthesised notes (eager values, which source feeds a label, ...).
        depth, kept = 0, ""
        for ch in labels_cell:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(0, depth - 1)
            elif depth == 0:
                kept += ch
        labels = frozenset(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", kept))
        families[name] = (cells[1], labels, cells[4].replace("\\|", "|"))
    return families


def check(upstream, exclusions, reference):
    """Problems, one line each."""
    problems = []
    names = {row[0] for row in upstream}
    excluded = {}
    for row in exclusions:
        if len(row) < 2 or not row[1].strip():
            problems.append(f"exclusion {row[0]}: no reason given")
        excluded[row[0]] = row[1] if len(row) > 1 else ""
    for name in excluded:
        if name not in names:
            problems.append(f"exclusion {name}: upstream registers no such family (stale)")
    for row in upstream:
        name, kind, labels, help_text = row[0], row[1], row[2], row[3]
        if name in excluded:
            continue
        exposed = name + "_total" if kind == "counter" else name
        have = reference.get(exposed)
        if have is None:
            problems.append(f"{exposed}: registered upstream ({row[4]}), not by vmetrics")
            continue
        if have[0] != kind:
            problems.append(f"{exposed}: type {have[0]}, upstream {kind}")
        if labels != "?":
            want = frozenset(label for label in labels.split(",") if label)
            if have[1] != want:
                problems.append(f"{exposed}: labels {sorted(have[1])}, upstream {sorted(want)}")
        if help_text != RUNTIME and have[2] != help_text.replace("\n", " "):
            problems.append(f"{exposed}: HELP {have[2]!r}, upstream {help_text!r}")
    return problems


def self_test():
    reference = parse_reference(
        "| `vllm:a_total` | counter | `model_name`, `engine`, `x` (`p`, `q`) |  | A \\| b. | s |\n"
        "| `vllm:g` | gauge | `model_name`, `engine` |  | G. | always | s |\n")
    upstream = [["vllm:a", "counter", "engine,model_name,x", "A | b.", "f", "w"],
                ["vllm:g", "gauge", "model_name,engine", RUNTIME, "f", "w"]]
    failures = []
    if check(upstream, [], reference):
        failures.append("matching families reported: " + str(check(upstream, [], reference)))
    cases = {
        "missing family": ([["vllm:m", "gauge", "", "M.", "f", "w"]], []),
        "other type": ([["vllm:g", "counter", "model_name,engine", "G.", "f", "w"]], []),
        "other labels": ([["vllm:g", "gauge", "model_name", "G.", "f", "w"]], []),
        "other help": ([["vllm:g", "gauge", "model_name,engine", "H.", "f", "w"]], []),
        "stale exclusion": (upstream, [["vllm:gone", "a reason"]]),
        "exclusion without reason": ([["vllm:m", "gauge", "", "M.", "f", "w"]],
                                     [["vllm:m", ""]]),
    }
    for what, (families, exclusions) in cases.items():
        if not check(families, exclusions, reference):
            failures.append(f"{what}: not reported")
    if check([["vllm:m", "gauge", "", "M.", "f", "w"]], [["vllm:m", "not served"]], reference):
        failures.append("an excluded family was reported")
    for failure in failures:
        print("check_upstream_parity self-test FAILED: " + failure, file=sys.stderr)
    if not failures:
        print(f"check_upstream_parity self-test: {len(cases) + 2} cases pass")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families")
    parser.add_argument("--exclusions")
    parser.add_argument("--vmetrics", help="the vmetrics binary (runs metrics-reference)")
    parser.add_argument("--reference", help="a saved metrics reference instead")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.families or not args.exclusions or not (args.vmetrics or args.reference):
        parser.error("--families, --exclusions and --vmetrics or --reference are required")
    if args.vmetrics:
        text = subprocess.run([args.vmetrics, "metrics-reference"], check=True,
                              capture_output=True, text=True).stdout
    else:
        with open(args.reference, encoding="utf-8") as f:
            text = f.read()
    upstream = read_tsv(args.families)
    exclusions = read_tsv(args.exclusions)
    problems = check(upstream, exclusions, parse_reference(text))
    for problem in problems:
        print("FAIL: " + problem, file=sys.stderr)
    if problems:
        print(f"check_upstream_parity: {len(problems)} problem(s); fix the family table, or list "
              "the family with its reason in the exclusions file", file=sys.stderr)
        return 1
    print(f"check_upstream_parity: {len(upstream)} upstream families, {len(exclusions)} excluded, "
          "the rest registered alike")
    return 0


if __name__ == "__main__":
    sys.exit(main())

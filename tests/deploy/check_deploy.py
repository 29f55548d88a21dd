#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks on deploy/ that promtool and Grafana do not make: the conventions of the rules and
the dashboard, and that the rules' unit tests can fail.

    check_deploy.py aggregations RULES.yml DASHBOARD.json
    check_deploy.py runbooks RULES.yml OPERATOR_GUIDE.md
    check_deploy.py mutations PROMTOOL RULES.yml RULES_TEST.yml

aggregations  Every PromQL aggregation (sum, max, count, ... in prefix form) of the rules and
              of the dashboard's panel targets keeps `job` and `instance` (`by (job,
              instance, ...)`, or a `without (...)` that names neither): in a disaggregated
              prefill/decode deployment both sides share model_name and engine, so anything
              coarser mixes machines. A recording rule's level (before the first colon) is
              its `by` labels joined with "_" (`le` left out), and every `by` in it is the
              same list. The dashboard has `job` and `instance` variables (multi-valued,
              "All" = `.*`), every selector of a vllm:/vmetrics_ metric in a panel matches
              `job=~"$job"` and `instance=~"$instance"`, and the other label_values()
              variables are filtered by both.
runbooks      Every alert has a `runbook_url` annotation of the form
              RUNBOOK_BASE#<alert name in lower case>, and OPERATOR_GUIDE.md has a heading
              with that anchor (GitHub's heading ids).
mutations     Runs `promtool test rules` on copies of the rules with `instance` (then `job`)
              removed from every `by (...)`: every test group named "prefill/decode
              instances ..." (then "prefill/decode jobs ...") must fail, or the tests could
              not tell two machines with the same model_name and engine apart.

Exit 0 when the check passes, 1 with one line per problem. Standard library plus PyYAML
(Debian's python3-yaml).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

# The documented placeholder every runbook_url starts with (docs/operator-guide.md,
# "Runbooks"): operators point it at where they publish the guide with one sed.
RUNBOOK_BASE = "https://vmetrics.example/docs/operator-guide.md"

AGGREGATORS = ("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
               "count_values", "bottomk", "topk", "quantile")
AGGREGATION_RE = re.compile(
    r"\b(?P<op>%s)\s*(?:(?P<kind>by|without)\s*\((?P<labels>[^)]*)\)\s*)?\(" %
    "|".join(AGGREGATORS))
SUFFIX_GROUPING_RE = re.compile(r"\)\s*(?:by|without)\s*\(")
METRIC_RE = re.compile(r"(?<![\w:])(vllm:[A-Za-z0-9_:]+|vmetrics_[A-Za-z0-9_]+)")
KEPT = ("job", "instance")


def load_rules(path):
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    for group in doc.get("groups", []):
        for rule in group.get("rules", []):
            yield group["name"], rule


def check_expr_aggregations(where, expr, problems):
    """Returns the label lists of the expression's `by` clauses; reports what loses job or
    instance."""
    if SUFFIX_GROUPING_RE.search(expr):
        problems.append("%s: write the grouping before the aggregation (`sum by (...) (x)`)"
                        % where)
    by_lists = []
    for m in AGGREGATION_RE.finditer(expr):
        labels = [l.strip() for l in (m.group("labels") or "").split(",") if l.strip()]
        if m.group("kind") is None:
            problems.append("%s: `%s(...)` aggregates job and instance away; use `%s by (%s, "
                            "...)`" % (where, m.group("op"), m.group("op"), ", ".join(KEPT)))
        elif m.group("kind") == "by":
            missing = [k for k in KEPT if k not in labels]
            if missing:
                problems.append("%s: `%s by (%s)` drops %s" % (
                    where, m.group("op"), ", ".join(labels), " and ".join(missing)))
            by_lists.append(labels)
        else:
            dropped = [k for k in KEPT if k in labels]
            if dropped:
                problems.append("%s: `%s without (%s)` drops %s" % (
                    where, m.group("op"), ", ".join(labels), " and ".join(dropped)))
    return by_lists


def check_aggregations(rules_path, dashboard_path):
    problems = []
    for group, rule in load_rules(rules_path):
        name = rule.get("record") or rule.get("alert")
        where = "%s: %s" % (os.path.basename(rules_path), name)
        by_lists = check_expr_aggregations(where, rule["expr"], problems)
        if "record" in rule:
            level = rule["record"].split(":")[0]
            kept = [[l for l in labels if l != "le"] for labels in by_lists]
            if not kept:
                problems.append("%s: a recording rule without `by (...)`" % where)
            elif any(k != kept[0] for k in kept):
                problems.append("%s: its `by` clauses keep different labels: %s" % (where, kept))
            elif level != "_".join(kept[0]):
                problems.append("%s: level %r, but the rule keeps %s (level %r)" % (
                    where, level, ", ".join(kept[0]), "_".join(kept[0])))

    with open(dashboard_path, encoding="utf-8") as f:
        dashboard = json.load(f)
    dash = os.path.basename(dashboard_path)
    variables = {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}
    for name in KEPT:
        v = variables.get(name)
        if v is None:
            problems.append("%s: no template variable %r" % (dash, name))
        elif not (v.get("multi") and v.get("includeAll") and v.get("allValue") == ".*"):
            problems.append("%s: variable %r must be multi-valued with All = .*" % (dash, name))
    for name, v in variables.items():
        if v.get("type") != "query" or name == "job":
            continue
        query = v.get("definition", "")
        wanted = ["$job"] + (["$instance"] if name != "instance" else [])
        missing = [w for w in wanted if w not in query]
        if missing:
            problems.append("%s: variable %r (%s) is not filtered by %s" % (
                dash, name, query, ", ".join(missing)))

    def walk(panels):
        for panel in panels or []:
            yield panel
            yield from walk(panel.get("panels"))

    targets = 0
    for panel in walk(dashboard.get("panels")):
        for target in panel.get("targets") or []:
            expr = target.get("expr")
            if not expr:
                continue
            targets += 1
            where = "%s: panel %r target %s" % (dash, panel.get("title"), target.get("refId"))
            check_expr_aggregations(where, expr, problems)
            for m in METRIC_RE.finditer(expr):
                rest = expr[m.end():]
                selector = rest[1:rest.find("}")] if rest.startswith("{") else ""
                for label in KEPT:
                    if '%s=~"$%s"' % (label, label) not in selector:
                        problems.append('%s: %s is not filtered by %s=~"$%s"' % (
                            where, m.group(1), label, label))
    if targets == 0:
        problems.append("%s: no panel targets" % dash)
    return problems


def heading_anchors(markdown):
    """GitHub's ids for the Markdown headings: lower case, punctuation other than `-` and `_`
    dropped, spaces to `-`, repeats suffixed -1, -2, ..."""
    anchors, seen, fenced = set(), {}, False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else "%s-%d" % (slug, n))
    return anchors


def check_runbooks(rules_path, guide_path):
    problems = []
    with open(guide_path, encoding="utf-8") as f:
        guide = f.read()
    anchors = heading_anchors(guide)
    if RUNBOOK_BASE not in guide:
        problems.append("%s does not document the runbook base %s" % (guide_path, RUNBOOK_BASE))
    alerts = 0
    for group, rule in load_rules(rules_path):
        if "alert" not in rule:
            continue
        alerts += 1
        name = rule["alert"]
        url = (rule.get("annotations") or {}).get("runbook_url")
        want = "%s#%s" % (RUNBOOK_BASE, name.lower())
        if url is None:
            problems.append("%s: no runbook_url annotation" % name)
        elif url != want:
            problems.append("%s: runbook_url %r, want %r" % (name, url, want))
        if name.lower() not in anchors:
            problems.append("%s: %s has no heading with anchor #%s" % (
                name, os.path.basename(guide_path), name.lower()))
    if alerts == 0:
        problems.append("%s: no alerts" % rules_path)
    return problems


def drop_label_from_by(text, label):
    def rewrite(m):
        labels = [l.strip() for l in m.group(1).split(",") if l.strip() != label]
        return "by (%s)" % ", ".join(labels)
    return re.sub(r"\bby\s*\(([^)]*)\)", rewrite, text)


def check_mutations(promtool, rules_path, test_path):
    problems = []
    with open(rules_path, encoding="utf-8") as f:
        rules = f.read()
    with open(test_path, encoding="utf-8") as f:
        test_doc = yaml.safe_load(f)
    rule_file_name = test_doc["rule_files"][0]
    groups = [t["name"] for t in test_doc["tests"]]
    work = tempfile.mkdtemp(prefix="vmetrics-rules-mutation.")
    try:
        shutil.copy(test_path, os.path.join(work, "rules.test.yml"))
        for label, prefix in (("instance", "prefill/decode instances "),
                              ("job", "prefill/decode jobs ")):
            guarded = [g for g in groups if g.startswith(prefix)]
            if not guarded:
                problems.append("%s: no test group named %r..." % (test_path, prefix))
                continue
            mutated = drop_label_from_by(rules, label)
            if mutated == rules:
                problems.append("no `by (...)` in %s keeps %s" % (rules_path, label))
                continue
            with open(os.path.join(work, rule_file_name), "w", encoding="utf-8") as f:
                f.write(mutated)
            run = subprocess.run([promtool, "test", "rules", "rules.test.yml"], cwd=work,
                                 capture_output=True, text=True)
            output = run.stdout + run.stderr
            failed = set(re.findall(r"^\s*name: (.*),\s*$", output, re.MULTILINE))
            if run.returncode == 0:
                problems.append("rules without `%s` in their `by (...)` pass every test" % label)
            for g in guarded:
                if g not in failed:
                    problems.append("test group %r passes with `%s` removed from every "
                                    "`by (...)`" % (g, label))
            if "FAILED" not in output:
                problems.append("promtool did not run the tests:\n%s" % output)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return problems


def main(argv):
    commands = {"aggregations": (check_aggregations, 2), "runbooks": (check_runbooks, 2),
                "mutations": (check_mutations, 3)}
    if len(argv) < 2 or argv[1] not in commands or len(argv) != 2 + commands[argv[1]][1]:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    fn, _ = commands[argv[1]]
    problems = fn(*argv[2:])
    for p in problems:
        print("check_deploy %s: %s" % (argv[1], p), file=sys.stderr)
    if problems:
        return 1
    print("check_deploy %s: ok" % argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

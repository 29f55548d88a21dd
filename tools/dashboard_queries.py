#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Prints every PromQL expression of a Grafana dashboard, ready to send to Prometheus.

    tools/dashboard_queries.py [DASHBOARD.json] [--rate-interval 1m] [--drop-variable-matchers]
                               [--variables] [--format lines|tsv|json]

DASHBOARD defaults to deploy/grafana/vmetrics-kv-transfer.json. Every `expr` of every panel
target (rows, collapsed rows and library-less nested panels included) is printed once per line,
in dashboard order, with Grafana's variables resolved the way "All" would resolve them:

  * query/custom template variables ($model_name, ${engine}, ${engine:regex}, [[engine]]) become
    the regex `.*`, which is what the dashboard's "All" (allValue ".*") sends; the dashboard
    uses them only inside `=~` matchers. With --drop-variable-matchers a matcher such as
    `engine=~"$engine"` is removed instead (and an emptied `{}` with it);
  * $__rate_interval and $__interval become --rate-interval (default 1m), $__range becomes
    --range (default 1h), and $__range_s / $__interval_ms their numeric forms.

Whitespace runs (including newlines in multi-line expressions) collapse to one space, so each
expression is exactly one line. Disabled targets ("hide": true) are skipped. A `$` left after
substitution (an unknown variable) is an error: exit status 1, naming the panel.

With --variables the template variables' queries are printed instead of the panels': each
`label_values(SELECTOR, LABEL)` becomes `count by (LABEL) (SELECTOR)` (resolved as above), which
has data exactly when Grafana's drop-down would offer values; the "panel" is the variable's name
and the refId its label.

--format tsv prints "panel title<TAB>refId<TAB>expr"; --format json prints a list of
{"panel", "refId", "expr"} objects. Used by the end-to-end test that evaluates each expression
against a Prometheus scraping `vmetrics serve`. Standard library only (Debian's /usr/bin/python3).
"""

import argparse
import json
import os
import re
import signal
import sys

DEFAULT_DASHBOARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy",
                                 "grafana", "vmetrics-kv-transfer.json")

# Grafana's variable reference syntaxes: $name, ${name}, ${name:format}, [[name]], [[name:format]].
VARIABLE_RE = re.compile(
    r"\$\{(?P<b>\w+)(?::[^}]*)?\}|\[\[(?P<s>\w+)(?::[^\]]*)?\]\]|\$(?P<p>\w+)")

# Duration in Grafana/Prometheus form (1m, 30s, 1h30m) -> seconds.
DURATION_RE = re.compile(r"^(?:\d+(?:ms|s|m|h|d|w|y))+$")
DURATION_PART_RE = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(text):
    return sum(int(n) * UNIT_SECONDS[u] for n, u in DURATION_PART_RE.findall(text))


def walk_panels(panels):
    """Yields panels depth-first in dashboard order (row children follow their row)."""
    for panel in panels or []:
        yield panel
        yield from walk_panels(panel.get("panels"))


def template_variable_names(dashboard):
    """Names of the dashboard variables that expand to label values (not the data source)."""
    names = set()
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") in ("query", "custom", "textbox", "constant", "interval"):
            names.add(variable["name"])
    return names


def drop_variable_matchers(expr, names):
    """Removes label matchers whose value is a variable reference, then empty braces."""
    reference = r"(?:\$\{(?:%s)(?::[^}]*)?\}|\[\[(?:%s)(?::[^\]]*)?\]\]|\$(?:%s)\b)" % (
        ("|".join(map(re.escape, names)),) * 3)
    matcher = r'\s*\w+\s*(?:=~|!~|!=|=)\s*"%s"\s*' % reference
    expr = re.sub(r",%s(?=[,}])" % matcher, "", expr)   # `, engine=~"$engine"`
    expr = re.sub(r"(?<=\{)%s,?" % matcher, "", expr)   # `{engine=~"$engine", ...` or `{...}`
    return re.sub(r"\{\s*\}", "", expr)


LABEL_VALUES_RE = re.compile(
    r"^\s*label_values\(\s*(?:(?P<selector>.*\S)\s*,\s*)?(?P<label>\w+)\s*\)\s*$", re.DOTALL)


def variable_queries(dashboard):
    """(name, label, PromQL) for each query variable whose query is label_values(...)."""
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") != "query":
            continue
        query = variable.get("query")
        if isinstance(query, dict):
            query = query.get("query", "")
        m = LABEL_VALUES_RE.match(query or variable.get("definition", ""))
        if not m:
            continue
        label = m.group("label")
        selector = m.group("selector") or '{%s!=""}' % label
        yield variable["name"], label, "count by (%s) (%s)" % (label, selector)


def resolve(expr, names, args):
    builtins = {
        "__rate_interval": args.rate_interval,
        "__interval": args.rate_interval,
        "__interval_ms": str(int(duration_seconds(args.rate_interval) * 1000)),
        "__range": args.range,
        "__range_s": str(int(duration_seconds(args.range))),
        "__range_ms": str(int(duration_seconds(args.range) * 1000)),
    }
    if args.drop_variable_matchers and names:
        expr = drop_variable_matchers(expr, names)

    def substitute(match):
        name = match.group("b") or match.group("s") or match.group("p")
        if name in builtins:
            return builtins[name]
        if name in names:
            return ".*"
        return match.group(0)  # left in place; reported below

    expr = VARIABLE_RE.sub(substitute, expr)
    return " ".join(expr.split())


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends us quietly
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dashboard", nargs="?", default=DEFAULT_DASHBOARD)
    parser.add_argument("--rate-interval", default="1m",
                        help="value of $__rate_interval and $__interval (default 1m)")
    parser.add_argument("--range", default="1h", help="value of $__range (default 1h)")
    parser.add_argument("--drop-variable-matchers", action="store_true",
                        help="remove matchers on template variables instead of matching .*")
    parser.add_argument("--variables", action="store_true",
                        help="print the template variables' label_values() queries instead")
    parser.add_argument("--format", choices=("lines", "tsv", "json"), default="lines")
    args = parser.parse_args()
    for flag, value in (("--rate-interval", args.rate_interval), ("--range", args.range)):
        if not DURATION_RE.match(value):
            parser.error("%s: %r is not a duration such as 30s, 1m, 1h" % (flag, value))

    with open(args.dashboard, encoding="utf-8") as f:
        dashboard = json.load(f)
    names = template_variable_names(dashboard)

    if args.variables:
        queries = [(name, label, expr) for name, label, expr in variable_queries(dashboard)]
    else:
        queries = [(panel.get("title", "(untitled)"), target.get("refId", ""), target["expr"])
                   for panel in walk_panels(dashboard.get("panels"))
                   for target in panel.get("targets") or []
                   if not target.get("hide") and target.get("expr")]
    found = []
    errors = []
    for title, ref_id, raw in queries:
        expr = resolve(raw, names, args)
        if "$" in expr or "[[" in expr:
            errors.append("%s %r %s: unresolved variable in %r" % (
                "variable" if args.variables else "panel", title, ref_id or "?", expr))
            continue
        found.append({"panel": title, "refId": ref_id, "expr": expr})

    if args.format == "json":
        json.dump(found, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for q in found:
            if args.format == "tsv":
                print("%s\t%s\t%s" % (q["panel"], q["refId"], q["expr"]))
            else:
                print(q["expr"])
    for e in errors:
        print("dashboard_queries: " + e, file=sys.stderr)
    if not found and not errors:
        print("dashboard_queries: no PromQL expressions in %s" % args.dashboard, file=sys.stderr)
        return 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

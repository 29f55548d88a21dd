#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Every `vllm:` Prometheus family vLLM registers at one commit, read from its source.

Reads the Python files of vLLM at COMMIT from a git repository (a bare mirror will do) with
`git show`, parses each with `ast` (nothing of it is imported, run or copied), and writes one
line per family to OUT (tests/fixtures/upstream_families_<commit>.tsv):

    name  type  labels  help  gate  where

What counts as a registration:
  - a call whose callee name holds Counter, Gauge or Histogram (prometheus_client's classes,
    vLLM's `self._counter_cls`, `self._gauge_cls`, `self._histogram_cls`, ...) with a `name`
    (keyword or first argument) that resolves to a string starting with `vllm:`;
  - an `Offloading{Counter,Gauge,Histogram}Metadata(...)` value in a dict whose key resolves to
    such a string (the offloading specs' and connector's metric definitions, which
    OffloadPromMetrics registers with the per-engine labels in front of the metadata's own).

Resolution is static: string constants, implicit concatenation, `+` of resolvable parts,
module constants and class attributes (`CPUOffloadingMetrics.CPU_CACHE_USAGE_PERC`) of any
file read. A label list is resolved from list/tuple literals, `+`, and local assignments in the
enclosing function; the per-engine list the stat loggers pass down as `labelnames` (a
parameter, or `self._labelnames`) is the literal `labelnames = [...]` assigned in
vllm/v1/metrics/loggers.py, found the same way. What cannot be resolved is written as `?`
(labels) or `<runtime>` (help), and the TSV comment says so; a counter's name is given as
registered (prometheus_client adds `_total` when it renders).

The gate is the chain of `if` conditions (source text) that encloses the registration inside
its function, after `Class.function`; the metadata entries give the dict's enclosing function.
A family registered at several places gets one line, the first place's fields filled in from
the others where it had `?` / `<runtime>`, every place listed in `where`.

Usage (docs/contributing.md, "The upstream parity list"):
    /usr/bin/python3 tools/extract_upstream_families.py --repo /path/to/vllm.git \\
        --commit 6adad087 [--out tests/fixtures/upstream_families_6adad087.tsv]
"""

import argparse
import ast
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PER_ENGINE_SOURCE = "vllm/v1/metrics/loggers.py"
METADATA_TYPES = {"OffloadingCounterMetadata": "counter", "OffloadingGaugeMetadata": "gauge",
                  "OffloadingHistogramMetadata": "histogram"}
RUNTIME = "<runtime>"


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True).stdout


def metric_type(callee):
    """The type a constructor's name says: prometheus_client's `Counter`, `Gauge`,
    `Histogram` (or a class ending so), or vLLM's `_counter_cls`-style attributes; not the
    stats payload's `increase_counter`, `set_gauge`, `observe_histogram`."""
    for kind in ("counter", "gauge", "histogram"):
        if callee.endswith(kind.capitalize()) or callee.strip("_") == kind + "_cls":
            return kind
    return None


def callee_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def target_text(node):
    """`x` or `self.x` for an assignment target, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "self":
        return "self." + node.attr
    return None


class Constants:
    """Module constants (by file) and class string attributes (by class name) of every file."""

    def __init__(self):
        self.module = {}   # (path, name) -> str
        self.classes = {}  # (class, attr) -> str

    def collect(self, path, tree):
        for node in tree.body:
            self._assign(node, lambda name, value: self.module.__setitem__((path, name), value))
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    self._assign(item, lambda name, value, c=node.name:
                                 self.classes.__setitem__((c, name), value))

    @staticmethod
    def _assign(node, put):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            put(node.targets[0].id, node.value.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            put(node.target.id, node.value.value)


class Extractor(ast.NodeVisitor):
    def __init__(self, path, constants, per_engine):
        self.path = path
        self.constants = constants
        self.per_engine = per_engine
        self.stack = []          # enclosing class/function names
        self.conditions = []     # enclosing if conditions (source text)
        self.functions = []      # enclosing function nodes
        self.found = []
        self.pair_lists = {}     # local name -> [(list node, conditions)]
        self.in_metadata = False  # recording an Offloading...Metadata entry

    # ---- resolution -------------------------------------------------------------------------

    def string(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.string(node.left), self.string(node.right)
            return a + b if a is not None and b is not None else None
        if isinstance(node, ast.Name):
            if (self.path, node.id) in self.constants.module:
                return self.constants.module[(self.path, node.id)]
            local = self.local_value(node.id)
            return self.string(local) if isinstance(local, ast.Constant) else None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "self":
                local = self.local_value("self." + node.attr)
                return self.string(local) if isinstance(local, ast.Constant) else None
            return self.constants.classes.get((node.value.id, node.attr))
        return None

    def local_value(self, name):
        """The last plain assignment of `name` in the enclosing function, if any."""
        if not self.functions:
            return None
        value = None
        for node in ast.walk(self.functions[-1]):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    target_text(node.targets[0]) == name:
                value = node.value
        return value

    def labels(self, node, depth=0):
        if node is None:
            return []
        if depth > 5:
            return None
        if isinstance(node, (ast.List, ast.Tuple)):
            out = [self.string(e) for e in node.elts]
            return None if any(v is None for v in out) else out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.labels(node.left, depth + 1), self.labels(node.right, depth + 1)
            return a + b if a is not None and b is not None else None
        if isinstance(node, ast.Call) and callee_name(node.func) == "list" and node.args:
            return self.labels(node.args[0], depth + 1)
        if isinstance(node, ast.Name):
            local = self.local_value(node.id)
            if local is not None:
                return self.labels(local, depth + 1)
            if node.id == "labelnames":
                return list(self.per_engine) if self.per_engine is not None else None
        if isinstance(node, ast.Attribute) and node.attr in ("_labelnames", "labelnames"):
            return list(self.per_engine) if self.per_engine is not None else None
        return None

    # ---- context ----------------------------------------------------------------------------

    def gate(self):
        where = ".".join(self.stack) or "<module>"
        return "; ".join([where] + ["if " + c for c in self.conditions])

    def visit_ClassDef(self, node):
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    def visit_FunctionDef(self, node):
        self.stack.append(node.name)
        self.functions.append(node)
        saved, self.conditions = self.conditions, []
        self.generic_visit(node)
        self.conditions = saved
        self.functions.pop()
        self.stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node):
        test = ast.unparse(node.test)
        self.visit(node.test)
        self.conditions.append(test)
        for child in node.body:
            self.visit(child)
        self.conditions.pop()
        if node.orelse:
            self.conditions.append("not (" + test + ")")
            for child in node.orelse:
                self.visit(child)
            self.conditions.pop()

    # ---- registrations ----------------------------------------------------------------------

    def keyword(self, call, name, position=None):
        for kw in call.keywords:
            if kw.arg == name:
                return kw.value
        if position is not None and len(call.args) > position:
            return call.args[position]
        return None

    def help_text(self, node):
        if node is None:
            return RUNTIME
        text = self.string(node)
        return text if text is not None else RUNTIME

    def record(self, name, kind, labels, help_text, line):
        if kind == "counter" and name.endswith("_total"):
            name = name[:-len("_total")]
        self.found.append({"name": name, "type": kind, "metadata": self.in_metadata,
                           "labels": "?" if labels is None else ",".join(labels),
                           "help": help_text, "gate": self.gate(),
                           "where": f"{self.path}:{line}"})

    def visit_Assign(self, node):
        # A local list of (name, documentation) pairs, kept with the conditions it is assigned
        # under, for a constructor that iterates it (SpecDecodingProm's counter_specs).
        target = target_text(node.targets[0]) if len(node.targets) == 1 else None
        if target is not None and isinstance(node.value, ast.List):
            self.pair_lists.setdefault(target, []).append((node.value, list(self.conditions)))
        self.metadata_assign(node)
        self.generic_visit(node)

    def loop_pairs(self, name_node, doc_node):
        """The (name, doc, conditions) a constructor's `name=<loop variable>` takes, when the
        variable comes from `for name, doc in <local list of pairs>` around it."""
        if not isinstance(name_node, ast.Name) or not self.functions:
            return []
        for node in ast.walk(self.functions[-1]):
            generators = node.generators if isinstance(
                node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) else \
                [node] if isinstance(node, ast.For) else []
            for gen in generators:
                if not isinstance(gen.target, ast.Tuple) or not isinstance(gen.iter, ast.Name):
                    continue
                names = [e.id if isinstance(e, ast.Name) else None for e in gen.target.elts]
                if name_node.id not in names:
                    continue
                ni = names.index(name_node.id)
                di = names.index(doc_node.id) if isinstance(doc_node, ast.Name) and \
                    doc_node.id in names else None
                out = []
                for value, conditions in self.pair_lists.get(gen.iter.id, []):
                    for element in value.elts:
                        if not isinstance(element, ast.Tuple):
                            continue
                        name = self.string(element.elts[ni])
                        doc = self.string(element.elts[di]) if di is not None else None
                        if name is not None:
                            out.append((name, doc if doc is not None else RUNTIME,
                                        conditions))
                return out
        return []

    def visit_Call(self, node):
        kind = metric_type(callee_name(node.func))
        if kind is not None and callee_name(node.func) not in METADATA_TYPES:
            name_node = self.keyword(node, "name", 0)
            doc_node = self.keyword(node, "documentation", 1)
            labels = self.labels(self.keyword(node, "labelnames", 2))
            name = self.string(name_node) if name_node is not None else None
            if name is not None and name.startswith("vllm:"):
                self.record(name, kind, labels, self.help_text(doc_node), node.lineno)
            elif name is None:
                for pair_name, doc, conditions in self.loop_pairs(name_node, doc_node):
                    if not pair_name.startswith("vllm:"):
                        continue
                    saved, self.conditions = self.conditions, conditions + self.conditions
                    self.record(pair_name, kind, labels, doc, node.lineno)
                    self.conditions = saved
        self.generic_visit(node)

    def visit_Dict(self, node):
        for key, value in zip(node.keys, node.values):
            if key is None or not isinstance(value, ast.Call):
                continue
            kind = METADATA_TYPES.get(callee_name(value.func))
            name = self.string(key)
            if kind is None or name is None or not name.startswith("vllm:"):
                continue
            self.metadata(name, kind, value)
        self.generic_visit(node)

    def metadata_assign(self, node):
        # definitions[NAME] = Offloading...Metadata(...) (a spec adding an entry)
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Subscript) and isinstance(node.value, ast.Call):
            kind = METADATA_TYPES.get(callee_name(node.value.func))
            name = self.string(target.slice)
            if kind is not None and name is not None and name.startswith("vllm:"):
                self.metadata(name, kind, node.value)

    def metadata(self, name, kind, call):
        extra = self.labels(self.keyword(call, "labelnames"))
        labels = None if extra is None or self.per_engine is None else self.per_engine + extra
        self.in_metadata = True
        self.record(name, kind, labels, self.help_text(self.keyword(call, "documentation")),
                    call.lineno)
        self.in_metadata = False


def per_engine_labels(tree):
    """The literal `labelnames = [...]` of loggers.py's stat logger (the per-engine labels)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and node.targets[0].id == "labelnames" \
                and isinstance(node.value, ast.List) and \
                all(isinstance(e, ast.Constant) for e in node.value.elts):
            return [e.value for e in node.value.elts]
    return None


def merge(found):
    """One entry per family, in first-seen order. A constructor call says how a family is
    registered; a metadata entry only what it declares (OffloadPromMetrics registers the
    deprecated trio's metadata with an extra `transfer_type` label), so a call's labels and gate
    win over an entry's."""
    out = {}
    for entry in found:
        have = out.get(entry["name"])
        if have is None:
            out[entry["name"]] = dict(entry)
            continue
        if have["metadata"] and not entry["metadata"]:
            for key in ("type", "labels", "gate"):
                if entry[key] != "?":
                    have[key] = entry[key]
            have["metadata"] = False
        if have["labels"] == "?":
            have["labels"] = entry["labels"]
        if have["help"] == RUNTIME:
            have["help"] = entry["help"]
        have["where"] += " " + entry["where"]
    return list(out.values())


def cell(text):
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", required=True, help="a git repository holding vLLM's history")
    parser.add_argument("--commit", required=True)
    parser.add_argument("--out")
    args = parser.parse_args()
    commit = git(args.repo, "rev-parse", "--verify", args.commit + "^{commit}").strip()
    out = args.out or os.path.join(REPO, "tests/fixtures",
                                   f"upstream_families_{args.commit}.tsv")
    paths = [p for p in git(args.repo, "ls-tree", "-r", "--name-only", commit, "vllm/").split("\n")
             if p.endswith(".py")]
    trees = {}
    constants = Constants()
    for path in paths:
        source = git(args.repo, "show", f"{commit}:{path}")
        if "vllm:" not in source and "Metrics" not in source:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        trees[path] = tree
        constants.collect(path, tree)
    per_engine = per_engine_labels(trees[PER_ENGINE_SOURCE]) if PER_ENGINE_SOURCE in trees \
        else None
    found = []
    for path, tree in trees.items():
        extractor = Extractor(path, constants, per_engine)
        extractor.visit(tree)
        found += extractor.found
    families = merge(found)
    unresolved = [f["name"] for f in families if f["labels"] == "?" or f["help"] == RUNTIME]
    with open(out, "w", encoding="utf-8") as f:
        f.write("# Every `vllm:` family vLLM registers at vllm-project/vllm " + commit + ",\n")
        f.write("# extracted by tools/extract_upstream_families.py from the source at that "
                "commit (static reading:\n# see the script). Counter names as registered "
                "(rendered with `_total`); labels in\n# registration order; gate: enclosing "
                "Class.function and the `if` conditions around the registration.\n")
        if unresolved:
            f.write("# Not resolvable from the source alone (`?` labels or `<runtime>` HELP, "
                    "built at run time): " + ", ".join(unresolved) + "\n")
        else:
            f.write("# Every name, label list and HELP resolved statically.\n")
        f.write("# name\ttype\tlabels\thelp\tgate\twhere\n")
        for fam in families:
            f.write("\t".join(cell(fam[k]) for k in ("name", "type", "labels", "help", "gate",
                                                       "where")) + "\n")
    print(f"extract_upstream_families: {len(families)} families at {commit[:12]} -> "
          f"{os.path.relpath(out, REPO)}" + (f" ({len(unresolved)} not fully resolved)"
                                           if unresolved else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

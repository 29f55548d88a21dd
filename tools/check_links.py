#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""check_links.py: fails when a link or path in the docs or in code comments does not resolve
inside the repository.

Usage:
  tools/check_links.py [--root DIR]   check the git checkout at DIR (default: this script's repo)
  tools/check_links.py --self-test    run the checker on built-in good and bad inputs

Exit status: 0 nothing found, 1 findings (one line each: file:line: rule: what), 2 usage,
77 DIR is not a git checkout (ctest's skip code; the file list comes from `git ls-files`).

What is read. Every file git tracks, except generated test data (tests/golden/, fuzz/corpus/,
and files with a data extension such as .msgpack, .frames, .txt, .jsonl, .tsv, .json):
  * Markdown (*.md): all of it. Fenced code blocks count for paths but hold no links or
    headings.
  * Source files (C/C++, Python, shell, CMake, Make, YAML, and extensionless scripts by their
    #! line): comments only. C/C++ `//` and `/* */` outside string literals; `#` comments of
    the others; Python docstrings (every triple-quoted string).

The rules:
  link     A Markdown link `[text](target)` or `[text]: target` whose target is not a URL must
           name a tracked file or directory, relative to the linking file; a `#anchor` must be
           a heading of the target (GitHub's anchor rule: lower case, punctuation dropped,
           spaces to hyphens, -1, -2 ... for repeats).
  path     A repo-relative path must exist. A token is a repo-relative path when its first
           component is a top-level directory of the repository (src/, include/, tests/,
           docs/, tools/, bench/, fuzz/, deploy/, examples/, cmake/, .ci/ ... as tracked
           today) or a near miss of one (doc or test, without the s). It may use wildcards:
           `*`, `...`, a `<placeholder>` and `{a,b}` each stand for any text, and the path must
           then match at least one tracked file. A path that .gitignore covers (bench/captures/,
           fuzz/out/) is a build output and is accepted.
           Paths of OTHER repositories are not checked: a path whose first component is not
           one of ours (vllm/v1/metrics/loggers.py, prometheus_client/exposition.py,
           rust/src/...) is never taken for one of ours, and a line that names an upstream
           repository listed in UPSTREAM_REPOSITORIES (vllm-project/vllm,
           prometheus/client_python, ...) is a citation: its paths belong to that repository,
           so an upstream path that starts like one of ours (vLLM's tests/...) must be written
           on the same line as its repository.
  section  `X.md §N` (or §N.M, and every further §N on the line after it) must name a numbered
           heading ("## 3. ...", "### 3.2 ...") of X.md, found relative to the file, then to
           the repository root. A `§` with no .md file before it on its line is flagged unless
           the line names an RFC.
  escape   A relative path that starts with ../ (a link target, or in a comment) must stay
           inside the repository, and name a tracked file or directory relative to the file
           it is written in.
  outside  Planning notes kept outside the repository must not be referred to at all: every
           tracked text file is searched (not only comments) for the names in
           OUTSIDE_DOCUMENTS. The repository explains itself in docs/.
"""

import argparse
import fnmatch
import io
import os
import re
import subprocess
import sys
import tempfile
import tokenize

# Repositories whose paths may appear on a citation line; extend when citing another one.
UPSTREAM_REPOSITORIES = (
    "vllm-project/vllm",
    "prometheus/client_python",
    "prometheus/prometheus",
    "prometheus/common",
    "prometheus/exporter-toolkit",
    "trallnag/prometheus-fastapi-instrumentator",
    "jcrist/msgspec",
    "msgpack/msgpack-c",
    "zeromq/libzmq",
    "zeromq/cppzmq",
    "google/leveldb",
    "abseil/abseil-cpp",
    "envoyproxy/envoy",
)

# Names of documents that live outside the repository (written so that this file does not
# mention them itself).
OUTSIDE_DOCUMENTS = [re.compile(p) for p in (
    r"\bDESIGN" r"\.md\b",
    r"\bSTYLE" r"\.md\b",
    r"python-frontend" r"-metrics\.md",
    r"python-kv-connector" r"-metrics\.md",
    r"rust-frontend" r"-metrics\.md",
    r"cpp-eco" r"system\.md",
    r"shared" r"/spec\b",
    r"\.\./shared" r"/",
    r"wire-generations" r"/",
)]
NEAR_MISS_ROOTS = ("doc", "test")
DATA_EXTENSIONS = (".msgpack", ".frames", ".txt", ".om", ".jsonl", ".tsv", ".json", ".pem",
                   ".crt", ".key", ".png", ".svg")
DATA_DIRS = ("tests/golden/", "fuzz/corpus/")
CPP_EXTENSIONS = (".h", ".hh", ".hpp", ".c", ".cc", ".cpp", ".cxx")
HASH_EXTENSIONS = (".sh", ".cmake", ".yml", ".yaml", ".toml", ".in", ".cfg", ".supp")
HASH_NAMES = ("CMakeLists.txt", "Makefile", ".gitignore", ".clang-format", ".clang-tidy")
SKIP_FILES = ("LICENSE",)


class Finding:
    def __init__(self, path, line, rule, message):
        self.path, self.line, self.rule, self.message = path, line, rule, message

    def __str__(self):
        return f"{self.path}:{self.line}: {self.rule}: {self.message}"


# ---- reading files ------------------------------------------------------------------------------

def kind_of(path, text):
    """'md', 'cpp', 'py', 'hash' or None (not read)."""
    name = os.path.basename(path)
    if name in SKIP_FILES:
        return None
    if path.endswith(".md"):
        return "md"
    if any(path.startswith(d) for d in DATA_DIRS):
        return None
    if name in HASH_NAMES:
        return "hash"
    if path.endswith(DATA_EXTENSIONS):
        return None
    if path.endswith(CPP_EXTENSIONS):
        return "cpp"
    if path.endswith(".py"):
        return "py"
    if path.endswith(HASH_EXTENSIONS):
        return "hash"
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        return "py" if "python" in first else "hash"
    return None


def cpp_comments(text):
    """[(line, text)] of every // and /* */ comment, string and char literals skipped."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append((line, text[i + 2:end]))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            for k, part in enumerate(text[i + 2:end].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, end)
            i = end + 2
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'R"([^(\s]{0,16})\(', text[i:])
            if not m:
                i += 1
                continue
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            line += text.count("\n", i, end)
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def hash_comments(text):
    out = []
    for number, raw in enumerate(text.split("\n"), 1):
        m = re.search(r"(^|\s)#", raw)
        if m:
            out.append((number, raw[m.end():]))
    return out


def python_comments(text):
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string[1:]))
            elif tok.type == tokenize.STRING and re.match(r"^[rRbBuUfF]*('''|\"\"\")", tok.string):
                for k, part in enumerate(tok.string.split("\n")):
                    out.append((tok.start[0] + k, part))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return hash_comments(text)
    return out


def markdown_lines(text):
    """[(line, text, in_fence)] of a Markdown file."""
    out, fence = [], None
    for number, raw in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(```|~~~)", raw)
        if m:
            fence = None if fence == m.group(1) else (fence or m.group(1))
            out.append((number, raw, True))
            continue
        out.append((number, raw, fence is not None))
    return out


# ---- the repository -----------------------------------------------------------------------------

class Repo:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        listing = subprocess.run(["git", "-C", self.root, "ls-files", "-z"],
                                 capture_output=True, check=True).stdout.decode()
        self.files = sorted(f for f in listing.split("\0") if f)
        self.file_set = set(self.files)
        self.dirs = set()
        for f in self.files:
            parts = f.split("/")
            for k in range(1, len(parts)):
                self.dirs.add("/".join(parts[:k]))
        self.roots = sorted({f.split("/")[0] for f in self.files if "/" in f})
        self.headings = {}
        self.ignored = {}

    def exists(self, rel):
        rel = os.path.normpath(rel).replace(os.sep, "/")
        if rel == ".":
            return True
        return rel in self.file_set or rel in self.dirs

    def is_ignored(self, rel):
        if rel not in self.ignored:
            # A directory pattern (/bench/captures/) matches only a path that ends in "/" when
            # the directory does not exist, so both forms are asked.
            result = subprocess.run(["git", "-C", self.root, "check-ignore", "-q", "--no-index",
                                     "--stdin"], input=f"{rel}\n{rel.rstrip('/')}/\n".encode(),
                                    capture_output=True)
            self.ignored[rel] = result.returncode == 0
        return self.ignored[rel]

    def read(self, rel):
        try:
            with open(os.path.join(self.root, rel), encoding="utf-8") as f:
                return f.read()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            return None

    def heading_info(self, rel):
        """(anchors, section numbers) of a tracked Markdown file."""
        if rel not in self.headings:
            anchors, numbers, seen = set(), set(), {}
            text = self.read(rel) or ""
            for _, raw, in_fence in markdown_lines(text):
                m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", raw)
                if in_fence or not m:
                    continue
                title = m.group(2)
                slug = github_slug(title)
                count = seen.get(slug, 0)
                seen[slug] = count + 1
                anchors.add(slug if count == 0 else f"{slug}-{count}")
                number = re.match(r"^(\d+(?:\.\d+)*)\.?\s", title)
                if number:
                    numbers.add(number.group(1))
            self.headings[rel] = (anchors, numbers)
        return self.headings[rel]


def github_slug(title):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


# ---- the rules ----------------------------------------------------------------------------------

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
SECTION = re.compile(r"§\s*(\d+(?:\.\d+)*)")
MD_FILE = re.compile(r"([\w./-]*\w\.md)\b")


def path_pattern(roots):
    names = "|".join(re.escape(r) for r in sorted(set(roots) | set(NEAR_MISS_ROOTS), key=len,
                                                  reverse=True))
    return re.compile(r"(?<![\w.\-/])(?:\./)?((?:" + names +
                      r")/(?:[\w.\-+*~/]|<[\w .-]+>|\{[\w.,*-]+\})*)")


def wildcard_regex(path):
    """A regex for a path with `*`, `...`, `<x>` and `{a,b}`, or None without wildcards."""
    if not re.search(r"[*{<]|\.\.\.", path):
        return None
    out, i = "", 0
    while i < len(path):
        if path.startswith("...", i):
            out, i = out + ".*", i + 3
        elif path[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif path[i] == "<":
            j = path.index(">", i)
            out, i = out + ".*", j + 1
        elif path[i] == "{":
            j = path.index("}", i)
            out += "(?:" + "|".join(re.escape(a) for a in path[i + 1:j].split(",")) + ")"
            i = j + 1
        else:
            out, i = out + re.escape(path[i]), i + 1
    return re.compile(out + "/?")


def check_path(repo, rel_file, line, token, findings):
    path = token.rstrip(".")
    if not path or path.endswith("/..") or "/../" in path:
        return
    regex = wildcard_regex(path)
    if regex is not None:
        candidates = repo.files + sorted(repo.dirs)
        if any(regex.fullmatch(c) or regex.fullmatch(c + "/") for c in candidates):
            return
        if repo.is_ignored(re.split(r"[*{<]|\.\.\.", path)[0] or path):
            return
        findings.append(Finding(rel_file, line, "path", f"{path}: matches no tracked file"))
        return
    bare = path.rstrip("/")
    if repo.exists(bare) or repo.is_ignored(path):
        return
    findings.append(Finding(rel_file, line, "path", f"{path}: no such file or directory"))


def check_escape(repo, rel_file, line, target, findings):
    full = os.path.normpath(os.path.join(repo.root, os.path.dirname(rel_file), target))
    if not (full == repo.root or full.startswith(repo.root + os.sep)):
        findings.append(Finding(rel_file, line, "escape",
                                f"{target}: leaves the repository"))
        return None
    return os.path.relpath(full, repo.root).replace(os.sep, "/")


def check_link(repo, rel_file, line, target, findings):
    if URL.match(target) or target.startswith("//"):
        return
    path, _, anchor = target.partition("#")
    if path:
        rel = check_escape(repo, rel_file, line, path, findings)
        if rel is None:
            return
        if not repo.exists(rel):
            findings.append(Finding(rel_file, line, "link", f"{target}: no such file"))
            return
    else:
        rel = rel_file
    if anchor and rel.endswith(".md"):
        anchors, _ = repo.heading_info(rel)
        if anchor not in anchors:
            findings.append(Finding(rel_file, line, "link",
                                    f"{target}: no heading with anchor #{anchor} in {rel}"))


def resolve_md(repo, rel_file, name):
    for candidate in (os.path.join(os.path.dirname(rel_file), name), name):
        candidate = os.path.normpath(candidate).replace(os.sep, "/")
        if candidate in repo.file_set:
            return candidate
    return None


def check_sections(repo, rel_file, line, text, findings):
    if "§" not in text:
        return
    for m in SECTION.finditer(text):
        before = text[:m.start()]
        docs = MD_FILE.findall(before)
        if not docs:
            if not re.search(r"\bRFC\s*\d+", text):
                findings.append(Finding(rel_file, line, "section",
                                        f"§{m.group(1)} names no document on its line"))
            continue
        doc = resolve_md(repo, rel_file, docs[-1])
        if doc is None:
            findings.append(Finding(rel_file, line, "section",
                                    f"{docs[-1]} §{m.group(1)}: no such file"))
            continue
        _, numbers = repo.heading_info(doc)
        if m.group(1) not in numbers:
            findings.append(Finding(rel_file, line, "section",
                                    f"{doc} has no section {m.group(1)}"))


def check_prose(repo, rel_file, line, text, paths, findings, links):
    """The rules that apply to comment text and Markdown text."""
    cites_upstream = any(u in text for u in UPSTREAM_REPOSITORIES)
    scan = text
    if links:
        for m in LINK.finditer(text):
            check_link(repo, rel_file, line, m.group(1), findings)
        m = REF_LINK.match(text)
        if m:
            check_link(repo, rel_file, line, m.group(1), findings)
        scan = LINK.sub(lambda m: m.group(0)[:m.group(0).rfind("](")] + "]", text)
    for m in re.finditer(r"(?<![\w.])(\.\./[\w./-]*\w)", scan):
        rel = check_escape(repo, rel_file, line, m.group(1), findings)
        if rel is not None and not repo.exists(rel) and not repo.is_ignored(rel):
            findings.append(Finding(rel_file, line, "path",
                                    f"{m.group(1)}: no such file or directory"))
    if not cites_upstream:
        for m in paths.finditer(scan):
            check_path(repo, rel_file, line, m.group(1), findings)
    # A § inside a link's text is the link's business (its target is checked above).
    check_sections(repo, rel_file, line, LINK.sub("", text) if links else text, findings)


def check_file(repo, rel, paths, findings, check_outside=True):
    text = repo.read(rel)
    if text is None:
        return
    if check_outside and os.path.basename(rel) not in SKIP_FILES:
        for number, raw in enumerate(text.split("\n"), 1):
            for pattern in OUTSIDE_DOCUMENTS:
                m = pattern.search(raw)
                if m:
                    findings.append(Finding(rel, number, "outside",
                                            f"'{m.group(0)}' is not in this repository; point "
                                            "into docs/ or at the upstream source"))
    kind = kind_of(rel, text)
    if kind == "md":
        for number, raw, in_fence in markdown_lines(text):
            check_prose(repo, rel, number, raw, paths, findings, links=not in_fence)
        return
    lines = {"cpp": cpp_comments, "py": python_comments, "hash": hash_comments}.get(kind)
    if lines is None:
        return
    for number, comment in lines(text):
        check_prose(repo, rel, number, comment, paths, findings, links=False)


def run(root, outside_exempt=()):
    repo = Repo(root)
    paths = path_pattern(repo.roots)
    findings = []
    for rel in repo.files:
        check_file(repo, rel, paths, findings, check_outside=rel not in outside_exempt)
    return findings


# ---- self-test ----------------------------------------------------------------------------------

SELF_TEST_FILES = {
    ".gitignore": "/bench/captures/\n",
    "README.md": "# Top\n\nSee [the guide](docs/guide.md#2-second-part) and `src/a.cc`.\n",
    "docs/guide.md": "\n".join([
        "# Guide",                                                                        # 1
        "## 1. First",                                                                    # 2
        "## 2. Second part",                                                              # 3
        "### 2.1 Detail",                                                                 # 4
        "Good: [up](../README.md), [self](#1-first), `tests/*_test.cc`, `src/{a,b}.cc`,",  # 5
        "`tests/<x>_test.cc`, `bench/captures`, guide.md §2.1 and §1, [§2](#2-second-part).",  # 6
        "Upstream: `tests/entrypoints/test_metrics.py` at vllm-project/vllm 6adad087,",   # 7
        "`vllm/v1/metrics/loggers.py`, `fuzz/x.cc` (fuzz is no root here), RFC 9110 §5.1.",  # 8
        "```",                                                                            # 9
        "# not a heading, and [not](a-link.md)",                                          # 10
        "make && tools/run.sh",                                                           # 11
        "```",                                                                            # 12
        "Bad: [gone](missing.md), [anchor](#not-a-heading), [out](../../etc/passwd),",    # 13
        "`src/missing.cc`, `doc/guide.md`, `tests/*.py`, guide.md §3,",                   # 14
        "`tests/entrypoints/test_metrics.py` with its repository on the next line,",     # 15
        "a section without its document: §2,",                                            # 16
        "and the notes at ../sha" "red/spec/DESIGN" ".md.",                                  # 17
        ""]),
    "src/a.cc": "\n".join([
        "// Good: src/b.cc, docs/guide.md §2, \"tests/a_test.cc\", ./tools/run.sh.",      # 1
        "const char* kUrl = \"x//src/missing.cc\";  // a string is not a comment",         # 2
        "/* Bad: tests/missing.h, ../../notes.md and docs/guide.md §9. */",               # 3
        "int main() { return 0; }  // Bad: see STYLE" ".md",                              # 4
        ""]),
    "src/b.cc": "// nothing to see\n",
    "tests/a_test.cc": "// tests/a_test.cc\n",
    "tools/run.sh": "#!/bin/sh\n# Good: src/a.cc. Bad: tools/missing.sh\necho src/missing.cc\n",
    "tools/gen.py": ('"""Docstring: src/b.cc and src/nothing.py."""\n'
                     'X = "src/not_a_comment.cc"  # Bad: docs/none.md\n'),
}

SELF_TEST_EXPECTED = {
    ("docs/guide.md", 13, "link", "missing.md: no such file"),
    ("docs/guide.md", 13, "link",
     "#not-a-heading: no heading with anchor #not-a-heading in docs/guide.md"),
    ("docs/guide.md", 13, "escape", "../../etc/passwd: leaves the repository"),
    ("docs/guide.md", 14, "path", "src/missing.cc: no such file or directory"),
    ("docs/guide.md", 14, "path", "doc/guide.md: no such file or directory"),
    ("docs/guide.md", 14, "path", "tests/*.py: matches no tracked file"),
    ("docs/guide.md", 14, "section", "docs/guide.md has no section 3"),
    ("docs/guide.md", 15, "path", "tests/entrypoints/test_metrics.py: no such file or directory"),
    ("docs/guide.md", 16, "section", "§2 names no document on its line"),
    ("docs/guide.md", 17, "path", "../sha" "red/spec/DESIGN" ".md: no such file or directory"),
    ("src/a.cc", 3, "escape", "../../notes.md: leaves the repository"),
    ("src/a.cc", 3, "path", "tests/missing.h: no such file or directory"),
    ("src/a.cc", 3, "section", "docs/guide.md has no section 9"),
    ("tools/run.sh", 2, "path", "tools/missing.sh: no such file or directory"),
    ("tools/gen.py", 1, "path", "src/nothing.py: no such file or directory"),
    ("tools/gen.py", 2, "path", "docs/none.md: no such file or directory"),
}
SELF_TEST_OUTSIDE = {("docs/guide.md", 17), ("src/a.cc", 4)}


def self_test():
    with tempfile.TemporaryDirectory(prefix="check_links.") as tmp:
        for rel, text in SELF_TEST_FILES.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                f.write(text)
        subprocess.run(["git", "init", "-q", tmp], check=True)
        subprocess.run(["git", "-C", tmp, "add", "-A"], check=True)
        findings = run(tmp)
    got = {(f.path, f.line, f.rule, f.message) for f in findings if f.rule != "outside"}
    outside = {(f.path, f.line) for f in findings if f.rule == "outside"}
    ok = True
    for missing in sorted(SELF_TEST_EXPECTED - got):
        print("self-test: NOT FOUND:", ":".join(map(str, missing)))
        ok = False
    for extra in sorted(got - SELF_TEST_EXPECTED):
        print("self-test: UNEXPECTED:", ":".join(map(str, extra)))
        ok = False
    if outside != SELF_TEST_OUTSIDE:
        print("self-test: outside-document findings", sorted(outside), "expected",
              sorted(SELF_TEST_OUTSIDE))
        ok = False
    print("check_links self-test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if subprocess.run(["git", "-C", args.root, "rev-parse", "--is-inside-work-tree"],
                      capture_output=True).returncode != 0:
        print(f"check_links: {args.root} is not a git checkout; nothing checked")
        return 77
    # This file names the outside documents in order to find them.
    findings = run(args.root, outside_exempt=("tools/check_links.py",))
    for f in findings:
        print(f)
    if findings:
        print(f"check_links: {len(findings)} finding(s); see the rules in tools/check_links.py")
        return 1
    print("check_links: every link and path resolves inside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_clang_tidy.sh [--tests] [--jobs N] [--changed REV] [--slice K/N | --rotate N] [BUILD_DIR]
#                   [-- FILE...]
#
# Runs clang-tidy (.clang-tidy at the top of the tree) over every tracked src/**/*.cc that
# BUILD_DIR/compile_commands.json compiles (default BUILD_DIR: build; configure it first, e.g.
# `make build`), N files at a time (default: the number of cores). With --tests, tests/**/*.cc
# too. FILE... checks just those files. Findings in our own headers (include/, src/, and
# tests/ with --tests) are reported once, however many files include them.
#
# A part of the tree instead of all of it (CI: docs/contributing.md, "clang-tidy"):
#   --changed REV  the .cc files changed since REV (git diff REV), and for every header changed
#                  under include/ or src/ one .cc that includes it (from BUILD_DIR's compiler
#                  depfiles, so BUILD_DIR must be built; else from a direct #include); every
#                  file when .clang-tidy itself changed
#   --slice K/N    every N-th of the remaining files, from the K-th (0 <= K < N)
#   --rotate N     --slice K/N with K = the number of commits to HEAD modulo N: N consecutive
#                  commits cover every file
#
# Prints every finding (file:line:col: warning: ... [check]) and a count per check, and exits 1
# when there is any finding, 2 when clang-tidy cannot run (no compile_commands.json, a file it
# cannot parse), 0 otherwise. CLANG_TIDY names the binary (default: clang-tidy).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
CLANG_TIDY=${CLANG_TIDY:-clang-tidy}
jobs=$(nproc)
with_tests=0
build=build
files=()
changed_since=
slice=
rotate=
while (($#)); do
  case $1 in
    --tests) with_tests=1 ;;
    --jobs) jobs=$2; shift ;;
    --changed) changed_since=$2; shift ;;
    --slice) slice=$2; shift ;;
    --rotate) rotate=$2; shift ;;
    --) shift; files=("$@"); break ;;
    -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
    *) build=$1 ;;
  esac
  shift
done
db=$build/compile_commands.json
command -v "$CLANG_TIDY" >/dev/null || { echo "run_clang_tidy: $CLANG_TIDY not found" >&2; exit 2; }
[[ -f $db ]] || { echo "run_clang_tidy: no $db; configure $build first (make build)" >&2; exit 2; }
if [[ -n $rotate ]]; then
  [[ $rotate =~ ^[1-9][0-9]*$ ]] || { echo "run_clang_tidy: --rotate N, N >= 1" >&2; exit 2; }
  slice="$(($(git rev-list --count HEAD) % rotate))/$rotate"
fi
if [[ -n $slice && ! $slice =~ ^[0-9]+/[1-9][0-9]*$ ]]; then
  echo "run_clang_tidy: --slice K/N, 0 <= K < N" >&2
  exit 2
fi

scope="every file"
if ((${#files[@]} == 0)); then
  compiled=$(/usr/bin/python3 -c 'import json,sys; print("\n".join(e["file"] for e in json.load(open(sys.argv[1]))))' "$db")
  patterns=('src/*.cc')
  ((with_tests)) && patterns+=('tests/*.cc')
  all=()
  while IFS= read -r f; do
    grep -qxF "$root/$f" <<<"$compiled" && all+=("$f")
  done < <(git ls-files "${patterns[@]}")
  if [[ -n $changed_since ]] && ! git diff --quiet "$changed_since" -- .clang-tidy; then
    files=("${all[@]}")
    scope="every file: .clang-tidy changed since $changed_since"
  elif [[ -n $changed_since || -n $slice ]]; then
    # The changed files first (all of them), then the slice of the others.
    picked=()
    if [[ -n $changed_since ]]; then
      changed=$(git diff --name-only --diff-filter=AMR "$changed_since" -- include src tests) || {
        echo "run_clang_tidy: git diff $changed_since failed" >&2
        exit 2
      }
      mapfile -t picked < <(/usr/bin/python3 - "$root" "$build" "$changed" "${all[@]}" <<'EOF'
# The .cc files among `changed`, and for each changed header one of `all` that includes it:
# by the compiler depfiles (BUILD/**/*.o.d), else by a direct #include of it (by its path under
# include/, or its name beside it in src/); the header's own .cc files (same name) when they
# are among them, since a finding that pairs a declaration with its definition needs both.
import glob, os, re, sys
root, build, changed, all_files = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4:]
picked = [f for f in all_files if f in changed]
headers = [h for h in changed if h.endswith(".h") and os.path.exists(os.path.join(root, h))]
includers = {}
if headers:
    for d in sorted(glob.glob(os.path.join(root, build, "**", "*.o.d"), recursive=True)):
        text = open(d, errors="replace").read().replace("\\\n", " ")
        deps = text.split(":", 1)[-1].split()
        cwd = d[:d.rfind("/CMakeFiles/")]  # paths are relative to the target's build folder
        paths = [os.path.relpath(os.path.normpath(os.path.join(cwd, p)), root) for p in deps]
        if paths and paths[0] in all_files:
            for p in paths[1:]:
                includers.setdefault(p, []).append(paths[0])
for h in headers:
    found = includers.get(h)
    if not found:
        spelled = h[len("include/"):] if h.startswith("include/") else os.path.basename(h)
        pattern = re.compile(r'#include\s+"' + re.escape(spelled) + '"')
        found = [f for f in all_files
                 if pattern.search(open(os.path.join(root, f), errors="replace").read())]
    stem = os.path.basename(h)[:-len(".h")]
    own = [f for f in found if os.path.basename(f) == stem + ".cc"]
    for cc in own or found[:1]:
        if cc not in picked:
            picked.append(cc)
print("\n".join(picked))
EOF
      )
    fi
    rest=()
    for f in "${all[@]}"; do
      [[ " ${picked[*]} " == *" $f "* ]] || rest+=("$f")
    done
    scope="${#picked[@]} changed since $changed_since"
    [[ -z $changed_since ]] && scope="no changed files"
    if [[ -n $slice ]]; then
      k=${slice%/*} n=${slice#*/}
      ((k < n)) || { echo "run_clang_tidy: --slice K/N, 0 <= K < N" >&2; exit 2; }
      for ((i = k; i < ${#rest[@]}; i += n)); do picked+=("${rest[i]}"); done
      scope+=", slice $slice of the other ${#rest[@]}"
    fi
    files=("${picked[@]}")
  else
    files=("${all[@]}")
  fi
else
  scope="the files named"
fi
if ((${#files[@]} == 0)); then
  echo "run_clang_tidy: no files to check ($scope)"
  exit 0
fi
header_filter="^$root/(include|src)/"
((with_tests)) && header_filter="^$root/(include|src|tests)/"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
# -Wno-unknown-warning-option: the compile commands are GCC's (a -Werror build has -Wno-restrict,
# which clang does not know and would turn into an error).
printf '%s\0' "${files[@]}" |
  xargs -0 -P "$jobs" -n 1 "$CLANG_TIDY" -p "$build" --quiet --header-filter="$header_filter" \
    --extra-arg=-Wno-unknown-warning-option >"$out" 2>"$out.err"
status=$?
elapsed=$(($(date +%s) - start))
rm -f "$out.err"
findings=$(grep -E '^/.*: warning: .*\[[a-z0-9.,-]+\]$' "$out" | sed "s|^$root/||" | sort -u)
# clang-tidy exits non-zero on findings too; a compiler error is what makes the run useless
# (the findings are printed all the same, so one run shows everything to fix).
if grep -q ' error: ' "$out"; then
  [[ -n $findings ]] && echo "$findings"
  grep ' error: ' "$out" | sort -u >&2
  echo "run_clang_tidy: clang-tidy could not compile a file (above)" >&2
  exit 2
fi
if [[ -z $findings ]]; then
  echo "run_clang_tidy: ${#files[@]} file(s) ($scope), no findings (${elapsed}s, $jobs jobs)"
  exit 0
fi
echo "$findings"
echo
echo "run_clang_tidy: findings per check:"
sed -E 's/.*\[([a-z0-9.,-]+)\]$/\1/' <<<"$findings" | sort | uniq -c | sort -rn
echo "run_clang_tidy: $(wc -l <<<"$findings") finding(s) in ${#files[@]} file(s) ($scope)" \
     "(${elapsed}s, $jobs jobs; xargs status $status)"
exit 1

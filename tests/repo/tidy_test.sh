#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tidy_test.sh SOURCE_DIR: which files tools/run_clang_tidy.sh hands to clang-tidy, and what it
# makes of clang-tidy's output, on a scratch git repository with a stand-in clang-tidy (the real
# one takes seconds a file; CI runs it):
#   1. --changed REV: the .cc files changed since REV, the own .cc of a changed header, and one
#      includer (by the build's depfiles) of a changed header that has no .cc of its name;
#   2. --slice K/N adds every N-th of the other files from the K-th; --rotate N takes K from the
#      commit count; a change to .clang-tidy checks every file;
#   3. a finding is printed with its file relative to the tree and exits 1, none exits 0, a
#      compiler error exits 2; GCC-only warning flags are not clang errors.
set -uo pipefail
src=$1
source "$(dirname "$0")/scratch.sh" tidy-test
mkdir -p "$repo/tools" "$repo/src/a" "$repo/include/x"
cp "$src/tools/run_clang_tidy.sh" "$repo/tools/"
cd "$repo" || exit 1
for f in a/one a/two a/three a/four a/five a/own; do printf 'int f();\n' >"src/$f.cc"; done
printf 'int g();\n' >src/a/own.h
printf 'int h();\n' >include/x/shared.h
printf 'int k();\n' >src/a/unrelated.h
printf 'rules\n' >.clang-tidy
git init -q . && git add -A && git -c user.name=t -c user.email=t@t commit -qm one ||
  fail "git init"

# A build folder as CMake leaves it: compile commands, and depfiles whose paths are relative to
# the target's folder. The header shared.h is included by three.cc only (no .cc of its name).
mkdir -p build/src/a/CMakeFiles/a.dir
{
  echo '['
  sep=
  for f in one two three four five own; do
    printf '%s{"directory": "%s/build/src/a", "file": "%s/src/a/%s.cc", "command": "c++ -c %s.cc"}\n' \
      "$sep" "$repo" "$repo" "$f" "$f"
    sep=,
  done
  echo ']'
} >build/compile_commands.json
for f in one two three four five own; do
  deps="../../../src/a/$f.cc /usr/include/stdio.h"
  [[ $f == three ]] && deps+=" ../../../include/x/shared.h"
  [[ $f == own ]] && deps+=" ../../../src/a/own.h"
  printf 'src/a/CMakeFiles/a.dir/%s.cc.o: %s\n' "$f" "$deps" >"build/src/a/CMakeFiles/a.dir/$f.cc.o.d"
done

# The stand-in clang-tidy logs the file it was given and its flags, and reports what
# $TIDY_SAYS says for it.
log=$tmp/log
cat >"$tmp/clang-tidy" <<EOF
#!/usr/bin/env bash
f=\${@: -1}
echo "\$f" >>"$log"
echo "\$*" >>"$log.args"
case "\${TIDY_SAYS:-}:\$f" in
  finding:src/a/two.cc) echo "$repo/src/a/two.cc:1:5: warning: it is wrong [bugprone-x]" ;;
  error:src/a/two.cc) echo "$repo/src/a/two.cc:1:1: error: unknown type name 'in' [clang-diagnostic-error]" ;;
esac
exit 0
EOF
chmod +x "$tmp/clang-tidy"
export CLANG_TIDY=$tmp/clang-tidy

checked() {  # checked ARGS...: the files run_clang_tidy.sh gives clang-tidy, sorted, one line
  rm -f "$log"
  ./tools/run_clang_tidy.sh --jobs 1 build "$@" >"$tmp/out" 2>&1
  echo $? >"$tmp/status"
  [[ -f $log ]] && sort "$log" | tr '\n' ' ' | sed 's/ $//'
}
expect() {  # expect WHAT GOT WANT
  [[ $2 == "$3" ]] || fail "$1: checked '$2', want '$3' ($(cat "$tmp/out"))"
}

expect "every file" "$(checked)" \
  "src/a/five.cc src/a/four.cc src/a/one.cc src/a/own.cc src/a/three.cc src/a/two.cc"
grep -q -- '--extra-arg=-Wno-unknown-warning-option' "$log.args" ||
  fail "clang-tidy is not told to ignore GCC's warning flags: $(head -1 "$log.args")"

printf 'int f2();\n' >src/a/one.cc
printf 'int g2();\n' >src/a/own.h
printf 'int h2();\n' >include/x/shared.h
expect "--changed" "$(checked --changed HEAD)" "src/a/one.cc src/a/own.cc src/a/three.cc"
grep -qF '3 changed since HEAD' "$tmp/out" || fail "--changed scope: $(cat "$tmp/out")"

# The other three files, in order: five, four, two; slice 1/2 is four.
expect "--slice" "$(checked --changed HEAD --slice 1/2)" \
  "src/a/four.cc src/a/one.cc src/a/own.cc src/a/three.cc"
expect "--slice alone" "$(checked --slice 0/3)" "src/a/five.cc src/a/own.cc"
[[ $(git rev-list --count HEAD) == 1 ]] || fail "one commit expected"
expect "--rotate" "$(checked --rotate 2)" "src/a/four.cc src/a/own.cc src/a/two.cc"
checked --slice 3/3 >/dev/null
[[ $(cat "$tmp/status") == 2 ]] || fail "--slice 3/3 was accepted"

printf 'other rules\n' >.clang-tidy
expect ".clang-tidy changed" "$(checked --changed HEAD --rotate 3)" \
  "src/a/five.cc src/a/four.cc src/a/one.cc src/a/own.cc src/a/three.cc src/a/two.cc"

export TIDY_SAYS=finding
checked -- src/a/two.cc >/dev/null
[[ $(cat "$tmp/status") == 1 ]] || fail "a finding did not exit 1: $(cat "$tmp/out")"
grep -qxF 'src/a/two.cc:1:5: warning: it is wrong [bugprone-x]' "$tmp/out" ||
  fail "the finding is not printed relative to the tree: $(cat "$tmp/out")"
export TIDY_SAYS=error
checked -- src/a/two.cc >/dev/null
[[ $(cat "$tmp/status") == 2 ]] || fail "a compiler error did not exit 2: $(cat "$tmp/out")"
export TIDY_SAYS=
checked -- src/a/two.cc >/dev/null
[[ $(cat "$tmp/status") == 0 ]] || fail "no finding did not exit 0: $(cat "$tmp/out")"
echo "tidy_test: ok"

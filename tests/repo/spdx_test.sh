#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# spdx_test.sh SOURCE_DIR: tools/check_spdx.sh and tools/add_spdx.sh on a scratch git
# repository holding one file of each kind tools/spdx_files.sh knows:
#   1. check_spdx fails and names exactly the files that lack the line;
#   2. add_spdx adds it as line 1 (line 2 after #!) in the right syntax, keeps the rest of each
#      file and its mode, and leaves alone the files that have it or must not carry it;
#   3. check_spdx then passes, and a second add_spdx changes nothing.
set -uo pipefail
src=$1
source "$(dirname "$0")/scratch.sh" spdx-test
mkdir -p "$repo/src" "$repo/tools" "$repo/tests/golden" "$repo/docs" "$repo/deploy"
cd "$repo" || exit 1
printf 'int f();\n' >src/a.h
printf '// SPDX-License-Identifier: Apache-2.0\nint g() { return 1; }\n' >src/b.cc
printf '#!/usr/bin/python3\n"""Doc."""\nprint(1)\n' >tools/gen.py
printf '#!/usr/bin/env bash\necho hi\n' >tools/run.sh
printf '#!/usr/bin/env bash\necho ci\n' >tools/ci
printf 'add_library(a a.cc)\n' >src/CMakeLists.txt
printf 'all:\n\ttrue\n' >Makefile
printf 'groups: []\n' >deploy/rules.yml
printf '# Title\n' >docs/page.md
printf '{"a": 1}\n' >deploy/dash.json
printf 'golden\n' >tests/golden/x.txt
printf 'data\n' >tests/golden/y.py
chmod +x tools/gen.py tools/run.sh tools/ci
git init -q . && git add -A || fail "git init"

out=$("$src/tools/check_spdx.sh" "$repo" 2>&1) && fail "check_spdx passed on files without the line"
want="src/CMakeLists.txt src/a.h tools/ci tools/gen.py tools/run.sh Makefile deploy/rules.yml"
for f in $want; do
  grep -qF "check_spdx: $f: no SPDX" <<<"$out" || fail "check_spdx did not name $f: $out"
done
[[ $(grep -c 'no SPDX' <<<"$out") -eq 7 ]] || fail "check_spdx named other files: $out"

"$src/tools/add_spdx.sh" "$repo" >/dev/null || fail "add_spdx failed"
expect() {  # expect FILE CONTENT
  [[ $(cat "$1") == "$2" ]] || fail "$1 is now: $(cat "$1")"
}
expect src/a.h $'// SPDX-License-Identifier: Apache-2.0\nint f();'
expect src/b.cc $'// SPDX-License-Identifier: Apache-2.0\nint g() { return 1; }'
expect tools/gen.py $'#!/usr/bin/python3\n# SPDX-License-Identifier: Apache-2.0\n"""Doc."""\nprint(1)'
expect tools/run.sh $'#!/usr/bin/env bash\n# SPDX-License-Identifier: Apache-2.0\necho hi'
expect tools/ci $'#!/usr/bin/env bash\n# SPDX-License-Identifier: Apache-2.0\necho ci'
expect src/CMakeLists.txt $'# SPDX-License-Identifier: Apache-2.0\nadd_library(a a.cc)'
expect Makefile $'# SPDX-License-Identifier: Apache-2.0\nall:\n\ttrue'
expect deploy/rules.yml $'# SPDX-License-Identifier: Apache-2.0\ngroups: []'
expect docs/page.md '# Title'
expect deploy/dash.json '{"a": 1}'
expect tests/golden/x.txt 'golden'
expect tests/golden/y.py 'data'
for f in tools/gen.py tools/run.sh tools/ci; do [[ -x $f ]] || fail "$f lost its mode"; done
[[ -x src/a.h ]] && fail "src/a.h became executable"

"$src/tools/check_spdx.sh" "$repo" >/dev/null || fail "check_spdx fails after add_spdx"
before=$(find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum)
out=$("$src/tools/add_spdx.sh" "$repo") || fail "second add_spdx failed"
after=$(find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum)
[[ $before == "$after" ]] || fail "a second add_spdx changed files"
grep -qx 'add_spdx: 0 file(s) changed' <<<"$out" || fail "second add_spdx said: $out"
echo "spdx_test: check_spdx and add_spdx behave"

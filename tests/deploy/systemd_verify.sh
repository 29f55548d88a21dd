#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# systemd_verify.sh SYSTEMD_ANALYZE VMETRICS_BINARY SOURCE_DIR
#
# Checks deploy/systemd/vmetrics.service the way systemd will load it, where the .deb puts it:
# a scratch root gets the unit at /lib/systemd/system/vmetrics.service, the defaults file at
# /etc/default/vmetrics, the built binary at /usr/bin/vmetrics and this host's *.target units
# (the unit's After=/Wants=/WantedBy= name them). Then, with --root on that tree:
#   1. `systemd-analyze verify` must exit 0 AND print nothing: systemd only warns, exit 0, on an
#      unknown key or a misspelt section ("Unknown key 'X' in section [Service], ignoring."),
#      so any output is a failure;
#   2. `systemd-analyze security --offline=yes --threshold=20` must pass: the hardening keeps
#      the exposure score at 2.0 or below (the threshold counts tenths; systemd 252 rates this
#      unit 1.2, "OK");
#   3. the defaults file defines VMETRICS_ARGS and ExecStart passes it unbraced, as separate
#      arguments.
# Exit 0 when all pass; otherwise 1 with systemd-analyze's output.
set -uo pipefail

analyze=$1
binary=$2
source_dir=$3
unit=$source_dir/deploy/systemd/vmetrics.service
defaults=$source_dir/deploy/systemd/vmetrics.default

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vmetrics-systemd.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
mkdir -p "$root/lib/systemd/system" "$root/etc/default" "$root/usr/bin"
cp "$unit" "$root/lib/systemd/system/vmetrics.service"
cp "$defaults" "$root/etc/default/vmetrics"
cp "$binary" "$root/usr/bin/vmetrics"
targets=0
for dir in /lib/systemd/system /usr/lib/systemd/system; do
  for t in "$dir"/*.target; do
    [[ -e $t && ! -e $root/lib/systemd/system/$(basename "$t") ]] || continue
    cp -P "$t" "$root/lib/systemd/system/" && targets=$((targets + 1))
  done
done
if ((targets == 0)); then
  echo "FAIL: no systemd *.target units on this host to verify against (package systemd)" >&2
  exit 1
fi

failures=0
# run NAME CMD...: CMD must exit 0 with no output at all (stdout and stderr).
run_silent() {
  local name=$1
  shift
  "$@" >"$tmp/out" 2>&1
  local rc=$?
  if [[ $rc -ne 0 || -s $tmp/out ]]; then
    echo "FAIL: $name (exit $rc)" >&2
    sed 's/^/    /' "$tmp/out" >&2
    failures=$((failures + 1))
  else
    echo "systemd_verify: $name: clean"
  fi
}

run_silent "systemd-analyze verify" \
  "$analyze" verify --root="$root" --man=no /lib/systemd/system/vmetrics.service

if ! "$analyze" security --offline=yes --threshold=20 --no-pager --root="$root" \
    /lib/systemd/system/vmetrics.service >"$tmp/security" 2>&1; then
  echo "FAIL: systemd-analyze security: exposure above 2.0" >&2
  grep -v '^✓' "$tmp/security" | sed 's/^/    /' >&2
  failures=$((failures + 1))
else
  echo "systemd_verify: $(grep -a 'Overall exposure level' "$tmp/security")"
fi

# The flags reach vmetrics only if the defaults file sets VMETRICS_ARGS and ExecStart expands
# it unbraced ("$VMETRICS_ARGS" split at whitespace; "${VMETRICS_ARGS}" would be one argument).
if ! grep -qE '^VMETRICS_ARGS=' "$defaults"; then
  echo "FAIL: $defaults does not set VMETRICS_ARGS" >&2
  failures=$((failures + 1))
fi
if ! grep -qxF 'ExecStart=/usr/bin/vmetrics serve $VMETRICS_ARGS' "$unit" ||
   ! grep -qxF 'EnvironmentFile=/etc/default/vmetrics' "$unit"; then
  echo "FAIL: $unit must read /etc/default/vmetrics and run" \
       "/usr/bin/vmetrics serve \$VMETRICS_ARGS" >&2
  failures=$((failures + 1))
fi

if ((failures)); then
  exit 1
fi
echo "systemd_verify: vmetrics.service verifies cleanly"

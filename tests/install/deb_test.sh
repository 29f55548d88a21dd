#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_test.sh BUILD_DIR SOURCE_DIR [SYSTEMD_ANALYZE]
#
# Builds the .deb from BUILD_DIR (`cpack -G DEB`, into a temporary directory) and checks what
# dpkg would install, without installing it:
#   1. the files: /usr/bin/vmetrics, the rules and dashboard under /usr/share/vmetrics, the
#      systemd unit at /lib/systemd/system/vmetrics.service and the defaults file at
#      /etc/default/vmetrics, both byte-identical to deploy/systemd/;
#   2. the control part: /etc/default/vmetrics listed in conffiles (dpkg keeps an operator's
#      edits on upgrade), postinst/prerm/postrm present, executable and valid sh;
#   3. with SYSTEMD_ANALYZE: `systemd-analyze verify` on the unpacked package as the root
#      (the packaged binary at /usr/bin/vmetrics) exits 0 and prints nothing.
# Environment: CPACK (default cpack). Exit 0 when every check passes; otherwise 1 naming the
# first failure.
set -uo pipefail

build=$1
source_dir=$2
analyze=${3:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vmetrics-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "FAIL: $1" >&2
  if [[ -s $tmp/log ]]; then
    echo "---- output ----" >&2
    tail -n 40 "$tmp/log" >&2
  fi
  exit 1
}

echo "deb_test: cpack -G DEB"
"${CPACK:-cpack}" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/log" 2>&1 ||
  fail "cpack -G DEB"
debs=("$tmp"/pkg/*.deb)
[[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] || fail "cpack made ${#debs[@]} .deb files"
deb=${debs[0]}

# 1. Files.
dpkg-deb -x "$deb" "$tmp/root" >"$tmp/log" 2>&1 || fail "dpkg-deb -x $(basename "$deb")"
for f in usr/bin/vmetrics usr/share/vmetrics/prometheus/vmetrics-rules.yml \
         usr/share/vmetrics/grafana/vmetrics-kv-transfer.json \
         lib/systemd/system/vmetrics.service etc/default/vmetrics; do
  [[ -f $tmp/root/$f ]] || fail "the .deb lacks /$f"
done
[[ ! -e $tmp/root/usr/share/vmetrics/systemd ]] ||
  fail "the .deb also carries /usr/share/vmetrics/systemd (the unit belongs in /lib/systemd/system)"
unit=$tmp/root/lib/systemd/system/vmetrics.service
cmp -s "$source_dir/deploy/systemd/vmetrics.service" "$unit" ||
  fail "/lib/systemd/system/vmetrics.service differs from deploy/systemd/vmetrics.service"
cmp -s "$source_dir/deploy/systemd/vmetrics.default" "$tmp/root/etc/default/vmetrics" ||
  fail "/etc/default/vmetrics differs from deploy/systemd/vmetrics.default"

# 2. Control part.
dpkg-deb -e "$deb" "$tmp/control" >"$tmp/log" 2>&1 || fail "dpkg-deb -e $(basename "$deb")"
grep -qxF /etc/default/vmetrics "$tmp/control/conffiles" 2>/dev/null ||
  fail "conffiles does not list /etc/default/vmetrics"
for script in postinst prerm postrm; do
  [[ -x $tmp/control/$script ]] || fail "the .deb has no executable $script"
  sh -n "$tmp/control/$script" 2>"$tmp/log" || fail "$script is not valid sh"
done
echo "deb_test: $(basename "$deb"): unit, defaults file (conffile) and maintainer scripts present"

# 3. The packaged unit against the packaged binary.
if [[ -n $analyze ]]; then
  mkdir -p "$tmp/root/lib/systemd/system"
  for dir in /lib/systemd/system /usr/lib/systemd/system; do
    for t in "$dir"/*.target; do
      [[ -e $t && ! -e $tmp/root/lib/systemd/system/$(basename "$t") ]] || continue
      cp -P "$t" "$tmp/root/lib/systemd/system/"
    done
  done
  "$analyze" verify --root="$tmp/root" --man=no /lib/systemd/system/vmetrics.service \
    >"$tmp/log" 2>&1
  rc=$?
  [[ $rc -eq 0 && ! -s $tmp/log ]] || fail "systemd-analyze verify on the unpacked .deb (exit $rc)"
  echo "deb_test: systemd-analyze verify on the unpacked .deb: clean"
fi
echo "deb_test: the .deb installs the service as documented"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install_test.sh [BUILD_DIR]
#
# Installs vmetrics into a temporary prefix and uses it the way a fresh consumer would:
#   1. `cmake --install BUILD_DIR --prefix TMP` (BUILD_DIR given: a built tree is reused;
#      none given: the project is configured and built in TMP first, tests off);
#   2. the prefix holds the headers, the seven static libraries, bin/vmetrics, the CMake package
#      and vmetrics.pc, the Prometheus rules and Grafana dashboard, the systemd unit and
#      defaults file as copies under share/vmetrics/systemd (only a /usr prefix puts them in
#      /lib/systemd/system and /etc/default: tests/install/deb_test.sh), the licence
#      (share/doc/vmetrics/copyright in Debian's machine-readable format, and LICENSE), and the
#      installed binary runs;
#   3. examples/embed is configured against the prefix alone (find_package(vmetrics) via
#      CMAKE_PREFIX_PATH), built, and run: its exposition must hold vllm: families with the
#      values of the message it embeds;
#   4. a one-file consumer is compiled with `pkg-config --cflags --libs vmetrics` and run, and
#      every installed header compiles alone (its own translation unit, with only
#      `pkg-config --cflags vmetrics`), so none leans on one included before it.
#
# Environment: CXX (the consumer's compiler; default c++) and VMETRICS_CONSUMER_FLAGS (compile
# and link flags for consumers, e.g. -fsanitize=address,undefined when the libraries were built
# with sanitizers). Exit 0 when every step passes; otherwise 1 and the failing step's output.
set -uo pipefail

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
cxx=${CXX:-c++}
consumer_flags=${VMETRICS_CONSUMER_FLAGS:-}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vmetrics-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
log=$tmp/step.log

fail() {
  echo "FAIL: $1" >&2
  if [[ -s $log ]]; then
    echo "---- output ----" >&2
    tail -n 60 "$log" >&2
  fi
  exit 1
}

# step NAME CMD...: runs CMD with its output in $log; fails the test with NAME if it fails.
step() {
  local name=$1
  shift
  echo "install_test: $name"
  "$@" >"$log" 2>&1 || fail "$name"
}

# 1. Build (unless given) and install.
if [[ $# -ge 1 ]]; then
  build=$1
  [[ -f $build/CMakeCache.txt ]] || fail "$build is not a configured build directory"
else
  build=$tmp/build
  step "configure the project" cmake -S "$source_dir" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DVMETRICS_TESTS=OFF
  step "build the project" cmake --build "$build" -j "$(nproc)"
fi
step "cmake --install into $prefix" cmake --install "$build" --prefix "$prefix"

# 2. What the prefix holds.
config=$(find "$prefix" -name vmetricsConfig.cmake -print -quit)
pc=$(find "$prefix" -name vmetrics.pc -print -quit)
[[ -n $config ]] || fail "no vmetricsConfig.cmake under $prefix"
[[ -n $pc ]] || fail "no vmetrics.pc under $prefix"
libdir=$(dirname "$(dirname "$pc")")
for f in "$(dirname "$config")/vmetricsConfigVersion.cmake" \
         "$(dirname "$config")/vmetricsTargets.cmake" \
         "$prefix/include/vmetrics/recorder.h" "$prefix/include/vmetrics/registry.h" \
         "$prefix/include/vmetrics/exposition.h" \
         "$prefix/include/vmetrics/engine_core_outputs.h" "$prefix/include/vmetrics/frontend.h" \
         "$prefix/bin/vmetrics"; do
  [[ -e $f ]] || fail "missing after install: ${f#"$prefix"/}"
done
datadir=$prefix/share/vmetrics
for f in "$datadir/prometheus/vmetrics-rules.yml" "$datadir/prometheus/vmetrics-rules.test.yml" \
         "$datadir/prometheus/prometheus.yml" "$datadir/grafana/vmetrics-kv-transfer.json" \
         "$datadir/systemd/vmetrics.service" "$datadir/systemd/vmetrics.default"; do
  [[ -e $f ]] || fail "missing after install: ${f#"$prefix"/}"
done
cmp -s "$source_dir/deploy/systemd/vmetrics.service" "$datadir/systemd/vmetrics.service" ||
  fail "share/vmetrics/systemd/vmetrics.service differs from deploy/systemd/vmetrics.service"
for f in "$prefix/etc" "$prefix/lib/systemd"; do
  [[ ! -e $f ]] || fail "an install into a prefix other than /usr wrote ${f#"$prefix"/}"
done
for lib in protocol metrics requests exposition transport server tokenapi frontend offline; do
  [[ -f $libdir/libvmetrics_$lib.a ]] || fail "missing after install: libvmetrics_$lib.a in $libdir"
done
# The installed headers must not need anything from the source tree: every quoted include
# names another installed header.
if grep -rn '#include "' "$prefix/include/vmetrics" | grep -v '#include "vmetrics/' >"$log"; then
  fail "an installed header includes a private header"
fi
while IFS= read -r included; do
  if [[ ! -f $prefix/include/$included ]]; then
    : >"$log"
    fail "an installed header includes $included, which is not installed"
  fi
done < <(grep -rhoE '#include "vmetrics/[^"]+"' "$prefix/include/vmetrics" |
         sed -E 's/#include "(.*)"/\1/' | sort -u)
# ... and of include/vmetrics/internal/ only what an installed header includes (the rest is
# shared by the tree's libraries, no part of the package: cmake/install_headers.cmake).
for internal in "$prefix"/include/vmetrics/internal/*.h; do
  [[ -e $internal ]] || continue
  name=vmetrics/internal/$(basename "$internal")
  if ! grep -rlF "#include \"$name\"" "$prefix/include/vmetrics" | grep -qvxF "$internal"; then
    : >"$log"
    fail "$name is installed, but no installed header includes it"
  fi
done
# The licence, where Debian policy wants it: share/doc/vmetrics/copyright, machine-readable.
copyright=$prefix/share/doc/vmetrics/copyright
[[ -f $copyright ]] || fail "missing after install: share/doc/vmetrics/copyright"
head -n 1 "$copyright" | grep -qx \
  'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' || \
  fail "share/doc/vmetrics/copyright is not in Debian's copyright format 1.0"
grep -qx 'License: Apache-2.0' "$copyright" || \
  fail "share/doc/vmetrics/copyright names no Apache-2.0"
[[ -f $prefix/share/doc/vmetrics/LICENSE ]] || \
  fail "missing after install: share/doc/vmetrics/LICENSE"
step "installed bin/vmetrics --version" "$prefix/bin/vmetrics" --version
version=$(tr -d '[:space:]' <"$log")

# 3. examples/embed through the CMake package, from the prefix alone.
step "configure examples/embed with find_package(vmetrics)" \
  cmake -S "$source_dir/examples/embed" -B "$tmp/embed" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$consumer_flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$consumer_flags" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
step "build examples/embed" cmake --build "$tmp/embed"
step "run examples/embed" "$tmp/embed/embed"
expo=$tmp/embed.txt
cp "$log" "$expo"
for want in \
    '# TYPE vllm:nixl_xfer_time_seconds histogram' \
    'vllm:nixl_xfer_time_seconds_count{engine="0",model_name="example"} 2.0' \
    'vllm:num_requests_running{engine="0",model_name="example"} 3.0' \
    'vllm:prefix_cache_hits_total{engine="0",model_name="example"} 96.0' \
    'vmetrics_decode_errors_total{part="message"} 0.0'; do
  grep -qxF "$want" "$expo" || fail "examples/embed output lacks: $want"
done
step "run examples/embed on a capture file" \
  "$tmp/embed/embed" "$source_dir/tests/fixtures/kv_nixl.msgpack"
grep -q '^# TYPE vllm:' "$log" || fail "examples/embed on a capture printed no vllm: family"

# 4. A one-file consumer through pkg-config.
export PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
step "pkg-config --modversion vmetrics" pkg-config --modversion vmetrics
[[ $(tr -d '[:space:]' <"$log") == "$version" ]] || \
  fail "pkg-config says version $(cat "$log"), bin/vmetrics --version says $version"
cat >"$tmp/consumer.cc" <<'CC'
// Registers one counter and one connector row's family, records, renders; and checks the
// options of a Frontend, which needs the frontend library and its dependencies.
#include <cstdio>
#include <string>

#include <vmetrics/connector_catalog.h>
#include <vmetrics/exposition.h>
#include <vmetrics/frontend.h>
#include <vmetrics/registry.h>

int main() {
  vmetrics::FrontendOptions options;
  options.lora_modules = {{"sql", "/adapters/sql"}};  // without enable_lora: refused
  if (vmetrics::Frontend(options).Bind().code() != vmetrics::StatusCode::kInvalidArgument) {
    return 1;
  }
  vmetrics::FixedClock clock(123.456);
  vmetrics::Registry registry(&clock);
  vmetrics::CounterFamily f(&registry.AddFamily(
      {"vllm:prompt_tokens", vmetrics::MetricType::kCounter, "Number of prefill tokens processed.",
       {"model_name", "engine"}}));
  f.GetOrCreate({"m", "0"})->Add(3);
  const vmetrics::ConnectorRow* nixl =
      vmetrics::ConnectorCatalog::BuiltIn().FindByClassName("NixlPullConnector");
  if (nixl == nullptr || nixl->id != "NixlConnector") return 1;
  std::string text;
  vmetrics::WriteText(registry, {}, &text);
  std::fputs(text.c_str(), stdout);
  return 0;
}
CC
# shellcheck disable=SC2046,SC2086  # pkg-config output and the flags are word lists
step "compile a consumer with pkg-config --cflags --libs vmetrics" \
  "$cxx" -std=c++20 $consumer_flags "$tmp/consumer.cc" $(pkg-config --cflags --libs vmetrics) \
  -o "$tmp/consumer"
step "run the pkg-config consumer" "$tmp/consumer"
grep -qxF 'vllm:prompt_tokens_total{engine="0",model_name="m"} 3.0' "$log" || \
  fail "pkg-config consumer output lacks vllm:prompt_tokens_total"

# Every installed header alone, as the first and only include of a translation unit.
headers_alone() {
  local header status=0
  while IFS= read -r header; do
    # shellcheck disable=SC2046,SC2086  # pkg-config output and the flags are word lists
    if ! printf '#include <%s>\n' "$header" |
        "$cxx" -std=c++20 $consumer_flags -fsyntax-only -x c++ - \
        $(pkg-config --cflags vmetrics) 2>&1; then
      echo "^ $header does not compile alone"
      status=1
    fi
  done < <(cd "$prefix/include" && find vmetrics -name '*.h' | sort)
  return $status
}
step "compile every installed header alone" headers_alone

echo "install_test: the installed package works (CMake package, pkg-config, bin/vmetrics $version)"

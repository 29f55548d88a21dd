#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tools/setup.sh [--runtime]
#
# Installs the Debian 12 packages vmetrics needs. By default everything needed to build, test,
# fuzz and benchmark (`make test`); with --runtime only what building the `vmetrics` binary
# needs (`make demo`: compiler, CMake and the libraries it links).
# Idempotent: does nothing (and needs no network) when everything is already installed.
# The full set also installs Node (Debian's nodejs and npm, unless a node and npm are already
# there) and the OpenAI Node SDK pinned by tests/sdk/package-lock.json (`npm ci`, run again
# only when the lock file changed), for the ctest entry sdk_openai_node.
set -euo pipefail
RUNTIME=(
  build-essential cmake pkg-config
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libmicrohttpd-dev zlib1g-dev
  libcli11-dev nlohmann-json3-dev
  libgnutls28-dev libcrypt-dev  # server: TLS certificate checks, basic-auth cache HMAC, bcrypt
  libcurl4-gnutls-dev  # tools/loadgen: the HTTP client of bench-serve and the demo
)
DEVELOPMENT=(
  clang clang-format clang-tidy libclang-rt-14-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-msgpack python3-zmq python3-prometheus-client
  python3-numpy  # tools/gen_numpy_goldens.py: np.save's .npy files of routed_experts
  python3-yaml  # tests/deploy/check_deploy.py reads the Prometheus rules
  prometheus curl
  systemd  # systemd-analyze: tests/deploy/systemd_verify.sh checks deploy/systemd/vmetrics.service
  wrk  # make load: HTTP load on /metrics (tests/load/wrk_load.py)
)
case "${1:-}" in
  --runtime) PACKAGES=("${RUNTIME[@]}") ;;
  "") PACKAGES=("${RUNTIME[@]}" "${DEVELOPMENT[@]}") ;;
  *) echo "usage: tools/setup.sh [--runtime]" >&2; exit 2 ;;
esac
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ "${1:-}" != --runtime ]]; then
  node_missing=()
  command -v node >/dev/null 2>&1 || node_missing+=(nodejs)
  command -v npm >/dev/null 2>&1 || node_missing+=(npm)
  if ((${#node_missing[@]})); then
    echo "setup: installing ${node_missing[*]}"
    SUDO=""
    if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
      "${node_missing[@]}" >/dev/null
  fi
  sdk="$(cd "$(dirname "$0")/.." && pwd)/tests/sdk"
  stamp="$sdk/node_modules/.package-lock.json"
  if [[ ! -f "$stamp" || "$sdk/package-lock.json" -nt "$stamp" ]] ||
     ! cmp -s <(sed -n '/"node_modules\/openai"/,/}/p' "$sdk/package-lock.json") \
               <(sed -n '/"node_modules\/openai"/,/}/p' "$stamp"); then
    echo "setup: npm ci in tests/sdk"
    (cd "$sdk" && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi

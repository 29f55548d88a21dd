#!/usr/bin/env bash
# Installs every Debian 12 package vmetrics needs to build, test, fuzz and benchmark.
# Idempotent: does nothing (and needs no network) when everything is already installed.
set -euo pipefail
PACKAGES=(
  build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libmicrohttpd-dev zlib1g-dev
  libcli11-dev nlohmann-json3-dev googletest libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-msgpack python3-zmq python3-prometheus-client
  prometheus curl
  wrk  # make load: HTTP load on /metrics (tests/load/wrk_load.sh)
  libgnutls28-dev libcrypt-dev  # server: TLS certificate checks, basic-auth cache HMAC, bcrypt
  libcurl4-gnutls-dev  # tools/loadgen: the HTTP client of bench-serve and the demo
)
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

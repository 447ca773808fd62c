#!/usr/bin/env bash
# Installs the Debian 12 packages neardup needs, skipping those already present (idempotent).
#   install-deps.sh run    what building the library and the CLI needs (make run)
#   install-deps.sh test   that, and what the test suite needs (make test; the default), the
#                          aarch64 cross compiler, qemu-user and Debian's arm64 libraries included
# Runs apt-get as root, or through sudo when available.
set -euo pipefail

what="${1:-test}"
packages=(
  build-essential cmake pkg-config
  libcli11-dev libsimdjson-dev libxxhash-dev libzstd-dev zlib1g-dev libicu-dev liblzma-dev libbz2-dev
  libcpp-httplib-dev
)
case "$what" in
  run) ;;
  test)
    packages+=(
      zstd gzip xz-utils bzip2 python3 curl util-linux
      libgtest-dev libgmock-dev libbenchmark-dev
      clang libclang-rt-14-dev
      pybind11-dev python3-dev python3-numpy python3-pytest
      libopenmpi-dev openmpi-bin chromium wrk
      g++-aarch64-linux-gnu qemu-user file strace
      libsimdjson14:arm64 libxxhash-dev:arm64 libzstd-dev:arm64 zlib1g-dev:arm64 libicu-dev:arm64
      liblzma-dev:arm64 libbz2-dev:arm64 libpython3.11-dev:arm64
    )
    ;;
  *) echo "install-deps: usage: install-deps.sh [run|test]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The portability check builds for aarch64 against Debian's arm64 libraries (multiarch; simdjson's
# runtime library only, since its -dev package cannot be installed for two architectures at once).
if [[ " ${missing[*]}" == *":arm64"* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

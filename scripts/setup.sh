#!/usr/bin/env bash
# Installs the Debian packages xpusim needs. Idempotent: does nothing when they are there.
# Usage: scripts/setup.sh [--with-gtkwave]
set -euo pipefail

packages=(build-essential cmake pkg-config libsystemc-dev libyaml-cpp-dev
          libboost-program-options-dev libgtest-dev libbenchmark-dev python3)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
echo "setup: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

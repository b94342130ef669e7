#!/usr/bin/env bash
# Installs the Debian packages xpusim needs. Idempotent: does nothing when they are there.
# Usage: scripts/setup.sh [--with-gtkwave] [--with-fuzz]
#   --with-fuzz  also clang 14 with its sanitizer and libFuzzer runtimes (scripts/fuzz.sh)
set -euo pipefail

# gtkwave, xvfb, xauth: tests/e2e/vcd.sh runs the real GTKWave headless (xvfb-run) on the
# waveforms (docs/waveforms.md); --with-gtkwave is accepted and does nothing more.
# chromium: tests/e2e/report_html.sh renders the analysis' report.html headless and checks the
# screenshot shows its charts.
# slurm-wlm, munge: tests/e2e/sweep_slurm.sh starts slurmctld and slurmd on localhost (in a
# temporary folder, with its own munge socket and key) and runs xpu_sweep --slurm on them.
packages=(build-essential cmake pkg-config libsystemc-dev libyaml-cpp-dev
          libboost-program-options-dev libgtest-dev libbenchmark-dev python3
          libonnx-dev libprotobuf-dev
          gtkwave xvfb xauth chromium slurm-wlm munge)
for arg in "$@"; do
    case "$arg" in
        --with-fuzz) packages+=(clang-14 libclang-rt-14-dev llvm-14) ;;
    esac
done
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

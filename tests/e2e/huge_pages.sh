#!/usr/bin/env bash
# Huge pages for malloc (traces/huge_page_malloc.h): sim_main and xpu_analyze start again with
# GLIBC_TUNABLES=glibc.malloc.hugetlb=1 added (and XPUSIM_MALLOC_RESTARTED=1, so that it happens
# once), unless GLIBC_TUNABLES names that tunable already (the user's choice, kept as it is) or the
# kernel has transparent huge pages off; other tunables are kept. The process's environment is
# read from /proc/PID/environ while it runs: sim_main is held at the start by a platform
# description read from a FIFO, xpu_analyze by the analysis of a decode layer's log. (/proc shows
# GLIBC_TUNABLES up to its first ':' only: glibc's loader cuts the string there as it parses it.)
# The outputs are the same byte for byte with and without huge pages.
#   huge_pages.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
e2e_tools "$1"
src=$(cd "$2" && pwd)
e2e_workdir huge_pages
cd "$WORK"

thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo "[never]")
if [[ $thp == *"[never]"* ]]; then want_added=""; else want_added=1; fi

# tunables_of GLIBC_TUNABLES_OR_UNSET: the GLIBC_TUNABLES sim_main runs with ("unset" if none),
# then " restarted" if it was started again.
tunables_of() {
    rm -f plat.fifo
    mkfifo plat.fifo
    if [[ $1 == unset ]]; then
        env -u GLIBC_TUNABLES "$SIM" --platform plat.fifo --trace "$src/traces/samples/gemm-1k.bin" --out out --quiet --no-analysis &
    else
        GLIBC_TUNABLES=$1 "$SIM" --platform plat.fifo --trace "$src/traces/samples/gemm-1k.bin" --out out --quiet --no-analysis &
    fi
    local pid=$! seen=""
    # It blocks opening the FIFO (wchan wait_for_partner) until the description is written, which
    # it reads after a restart: from then on /proc shows the environment it runs with.
    for _ in $(seq 200); do
        [[ $(cat /proc/$pid/wchan 2>/dev/null) == wait_for_partner ]] && break
        sleep 0.025
    done
    [[ $(cat /proc/$pid/wchan 2>/dev/null) == wait_for_partner ]] || fail "sim_main never waited for the platform FIFO"
    seen=$(tr '\0' '\n' </proc/$pid/environ | grep '^GLIBC_TUNABLES=' || echo unset)
    ! tr '\0' '\n' </proc/$pid/environ | grep -q '^XPUSIM_MALLOC_RESTARTED=1$' || seen+=" restarted"
    cat "$src/configs/xpu.yaml" >plat.fifo
    wait "$pid" || fail "sim_main with GLIBC_TUNABLES=$1: exit $?"
    echo "$seen"
}

got=$(tunables_of unset)
if [[ -n $want_added ]]; then
    [[ $got == "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 restarted" ]] || fail "sim_main without GLIBC_TUNABLES runs with: $got"
    pass "sim_main started again with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (transparent huge pages: $thp)"
else
    [[ $got == unset ]] || fail "transparent huge pages off, yet sim_main runs with $got"
    pass "transparent huge pages off: sim_main not started again"
fi
if [[ -n $want_added ]]; then
    got=$(tunables_of "")
    [[ $got == "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 restarted" ]] || fail "sim_main with GLIBC_TUNABLES set empty runs with: $got"
    pass "GLIBC_TUNABLES set but empty: as if unset"
fi
got=$(tunables_of glibc.malloc.hugetlb=0)
[[ $got == "GLIBC_TUNABLES=glibc.malloc.hugetlb=0" ]] || fail "the user's glibc.malloc.hugetlb=0 became: $got"
pass "the user's glibc.malloc.hugetlb=0 is kept (no restart)"
got=$(tunables_of glibc.malloc.arena_max=2)
if [[ -n $want_added ]]; then
    [[ $got == "GLIBC_TUNABLES=glibc.malloc.arena_max=2 restarted" ]] || fail "another tunable: $got"
    pass "another tunable kept, started again once (no loop: it went on to read the platform)"
fi

# xpu_analyze: the analysis of a decode layer takes long enough to read its environment.
"$SIM" --platform "$src/configs/xpu.yaml" --trace "$src/traces/samples/decode-layer.bin" --out run --no-analysis --quiet
env -u GLIBC_TUNABLES "$ANA" run --no-verify --quiet &
pid=$!
got=unset
for _ in $(seq 40); do
    env_now=$(tr '\0' '\n' </proc/$pid/environ 2>/dev/null || true)  # once: it may restart between two reads
    got=$(grep '^GLIBC_TUNABLES=' <<<"$env_now" || echo unset)
    ! grep -q '^XPUSIM_MALLOC_RESTARTED=1$' <<<"$env_now" || got+=" restarted"
    [[ $got == *restarted ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.025
done
wait "$pid" || fail "xpu_analyze: exit $?"
if [[ -n $want_added ]]; then
    [[ $got == "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 restarted" ]] || fail "xpu_analyze without GLIBC_TUNABLES runs with: $got"
    pass "xpu_analyze started again with GLIBC_TUNABLES=glibc.malloc.hugetlb=1"
fi

# Advice only: the same bytes with 4 KiB pages and with huge pages.
for mode in 0 1; do  # (the same --out: stats.json holds the command line)
    GLIBC_TUNABLES=glibc.malloc.hugetlb=$mode "$SIM" --platform "$src/configs/xpu.yaml" --trace "$src/traces/samples/decode-layer.bin" \
        --out det --deterministic --quiet --verify 2
    mv det "det$mode"
done
for f in stats.json report.txt analysis.json report.html timeline.json verification.txt; do
    cmp -s "det0/$f" "det1/$f" || fail "$f differs between 4 KiB pages and huge pages"
done
pass "outputs byte-identical with glibc.malloc.hugetlb=0 and =1 (stats, reports, timeline, verification)"
echo "$checks passed, 0 failed"

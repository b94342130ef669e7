# Shared by the end-to-end scripts (sourced): the argument check, a work folder removed on exit,
# and fail. Scripts written before it keep their own copy of these few lines.
#   e2e_args N "USAGE" "$@"   exit 2 with "usage: SCRIPT USAGE" unless there are N arguments
#   e2e_tools BUILD_DIR       SIM, GEN, ANA, TOOL: the built binaries; PY: Debian's python3
#   e2e_workdir NAME          WORK: a fresh folder, removed when the script exits
#   fail MESSAGE              "FAIL: MESSAGE" on stderr, exit 1
e2e_args() {
    local n=$1 usage=$2
    shift 2
    if [[ $# -ne $n ]]; then
        echo "usage: $(basename "$0") $usage" >&2
        exit 2
    fi
}
e2e_tools() {
    SIM="$1/platform/sim_main"
    GEN="$1/traces/xpu_tracegen"
    ANA="$1/analysis/xpu_analyze"
    TOOL="$1/traces/xpu_trace"
    PY=/usr/bin/python3
}
e2e_workdir() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1_e2e.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

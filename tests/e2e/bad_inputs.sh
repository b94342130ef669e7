#!/usr/bin/env bash
# End-to-end: every malformed input of tests/data/bad/manifest.txt against the real binaries
# (sim_main, xpu_trace validate, xpu_trace asm): the exit status, a stderr line matching the
# expected message, and nothing left behind that looks complete (no *.tmp; stats.json only for
# an incomplete run, then marked "completed": false; no asm output after an error). The binary
# traces are derived at test time from base.xtr by make_bad_traces.py; the .xtr files are
# assembled at test time.
# usage: bash bad_inputs.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
    exit 2
fi
BUILD_DIR=$1
SOURCE_DIR=$2
SIM="$BUILD_DIR/platform/sim_main"
TOOL="$BUILD_DIR/traces/xpu_trace"
BAD="$SOURCE_DIR/tests/data/bad"
PY=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bad_inputs_e2e.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

passed=0
failed=0
fail() {
    echo "FAIL: $*" >&2
    failed=$((failed + 1))
}
for exe in "$SIM" "$TOOL"; do
    [[ -x "$exe" ]] || { echo "FAIL: no executable at $exe" >&2; exit 1; }
done

# Inputs: the good base trace, the binaries derived from it, every .xtr that assembles.
"$TOOL" asm "$BAD/base.xtr" -o "$WORK/base.bin"
"$PY" "$BAD/make_bad_traces.py" "$WORK/base.bin" "$WORK/gen" >/dev/null
mkdir -p "$WORK/xtr"
for x in "$BAD"/*.xtr; do
    name=$(basename "$x" .xtr)
    [[ $name == asm-* || $name == base ]] && continue
    "$TOOL" asm "$x" -o "$WORK/xtr/$name.bin" || { echo "FAIL: $x does not assemble" >&2; exit 1; }
done

resolve() {
    case "$1" in
        gen/*) echo "$WORK/$1" ;;
        xtr/*) echo "$WORK/$1" ;;
        bad/*) echo "$BAD/${1#bad/}" ;;
        configs/*) echo "$SOURCE_DIR/$1" ;;
        base.bin) echo "$WORK/base.bin" ;;
        *) echo "$1" ;;
    esac
}

ids=()
while IFS= read -r line || [[ -n $line ]]; do
    [[ -z "${line//[[:space:]]/}" || $line =~ ^[[:space:]]*# ]] && continue
    id=$(awk -F ' [|] ' '{print $1}' <<<"$line")
    cmd=$(awk -F ' [|] ' '{print $2}' <<<"$line")
    want=$(awk -F ' [|] ' '{print $3}' <<<"$line")
    regex=$(awk -F ' [|] ' '{ r = $4; for (i = 5; i <= NF; ++i) r = r " | " $i; print r }' <<<"$line")
    if [[ -z $id || -z $cmd || -z $want || -z $regex ]]; then
        fail "manifest line not of the form 'ID | COMMAND | EXIT | REGEX': $line"
        continue
    fi
    for seen in "${ids[@]}"; do [[ $seen == "$id" ]] && fail "$id: duplicate id in the manifest"; done
    ids+=("$id")
    eval "words=($cmd)"  # the manifest is part of the repository: quoting as in the shell
    tool=${words[0]}
    args=()
    for w in "${words[@]:1}"; do args+=("$(resolve "$w")"); done
    out="$WORK/out-$id"
    rm -rf "$out"
    case "$tool" in
        sim)
            [[ ${#args[@]} -ge 2 ]] || { fail "$id: sim needs PLATFORM TRACE"; continue; }
            run=("$SIM" --platform "${args[0]}" --trace "${args[1]}")
            has_out=0
            for ((i = 2; i < ${#args[@]}; ++i)); do
                a=${args[$i]}
                if [[ $a == @OUTFILE ]]; then
                    a="$WORK/out-file-$id"
                    echo "not a folder" >"$a"
                    out="$a"
                    has_out=1
                fi
                run+=("$a")
            done
            [[ $has_out -eq 1 ]] || run+=(--out "$out")
            ;;
        validate) run=("$TOOL" validate "${args[0]}") ;;
        asm) run=("$TOOL" asm "${args[0]}" -o "$WORK/asm-$id.bin") ;;
        *) fail "$id: unknown command '$tool'"; continue ;;
    esac
    set +e
    "${run[@]}" >"$WORK/stdout" 2>"$WORK/stderr"
    rc=$?
    set -e
    ok=1
    if [[ $rc -ne $want ]]; then
        fail "$id: exit $rc, expected $want (${run[*]})"
        ok=0
    elif [[ $regex == "(empty)" ]]; then
        if [[ -s $WORK/stderr ]]; then fail "$id: stderr is not empty"; ok=0; fi
    elif ! grep -Eq -- "$regex" "$WORK/stderr"; then
        fail "$id: no stderr line matches /$regex/ (${run[*]})"
        ok=0
    fi
    if [[ $tool == sim && -d $out ]]; then
        if [[ -n "$(find "$out" -name '*.tmp')" ]]; then fail "$id: *.tmp left in $out"; ok=0; fi
        if [[ $want -eq 5 || $want -eq 7 ]]; then
            if ! "$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["completed"] is False and s["diagnosis"] else 1)' \
                "$out/stats.json" 2>/dev/null; then
                fail "$id: $out/stats.json missing, or not marked \"completed\": false with a diagnosis"
                ok=0
            fi
        elif [[ $want -ne 0 && -e $out/stats.json ]]; then
            fail "$id: $out/stats.json exists after a failed run"
            ok=0
        elif [[ $want -eq 0 && ! -s $out/stats.json ]]; then
            fail "$id: no stats.json after a successful run"
            ok=0
        fi
    fi
    if [[ $tool == asm && $want -ne 0 ]] && [[ -e "$WORK/asm-$id.bin" || -e "$WORK/asm-$id.bin.tmp" ]]; then
        fail "$id: asm left an output file after an error"
        ok=0
    fi
    if [[ $ok -eq 1 ]]; then
        passed=$((passed + 1))
        echo "ok $passed - $id: exit $rc: $(head -n 1 "$WORK/stderr" | cut -c 1-160)"
    else
        echo "--- stderr of $id:" >&2
        head -n 20 "$WORK/stderr" >&2
    fi
done <"$BAD/manifest.txt"

# The corpus itself: enough distinct malformed inputs, each used by the manifest.
inputs=$( (ls "$WORK/gen"; ls "$BAD" | grep -E '^(yaml-.*\.yaml|.*\.xtr)$' | grep -vE '^(base|uses-.*|long-matmul)\.xtr$') | sort -u | wc -l)
[[ $inputs -ge 40 ]] || fail "only $inputs malformed inputs in tests/data/bad (and derived), expected at least 40"
for f in $(ls "$WORK/gen") $(ls "$BAD" | grep -E '^(yaml-.*\.yaml|.*\.xtr)$'); do
    base=${f%.*}
    grep -q -- "$base" "$BAD/manifest.txt" || fail "tests/data/bad: $f is used by no manifest line"
done
echo "$passed passed, $failed failed ($inputs malformed inputs)"
[[ $failed -eq 0 ]]

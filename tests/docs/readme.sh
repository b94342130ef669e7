#!/usr/bin/env bash
# Docs that run: every ```sh block of README.md, command by command, in a temporary folder that
# holds links to the checkout's configs/, traces/ and scripts/ and to the build folder, on the
# shipped samples. A command that fails fails the test, naming its block and line. The stand-ins
# README.md documents: the scripts use the existing build (XPU_SKIP_BUILD=1), scripts/test.sh
# runs one test (it runs inside the suite: the whole suite would run this test again), gtkwave
# loads the files headless and exits. out/ is not made here: --vcd creates its folder.
# usage: bash readme.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$(cd "$1" && pwd) SRC=$(cd "$2" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/readme_docs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
ln -s "$SRC/configs" configs
ln -s "$SRC/traces" traces
ln -s "$SRC/scripts" scripts
mkdir tests && ln -s "$SRC/tests/data" tests/data  # the shape-only ONNX models
ln -s "$BUILD" build
/usr/bin/python3 - "$SRC/README.md" > commands.txt <<'PYEOF'
import re, sys
text = open(sys.argv[1]).read()
n = 0
for b, block in enumerate(re.findall(r"```sh\n(.*?)```", text, re.S), 1):
    cmd, first = "", 0
    for i, line in enumerate(block.splitlines(), 1):
        code = re.sub(r"(^|\s)#.*$", "", line).rstrip()   # comments, at the start or after a space
        if not code.strip() and not cmd:
            continue
        if not cmd:
            first = i
        if code.endswith("\\"):
            cmd += code[:-1] + " "
            continue
        cmd += code
        if cmd.strip():
            print("%d\t%d\t%s" % (b, first, cmd.strip()))
            n += 1
        cmd = ""
if n < 10:
    sys.exit("README.md: only %d commands found in its sh blocks" % n)
# Its tables render: a blank line before each, a separator row, every row as many cells as the header.
lines = text.splitlines()
for i, l in enumerate(lines):
    if l.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
        if i > 0 and lines[i - 1].strip():
            sys.exit("README.md:%d: a table needs a blank line before it" % (i + 1))
        cells = lambda r: len(re.sub(r"`[^`]*`", "x", r).strip().strip("|").split("|"))
        if i + 1 >= len(lines) or not re.match(r"^\|(\s*:?-+:?\s*\|)+\s*$", lines[i + 1]):
            sys.exit("README.md:%d: a table header without its |---| row" % (i + 1))
        j = i + 2
        while j < len(lines) and lines[j].startswith("|"):
            if cells(lines[j]) != cells(l):
                sys.exit("README.md:%d: %d cells, the header has %d" % (j + 1, cells(lines[j]), cells(l)))
            j += 1
PYEOF
export XPU_BUILD_DIR="$BUILD" XPU_SKIP_BUILD=1
gtkwave() { xvfb-run -a gtkwave -x "$@"; }
export -f gtkwave
total=0
while IFS=$'\t' read -r block line cmd; do
    total=$((total + 1))
    run="$cmd"
    [[ $run != scripts/test.sh* ]] || run="scripts/test.sh -R '^layering\$'"
    echo "readme: block $block, line $line: $cmd" >&2
    if ! bash -c "set -o pipefail; $run" < /dev/null > "out.$total.txt" 2>&1; then
        tail -20 "out.$total.txt" >&2
        echo "FAIL: README.md block $block, line $line: $cmd" >&2
        exit 1
    fi
done < commands.txt
echo "ok - $total README commands ran"

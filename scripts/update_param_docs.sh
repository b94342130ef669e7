#!/usr/bin/env bash
# Rewrites the key reference of docs/platform.md (between its BEGIN/END markers) from the
# parameter declarations, i.e. from `sim_main --list-types --markdown`. The platform test
# ParamReference.DocsPlatformMdCarriesTheReferenceOfEveryDeclaredKey fails until this is run
# after a declaration changed (a key, range, unit, default or meaning).
#
#   scripts/update_param_docs.sh [BUILD_DIR]     (default: build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
doc="$root/docs/platform.md"
begin='<!-- BEGIN sim_main --list-types --markdown -->'
end='<!-- END sim_main --list-types --markdown -->'
grep -qxF "$begin" "$doc" && grep -qxF "$end" "$doc" || { echo "$doc: no '$begin' ... '$end' block" >&2; exit 1; }
ref=$(mktemp)
trap 'rm -f "$ref" "$doc.tmp"' EXIT
"$build/platform/sim_main" --list-types --markdown > "$ref"
awk -v ref="$ref" -v begin="$begin" -v end="$end" '
    $0 == begin { print; while ((getline line < ref) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }' "$doc" > "$doc.tmp"
mv "$doc.tmp" "$doc"
echo "updated the key reference of $doc"

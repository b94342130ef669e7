#!/usr/bin/env bash
# cmake --install into a temporary prefix, then, out of tree, the example project
# (tests/install/CMakeLists.txt: find_package(xpusim), xpusim::models) configured, built and run;
# the same source built again with pkg-config only (xpusim.pc); the installed tools run from
# the prefix (xpu_sweep and xpu_analyze find the installed sim_main beside them).
# usage: bash run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
source "$2/tests/e2e/lib.sh"
e2e_args 2 "BUILD_DIR SOURCE_DIR" "$@"
BUILD=$1 SRC=$2
e2e_workdir install
prefix="$WORK/prefix"
cmake --install "$BUILD" --prefix "$prefix" > "$WORK/install.log" || { cat "$WORK/install.log" >&2; fail "cmake --install"; }
for f in include/xpusim/models/matrix_unit.h include/xpusim/traces/instruction.h include/xpusim/platform/builder.h \
         lib/libxpusim_models.a lib/libxpusim_platform.a lib/libxpusim_traces.a lib/cmake/xpusim/xpusimConfig.cmake \
         lib/cmake/xpusim/xpusimTargets.cmake lib/pkgconfig/xpusim.pc bin/sim_main bin/xpu_sweep share/xpusim/configs/xpu.yaml; do
    [[ -e "$prefix/$f" ]] || fail "not installed: $f"
done
pass "cmake --install: headers, libraries, CMake package, pkg-config file, tools, configs"

# Out of tree, from a copy of the example: nothing of the source tree on any path.
cp -r "$SRC/tests/install" "$WORK/example"
cmake -S "$WORK/example" -B "$WORK/example-build" -DCMAKE_PREFIX_PATH="$prefix" > "$WORK/cfg.log" 2>&1 \
    || { cat "$WORK/cfg.log" >&2; fail "find_package(xpusim) from the prefix"; }
cmake --build "$WORK/example-build" > "$WORK/build.log" 2>&1 || { cat "$WORK/build.log" >&2; fail "building the example"; }
! grep -q -- "-I$SRC" "$WORK/example-build/CMakeFiles/dma_by_hand.dir/flags.make" || fail "the example compiled against the source tree"
SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "$WORK/example-build/dma_by_hand" > "$WORK/run.txt" || { cat "$WORK/run.txt" >&2; fail "the example failed"; }
cat "$WORK/run.txt"
grep -q "^OK$" "$WORK/run.txt" || fail "the example's check"
pass "find_package(xpusim) + xpusim::models: an sc_main binding the models by hand runs and checks its result"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
g++ -O1 -o "$WORK/dma_pc" "$WORK/example/dma_by_hand.cpp" $(pkg-config --cflags --libs xpusim) 2> "$WORK/pc.log" \
    || { cat "$WORK/pc.log" >&2; fail "building with pkg-config --cflags --libs xpusim"; }
SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "$WORK/dma_pc" | grep -q "^OK$" || fail "the pkg-config build's check"
pass "pkg-config --cflags --libs xpusim builds the same example"

cd "$WORK"
printf 'traces: [%s]\nplatforms: [%s]\ngrid:\n  chip.clock_ghz: [1.05, 2.1]\n' "$SRC/traces/samples/gemm-1k.bin" "$prefix/share/xpusim/configs/xpu.yaml" > spec.yaml
"$prefix/bin/xpu_sweep" spec.yaml --out sw -q || fail "the installed xpu_sweep"
[[ $(grep -c ",ok," sw/results.csv) == 2 ]] || fail "installed sweep: $(cat sw/results.csv)"
pass "the installed tools run from the prefix (xpu_sweep finds the installed sim_main)"
echo "$checks passed, 0 failed"

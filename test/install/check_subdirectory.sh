#!/bin/bash
# Configures and builds test/install/subdir (the project via add_subdirectory
# plus the example engine), then runs the example engine.
# Usage: check_subdirectory.sh SOURCE_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/ge-subdir-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake -S "$src/test/install/subdir" -B "$work/build" -DGE_SOURCE_DIR="$src" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGE_PYTHON_EXECUTABLE=/usr/bin/python3 > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j "$(nproc)" --target ge-example-engine ge_native_ext > "$work/build.log" 2>&1 \
  || { tail -50 "$work/build.log"; exit 1; }
"$work/build/example/ge-example-engine" "$src/plugins/samples" | tee "$work/run.log"
grep -q "row sum 1.000000" "$work/run.log"
echo "add_subdirectory check passed"

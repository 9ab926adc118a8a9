#!/bin/bash
# Configures and builds test/install/subdir (the project via add_subdirectory
# plus the example engine), then runs the example engine.
#
# Where a build exists, the project is not recompiled: its build folder in
# the consumer (add_subdirectory's binary dir) is BUILD_DIR-subdir, a sibling
# of BUILD_DIR, so every compile command, with ccache's base dir at the
# checkout (paths made relative to the folder compiled in; the folder itself
# not hashed), is the one the project's own build ran: ccache hits. The
# consumer's own build folder is BUILD_DIR-subdir/consumer, kept between runs
# (a second run rebuilds only what changed).
# Usage: check_subdirectory.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$(cd "$1" && pwd); build=$(cd "$2" && pwd)
host_build="$build-subdir"
work="$host_build/consumer"
mkdir -p "$work"
export CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1
start=$(date +%s.%N)
cmake -S "$src/test/install/subdir" -B "$work/build" -DGE_SOURCE_DIR="$src" -DGE_HOST_BINARY_DIR="$host_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGE_PYTHON_EXECUTABLE=/usr/bin/python3 > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j "$(nproc)" --target ge-example-engine ge_native_ext > "$work/build.log" 2>&1 \
  || { tail -50 "$work/build.log"; exit 1; }
"$work/build/example/ge-example-engine" "$src/plugins/samples" | tee "$work/run.log"
grep -q "row sum 1.000000" "$work/run.log"
end=$(date +%s.%N)
echo "add_subdirectory check passed in $(/usr/bin/python3 -c "print(f'{$end - $start:.1f}')") s" \
  "($(grep -c 'Building CXX' "$work/build.log" || true) sources compiled or fetched from ccache)"

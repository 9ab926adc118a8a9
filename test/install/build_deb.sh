#!/bin/bash
# Builds the Debian package (CPack, share/cmake/GePluginDist.cmake) in DEB_BUILD:
# configured for /usr (GNUInstallDirs: multiarch lib/<triplet>), the ge package
# on Debian's Python path, no tests or benchmarks. Used by `make deb` and by the
# install.deb test (check_deb.sh). Prints the path of the .deb last.
# Usage: build_deb.sh SOURCE_DIR DEB_BUILD [JOBS]
set -euo pipefail
src=$(cd "$1" && pwd)
mkdir -p "$2"
deb_build=$(cd "$2" && pwd)
jobs=${3:-$(nproc)}
# ccache: paths relative to the checkout, as the Makefile sets them (a build
# beside build/ then reuses its objects).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$src} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
# Debian's link hardening (dpkg-buildflags' LDFLAGS: RELRO, BIND_NOW); its
# compile flags (fortify, stack protector) are left out: they would make every
# object differ from build/'s (no ccache hits).
ldflags=$(dpkg-buildflags --get LDFLAGS 2>/dev/null || echo "-Wl,-z,relro")
ldflags="$ldflags -Wl,-z,now"
cmake -S "$src" -B "$deb_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGE_PYTHON_EXECUTABLE=/usr/bin/python3 \
  -DCMAKE_INSTALL_PREFIX=/usr -DGE_INSTALL_PYTHONDIR=lib/python3/dist-packages \
  -DCMAKE_EXE_LINKER_FLAGS="$ldflags" -DCMAKE_SHARED_LINKER_FLAGS="$ldflags" -DCMAKE_MODULE_LINKER_FLAGS="$ldflags" \
  -DGE_BUILD_TESTS=OFF -DGE_BUILD_BENCHMARKS=OFF > "$deb_build/configure.log" \
  || { cat "$deb_build/configure.log"; exit 1; }
cmake --build "$deb_build" -j "$jobs" > "$deb_build/build.log" 2>&1 || { tail -50 "$deb_build/build.log"; exit 1; }
rm -f "$deb_build"/deb/*.deb
(cd "$deb_build" && cpack -G DEB > "$deb_build/cpack.log" 2>&1) || { cat "$deb_build/cpack.log"; exit 1; }
ls "$deb_build"/deb/*.deb

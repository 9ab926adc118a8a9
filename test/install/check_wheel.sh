#!/bin/bash
# Builds the `ge` wheel (target ge-wheel), installs it with pip --no-index into
# a fresh venv of Debian's /usr/bin/python3, then, with no build or source
# tree on any path: `import ge; ge.__version__`, and ge.testing runs the
# sample plugin plugins/samples/gelu.py (copied away from the checkout) and
# its results match GELU computed here with math.erf. Also: no RUNPATH of the
# installed files points into the build tree, and the wheel's RECORD hashes
# match its files (pip checks them too).
# Usage: check_wheel.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd); src=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/ge-wheel-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

start=$(date +%s.%N)
cmake --build "$build" --target ge-wheel > "$work/wheel.log" 2>&1 || { cat "$work/wheel.log"; fail "building the wheel failed"; }
wheel=$(ls "$build"/dist/ge_plugin-*.whl)
echo "wheel: $wheel"
/usr/bin/python3 -m venv "$work/venv" || fail "python3 -m venv failed (Debian package python3-venv)"
"$work/venv/bin/python" -m pip install --no-index --disable-pip-version-check -q "$wheel" \
  || fail "pip install --no-index of the wheel failed"

site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
while IFS= read -r f; do
  if readelf -d "$f" | grep -E 'RUNPATH|RPATH' | grep -q -e "$build" -e "$src"; then
    fail "$f has a RUNPATH into the build or source tree"
  fi
done < <(find "$site" -name '*.so*' -type f)

mkdir "$work/plugin"
cp "$src/plugins/samples/gelu.py" "$work/plugin/"
cat > "$work/plugin/check_gelu.py" <<'PY'
import math
import os
import sys

import ge
from ge.graph import DataType
from ge.testing import host_tensor, run_execute

venv = os.environ["VENV"]
for mod in (ge, sys.modules["_ge_native"]):
    assert os.path.realpath(mod.__file__).startswith(os.path.realpath(venv) + os.sep), mod.__file__
print("ge", ge.__version__, "from", os.path.dirname(ge.__file__))
assert ge.__version__ == os.environ["EXPECTED_VERSION"], ge.__version__

import gelu  # noqa: E402,F401  (the sample plugin: registers GeluCustom)

xs = [-2.0, -0.5, 0.0, 0.75, 3.0]
(y,) = run_execute("GeluCustom", [host_tensor(xs, DataType.DT_DOUBLE)], attrs={"approximate": "none"})
want = [0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in xs]
got = y.tolist()
assert all(abs(g - w) < 1e-12 for g, w in zip(got, want)) and len(got) == len(want), (got, want)
print("ge.testing: GeluCustom matches math.erf on", len(xs), "values")
PY
version=$(sed -n 's/^project(GePluginHost VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
(cd "$work/plugin" && env -i PATH=/usr/bin:/bin HOME="$work" VENV="$work/venv" EXPECTED_VERSION="$version" \
  "$work/venv/bin/python" -B check_gelu.py) || fail "ge.testing on the sample plugin failed in the venv"
end=$(date +%s.%N)
echo "wheel check passed in $(/usr/bin/python3 -c "print(f'{$end - $start:.1f}')") s (build the wheel, venv, pip install, ge.testing)"

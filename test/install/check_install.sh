#!/bin/bash
# Installs the build to a temporary prefix, moves it (relocatability), then:
# no build or source paths in installed text files or RUNPATHs; the installed
# ge-run runs a sample graph; the example engine (share/examples/engine) builds
# against the CMake package and runs; a program builds with pkg-config; the
# sample op package builds against the installed prefix and runs.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd); src=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/ge-install-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/stage" > "$work/install.log"
mv "$work/stage" "$work/prefix"
prefix="$work/prefix"
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. nothing points back at the build machine's tree
if grep -rIl -e "$build" -e "$src" "$prefix" --exclude-dir=__pycache__ | grep -v '\.so' ; then
  fail "installed text files mention the build or source tree"
fi
while IFS= read -r f; do
  if readelf -d "$f" 2>/dev/null | grep -E 'RUNPATH|RPATH' | grep -q -e "$build" -e "$src"; then
    fail "$f has a RUNPATH into the build tree"
  fi
done < <(find "$prefix" -type f \( -name '*.so*' -o -path '*/bin/*' \))
echo "ok: no build paths in installed files"
# 1b. spdlog stays private: no installed header, .pc file or CMake package
# file a consumer's build reads for its dependencies (GePluginConfig.cmake's
# find_dependency, GePluginTargets.cmake's INTERFACE_LINK_LIBRARIES) names it:
# consumers need no libspdlog-dev (ge/log.h has our own types). The
# per-configuration file's IMPORTED_LINK_DEPENDENT_LIBRARIES, a linker
# search hint for the shared libraries' private dependencies, is not one.
if grep -rIl spdlog "$prefix/include" $(find "$prefix" -name pkgconfig -type d) \
     $(find "$prefix" \( -name GePluginConfig.cmake -o -name GePluginTargets.cmake \)); then
  fail "installed headers or package files mention spdlog"
fi
echo "ok: no spdlog in the installed headers and package files"

# 2. the installed tool runs (relocated prefix)
"$prefix/bin/ge-run" "$prefix/share/ge-plugin/examples/attention_block.json" \
  --opp-path "$prefix/share/ge-plugin/plugins/samples" --output-dir "$work/out" --soc Ascend910B1 > "$work/run.log" \
  || { cat "$work/run.log"; fail "installed ge-run failed"; }
/usr/bin/python3 "$src/share/examples/check_attention_block.py" "$work/out" | tail -1
echo "ok: installed ge-run"
# 2a. isolation "process": the installed host starts its worker from libexec,
# found relative to the (relocated) library
[ -x "$prefix/libexec/ge-plugin/ge-plugin-worker" ] && [ ! -e "$prefix/bin/ge-plugin-worker" ] \
  || fail "ge-plugin-worker is not (only) in libexec/ge-plugin"
env -u GE_PLUGIN_WORKER "$prefix/bin/ge-run" "$prefix/share/ge-plugin/examples/attention_block.json" \
  --opp-path "$prefix/share/ge-plugin/plugins/samples" --output-dir "$work/out-process" --soc Ascend910B1 \
  --isolation process > "$work/run-process.log" 2>&1 \
  || { cat "$work/run-process.log"; fail "installed ge-run --isolation process failed"; }
/usr/bin/python3 "$src/share/examples/check_attention_block.py" "$work/out-process" | tail -1
echo "ok: installed ge-run --isolation process (its worker from libexec)"
# 2b. the installed ge-plugin-ls scans with the installed scanner: libexec,
# found relative to the (relocated) tool
[ -x "$prefix/libexec/ge-plugin/ge-plugin-scan" ] && [ ! -e "$prefix/bin/ge-plugin-scan" ] \
  || fail "ge-plugin-scan is not (only) in libexec/ge-plugin"
env -u GE_PLUGIN_SCAN -u GE_PLUGIN_PYTHON_DIR -u PYTHONPATH GE_PLUGIN_REGISTRY_SOCKET="$work/none.sock" \
  "$prefix/bin/ge-plugin-ls" --no-daemon --cache "$work/ls/registry.json" \
  --opp-path "$prefix/share/ge-plugin/plugins/samples" --json > "$work/ls.json" 2> "$work/ls.log" \
  || { cat "$work/ls.log"; fail "installed ge-plugin-ls failed"; }
/usr/bin/python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["plugins"]; bad = [x["name"] for x in p if x["status"] != "ok"]; assert p and not bad, bad' \
  "$work/ls.json" || fail "the installed ge-plugin-ls did not list the sample plugins as ok"
echo "ok: installed ge-plugin-ls (its scanner from libexec)"

# 3. the example engine against the CMake package
cmake -S "$src/share/examples/engine" -B "$work/example" -DCMAKE_PREFIX_PATH="$prefix" > "$work/example.log" 2>&1 \
  || { cat "$work/example.log"; fail "configuring the example engine failed"; }
cmake --build "$work/example" > "$work/example-build.log" 2>&1 || { cat "$work/example-build.log"; fail "building it failed"; }
"$work/example/ge-example-engine" "$prefix/share/ge-plugin/plugins/samples" Ascend310P3 | tee "$work/example-run.log"
grep -q "row sum 1.000000" "$work/example-run.log" || fail "the example engine gave a wrong result"
echo "ok: example engine via find_package(GePlugin)"

# 4. pkg-config
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$(find "$prefix" -type d -name pkgconfig | head -1)"
cat > "$work/pc.cc" <<'CC'
#include "ge/op/op_registry.h"
#include "ge/host/plugin_host.h"
int main() { ge::OpRegistry r; return ge::RegisterBuiltinOps(r).ok() && r.Find("ReluCpp") ? 0 : 1; }
CC
# shellcheck disable=SC2046
g++ -std=c++17 "$work/pc.cc" -o "$work/pc" $(pkg-config --cflags --libs ge-plugin-host) \
  -Wl,-rpath,"$(pkg-config --variable=libdir ge-plugin-host)" || fail "building with pkg-config failed"
"$work/pc" || fail "the pkg-config program failed"
echo "ok: pkg-config"
# 4b. a custom op written as GE's examples write it (GE's header paths only)
# builds against the installed headers and registers and runs with our engine's API
cat > "$work/ge_op.cc" <<'CC'
#include "graph/custom_op.h"
namespace ge {
class InstallCheckOp : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus Execute(gert::EagerOpExecutionContext *ctx) override {
    const gert::Tensor *x = ctx->GetInputTensor(0);
    gert::Tensor *y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetFormat(), x->GetDataType());
    return y == nullptr ? GRAPH_FAILED : GRAPH_SUCCESS;
  }
  graphStatus InferShape(gert::InferShapeContext *ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(gert::InferDataTypeContext *ctx) override {
    return ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
  }
};
REG_AUTO_MAPPING_OP(InstallCheckOp);
}  // namespace ge
CC
cat > "$work/ge_op_main.cc" <<'CC'
#include "ge/op/custom_op.h"
#include "ge/op/library_registrations.h"
int main() {
  auto regs = ge::TakeRegistrations();
  if (regs.custom_ops.size() != 1 || regs.custom_ops[0].op_type != "InstallCheckOp") return 1;
  std::shared_ptr<ge::BaseCustomOp> op(regs.custom_ops[0].creator());
  ge::OpSchema s;
  s.op_type = "InstallCheckOp";
  s.inputs = {{"x", ge::IrInputKind::kRequired}};
  s.outputs = {{"y", ge::IrOutputKind::kRequired}};
  ge::Tensor x = ge::Tensor::Allocate(ge::TensorDesc(ge::Shape{2}, ge::DT_FLOAT));
  ge::RuntimeAttrs attrs;
  ge::EagerOpExecutionContext ctx(s, {&x}, ge::InstanceLayout({1}), attrs, ge::InstanceLayout({1}));
  auto* exec = ge::CustomOpCast<ge::EagerExecuteOp>(op);
  if (exec == nullptr || ge::CustomOpCast<ge::CompilableOp>(op) != nullptr) return 2;
  return exec->Execute(&ctx) == ge::GRAPH_SUCCESS && ctx.GetOutputTensor(0) != nullptr ? 0 : 3;
}
CC
# shellcheck disable=SC2046
g++ -std=c++17 "$work/ge_op.cc" "$work/ge_op_main.cc" -o "$work/ge_op" $(pkg-config --cflags --libs ge-plugin-framework) \
  -Wl,-rpath,"$(pkg-config --variable=libdir ge-plugin-framework)" || fail "building a GE-style custom op failed"
"$work/ge_op" || fail "the GE-style custom op did not register or run (exit $?)"
echo "ok: a GE-style custom op against the installed headers"
# 5. the shipped stubs type-check the installed template against the installed package
pydir=$(dirname "$(find "$prefix" -name py.typed -path '*/ge/py.typed' | head -1)")
if [ -z "$pydir" ] || [ ! -d "$prefix/share/ge-plugin/template/my_op" ]; then fail "py.typed or the template is not installed"; fi
MYPYPATH="$(dirname "$pydir")" /usr/bin/python3 -m mypy --strict --no-incremental --cache-dir=/dev/null \
  "$prefix/share/ge-plugin/template/my_op" || fail "mypy on the installed template failed"
echo "ok: stubs and template"
# 6. the sample op package (upstream-style: REG_OP prototypes, a C++ custom op,
# an impl-only Python plugin) builds from its installed copy with
# find_package(GePlugin) alone, and the installed ge-run runs it
pkg_src="$prefix/share/ge-plugin/plugins/samples/scaled_add_package"
cmake -S "$pkg_src" -B "$work/pkg" -DCMAKE_PREFIX_PATH="$prefix" > "$work/pkg.log" 2>&1 \
  || { cat "$work/pkg.log"; fail "configuring the sample op package failed"; }
cmake --build "$work/pkg" > "$work/pkg-build.log" 2>&1 || { cat "$work/pkg-build.log"; fail "building it failed"; }
"$prefix/bin/ge-run" "$prefix/share/ge-plugin/examples/op_package.json" \
  --opp-path "$work/pkg/opp:$pkg_src/python:$prefix/share/ge-plugin/plugins/samples" --output-dir "$work/pkg-out" \
  > "$work/pkg-run.log" || { cat "$work/pkg-run.log"; fail "ge-run on the sample op package failed"; }
/usr/bin/python3 "$src/share/examples/check_op_package.py" "$work/pkg-out" | tail -1
echo "ok: the sample op package via find_package(GePlugin)"
echo "install check passed"

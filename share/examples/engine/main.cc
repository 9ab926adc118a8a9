// ge-example-engine: how an engine uses the plugin host through its C++ API.
//
//   ge-example-engine OPP_PATH [SOC]
//
// Loads the plugins of OPP_PATH, prints the load report, then drives
// TiledSoftmaxCustom (plugins/samples/tiled_softmax) the way a graph engine
// would: infer_meta, compile for SOC (default host), then execute, all through
// the C++ capability interfaces (GE's, graph/custom_op.h, plus ours,
// ge/op/custom_op.h); the op happens to be written in Python.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "ge/host/plugin_host.h"
#include "ge/op/custom_op.h"
#include "ge/op/op_registry.h"
#include "ge/platform/platform_info.h"

// Prints why a callback failed: the details it left in the context's error
// slot (a Python op's exception and traceback), and returns 1.
int Failed(gert::ExtendedKernelContext& ctx, const char* call) {
  const ge::Status st = ctx.TakeError();
  std::cerr << call << " failed: " << (st.ok() ? "no details" : st.Describe()) << "\n";
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: ge-example-engine OPP_PATH [SOC]\n";
    return 2;
  }
  const std::string soc = argc > 2 ? argv[2] : "host";

  ge::OpRegistry registry;  // C++ ops and Python adapters are peers in it
  ge::host::HostOptions options;
  options.opp_paths = ge::plugin::SplitOppPath(argv[1]);
  options.use_env_opp_path = false;
  ge::host::PluginHost host(options, registry);
  for (const auto& r : host.LoadAll()) {
    std::cout << "plugin " << r.name << " [" << r.status << ", " << r.isolation << "]"
              << (r.error.empty() ? "" : ": " + r.error.OneLine()) << "\n";
  }

  std::shared_ptr<ge::BaseCustomOp> op = registry.Create("TiledSoftmaxCustom");
  if (!op) {
    std::cerr << "TiledSoftmaxCustom is not registered\n";
    return 1;
  }
  const ge::OpSchema& schema = *registry.Find("TiledSoftmaxCustom")->schema;
  std::cout << "op " << schema.ToString() << " capabilities " << ge::CapabilityString(ge::OpCapabilities(*op)) << "\n";

  // infer_meta
  ge::TensorDesc x_desc(ge::Shape{4, 3}, ge::DT_FLOAT);
  ge::RuntimeAttrs attrs;
  ge::InferMetaContext im(schema, {x_desc}, ge::InstanceLayout({1}), attrs);
  auto* infer = ge::CustomOpCast<ge::InferMetaOp>(op);
  if (infer == nullptr || infer->InferMeta(&im) != ge::GRAPH_SUCCESS) return Failed(im, "infer_meta");

  // compile for the target platform
  std::map<std::string, std::string> compile_options{{"tiling.max_block_dim", "8"}};
  ge::OpCompileContext cc(schema, {x_desc}, ge::InstanceLayout({1}), im.Outputs(), im.OutputLayout(), attrs,
                          compile_options, [soc]() {
                            return std::make_shared<const ge::PlatformInfos>(
                                ge::PlatformInfos::ForSoc(soc, ge::DefaultPlatformDir()));
                          });
  if (auto* compilable = ge::CustomOpCast<ge::CompilableOp>(op)) {
    if (compilable->Compile(&cc) != ge::GRAPH_SUCCESS) return Failed(cc, "compile");
  }

  // execute on host tensors
  ge::Tensor x = ge::Tensor::Allocate(x_desc);
  for (int i = 0; i < 12; ++i) x.Data<float>()[i] = static_cast<float>(i % 3);
  ge::EagerOpExecutionContext ec(schema, {&x}, ge::InstanceLayout({1}), attrs, im.OutputLayout());
  auto* exec = ge::CustomOpCast<ge::EagerExecuteOp>(op);
  if (exec == nullptr || exec->Execute(&ec) != ge::GRAPH_SUCCESS) return Failed(ec, "execute");
  auto outs = ec.TakeOutputs();
  const float* y = outs[0]->Data<float>();
  const int64_t* tiling = outs[1]->Data<int64_t>();
  std::printf("softmax row 0: %.4f %.4f %.4f\n", y[0], y[1], y[2]);
  std::printf("tiling for %s: block_dim=%lld rows_per_block=%lld core_num=%lld\n", soc.c_str(),
              static_cast<long long>(tiling[0]), static_cast<long long>(tiling[1]), static_cast<long long>(tiling[2]));
  const float sum = y[0] + y[1] + y[2];
  std::printf("row sum %.6f, Python calls %llu\n", sum, static_cast<unsigned long long>(host.PythonCalls()));
  return std::fabs(sum - 1.0f) < 1e-5f ? 0 : 1;
}

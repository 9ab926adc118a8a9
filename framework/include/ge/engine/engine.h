// ge/engine/engine.h: the reference engine behind ge-run.
//
// Compile resolves every node's op in an OpRegistry, coerces its JSON
// attributes by the IR, orders the nodes by their dependencies and runs
// infer_meta; Run executes the nodes in that order on host tensors and checks
// each output against the inferred metadata. Errors are EngineError naming the
// node and field. The engine never knows whether an op is C++ or Python.
//
// Thread-safety: one Engine/CompiledGraph per thread; the registry may be shared.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ge/engine/cpu_backend.h"
#include "ge/engine/graph.h"
#include "ge/op/custom_op.h"
#include "ge/op/op_registry.h"

namespace ge {

class EngineError : public std::runtime_error {
 public:
  // What went wrong, for callers that react to it: test kind(), never the text
  // of what() (which is for people and may change).
  enum class Kind {
    kGraph,          // the graph does not fit the ops: inputs, references, attributes, a cycle, graph outputs
    kUnknownOpType,  // a node's op_type is not registered (its plugin may have failed to load)
    kOp,             // an op failed or broke its contract: creating it, infer_meta (or InferShape /
                     // InferDataType), compile, declare_launch_args, execute (a failure code, a
                     // C++ exception), missing capabilities, outputs unlike infer_meta's
    kKernel,         // a declared kernel: its binary cannot be loaded, the kernel is not in it,
                     // or it crashed (then fatal())
    kRun,            // Run itself: an invalid repeat count, an output that cannot be allocated
  };

  EngineError(Kind kind, std::string node, const std::string& msg, std::string details = {}, bool fatal = false)
      : std::runtime_error(msg), kind_(kind), node_(std::move(node)), details_(std::move(details)), fatal_(fatal) {}
  // Kind kGraph.
  EngineError(std::string node, const std::string& msg, std::string details = {}, bool fatal = false)
      : EngineError(Kind::kGraph, std::move(node), msg, std::move(details), fatal) {}
  Kind kind() const noexcept { return kind_; }
  const std::string& node() const noexcept { return node_; }
  // A kernel crashed: the process is unreliable (locks may be held); report
  // and end it without further clean-up.
  bool fatal() const noexcept { return fatal_; }
  // Extra lines (a Python traceback) for logs; may be empty.
  const std::string& details() const noexcept { return details_; }

 private:
  Kind kind_ = Kind::kGraph;
  std::string node_;
  std::string details_;
  bool fatal_ = false;
};

struct NodeStats {
  std::string name;
  std::string op_type;
  std::string source;  // plugin file or "builtin"
  bool python = false;
  uint64_t infer_meta_calls = 0;
  uint64_t compile_calls = 0;
  uint64_t declare_calls = 0;  // declare_launch_args (once per compilation)
  uint64_t execute_calls = 0;
  uint64_t kernel_launches = 0;  // launches of the cached task plan, all runs
  double execute_seconds = 0;  // total over all runs
};

struct CompiledNode {
  const GraphNode* node = nullptr;
  std::shared_ptr<BaseCustomOp> op;
  std::shared_ptr<const OpSchema> schema;
  uint32_t capabilities = 0;  // the op object's, plus kInferMeta for IMPL_OP infer functions
  InferShapeKernelFunc infer_shape = nullptr;        // from the registration (IMPL_OP)
  InferDataTypeKernelFunc infer_datatype = nullptr;  // from the registration (IMPL_OP)
  RuntimeAttrs attrs;
  std::vector<NodeInput> inputs;    // resolved in IR order
  InstanceLayout input_layout;
  std::vector<TensorDesc> input_descs;  // flattened input metadata (from graph inputs / infer_meta)
  // Per flattened input: its metadata is known at compile time (a graph input,
  // or an output of a node whose infer_meta ran). A node with an unknown input
  // skips inference: its outputs are unknown until execute too.
  std::vector<bool> input_known;
  std::optional<std::vector<TensorDesc>> inferred;  // from infer_meta; nullopt: unknown until execute
  InstanceLayout output_layout;
  NodeStats stats;
  // Annotated args: the cached task plan, its kernels resolved, and per-launch
  // argument words patched with the run's addresses (no Python at run time).
  struct Launch {
    std::string kernel_name;
    std::string label;  // "node 'n' (Op): kernel 'k'" for crash reports
    CpuKernelFn fn = nullptr;
    uint32_t block_dim = 1;
    std::vector<KernelArgSlot> slots;
    std::vector<uint64_t> words;
  };
  std::optional<TaskPlan> plan;
  std::vector<Launch> launches;
};

// What a compilation targets: compile options (the graph's "options" overridden
// by the caller's) and the platform (`soc`: "host" or a share/platform ini name).
struct CompileOptions {
  std::map<std::string, std::string> options;
  std::string soc = "host";
  std::string platform_dir;  // empty: DefaultPlatformDir()
};

struct CompiledGraph {
  const Graph* graph = nullptr;
  std::shared_ptr<KernelCache> kernels;  // keeps the loaded kernel binaries
  std::map<std::string, std::string> options;  // effective compile options
  std::vector<CompiledNode> nodes;  // dependency order
};

struct RunResult {
  std::map<std::string, Tensor> outputs;  // by output reference text ("n1:0")
  double seconds = 0;                     // wall time of all runs
};

class Engine {
 public:
  explicit Engine(const OpRegistry& registry) : registry_(registry) {}
  ~Engine();

  // Resolves, checks, orders, runs infer_meta, then the compile phase: each
  // node whose op is compilable gets exactly one Compile call (compiling the
  // same graph twice calls it twice). Throws EngineError; nothing runs.
  // `graph` must outlive the result.
  CompiledGraph Compile(const Graph& graph, const CompileOptions& options = {});
  // Executes `repeat` (>= 1) times; outputs are those of the last run.
  RunResult Run(CompiledGraph& compiled, int repeat = 1);

 private:
  void RunPlan(CompiledNode& c, const std::vector<Tensor*>& ins, std::map<std::string, Tensor>& values);
  static std::vector<Tensor> NodeInputs(const CompiledNode& c, std::map<std::string, Tensor>& values);
  const OpRegistry& registry_;
  std::unique_ptr<BlockPool> pool_;  // created at the first kernel launch
};

// Coerces a plain JSON attribute value to `type` (numbers for floats, names
// such as "float16" for DataType, {"dtype","shape","data"} for a tensor).
// Throws GraphError at `where`.
AttrValue AttrFromJson(const nlohmann::json& v, AttrType type, const std::string& where);

}  // namespace ge

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

#include "ge/engine/graph.h"
#include "ge/op/custom_op.h"
#include "ge/op/op_registry.h"

namespace ge {

class EngineError : public std::runtime_error {
 public:
  EngineError(std::string node, const std::string& msg, std::string details = {})
      : std::runtime_error(msg), node_(std::move(node)), details_(std::move(details)) {}
  const std::string& node() const noexcept { return node_; }
  // Extra lines (a Python traceback) for logs; may be empty.
  const std::string& details() const noexcept { return details_; }

 private:
  std::string node_;
  std::string details_;
};

struct NodeStats {
  std::string name;
  std::string op_type;
  std::string source;  // plugin file or "builtin"
  bool python = false;
  uint64_t infer_meta_calls = 0;
  uint64_t compile_calls = 0;
  uint64_t execute_calls = 0;
  double execute_seconds = 0;  // total over all runs
};

struct CompiledNode {
  const GraphNode* node = nullptr;
  std::shared_ptr<BaseCustomOp> op;
  std::shared_ptr<const OpSchema> schema;
  RuntimeAttrs attrs;
  std::vector<NodeInput> inputs;    // resolved in IR order
  InstanceLayout input_layout;
  std::optional<std::vector<TensorDesc>> inferred;  // from infer_meta
  InstanceLayout output_layout;
  NodeStats stats;
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

  // Resolves, checks, orders, runs infer_meta, then the compile phase: each
  // node whose op is compilable gets exactly one Compile call (compiling the
  // same graph twice calls it twice). Throws EngineError; nothing runs.
  // `graph` must outlive the result.
  CompiledGraph Compile(const Graph& graph, const CompileOptions& options = {});
  // Executes `repeat` (>= 1) times; outputs are those of the last run.
  RunResult Run(CompiledGraph& compiled, int repeat = 1);

 private:
  const OpRegistry& registry_;
};

// Coerces a plain JSON attribute value to `type` (numbers for floats, names
// such as "float16" for DataType, {"dtype","shape","data"} for a tensor).
// Throws GraphError at `where`.
AttrValue AttrFromJson(const nlohmann::json& v, AttrType type, const std::string& where);

}  // namespace ge

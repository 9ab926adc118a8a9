// ge/engine/graph.h: the reference engine's graph file (JSON) and its parser.
//
// Format (README "Graph files"): name, options, inputs (name, dtype, shape and
// inline "data" or a "file" .npy relative to the graph file), nodes (name,
// op_type, inputs in IR order as "name" / "node:index" / list / null, attrs as
// plain JSON) and outputs ("node:index" or a graph input name). Parsing checks
// structure only; op-dependent checks happen in Engine::Compile.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "ge/runtime/tensor.h"

namespace ge {

// A graph error: `where` names the file and field ("graph.json: nodes[1] 'n1'
// inputs[0]"), `what()` is the whole message.
class GraphError : public std::runtime_error {
 public:
  GraphError(const std::string& where, const std::string& msg) : std::runtime_error(where + ": " + msg), where_(where) {}
  const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

// A reference to a tensor: a graph input ("x") or a node output ("n0:1").
struct TensorRef {
  std::string text;  // as written
  std::string node;  // empty for a graph input
  std::size_t index = 0;
};

// One node input slot: absent (null), one tensor, or a list (dynamic input).
using NodeInput = std::variant<std::monostate, TensorRef, std::vector<TensorRef>>;

struct GraphInput {
  std::string name;
  Tensor tensor;  // owned data
};

struct GraphNode {
  std::string name;
  std::string op_type;
  std::vector<NodeInput> inputs;
  nlohmann::json attrs = nlohmann::json::object();
};

struct Graph {
  std::string name;
  std::string file;  // for messages
  std::map<std::string, std::string> options;
  std::vector<GraphInput> inputs;
  std::vector<GraphNode> nodes;
  std::vector<TensorRef> outputs;
};

// Parses a graph file. Throws GraphError naming the file and field.
Graph LoadGraph(const std::filesystem::path& path);
// Parses JSON text; relative .npy files resolve against `base_dir`.
Graph ParseGraph(const std::string& text, const std::string& file, const std::filesystem::path& base_dir);

// Builds an owned tensor from nested JSON lists for `dtype` and `shape`
// (float16/bfloat16 are rounded to nearest even). Throws GraphError at `where`.
Tensor TensorFromJson(const nlohmann::json& data, DataType dtype, const Shape& shape, const std::string& where);

}  // namespace ge

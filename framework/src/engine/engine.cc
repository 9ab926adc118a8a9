// The reference engine: compile (resolve, coerce attrs, order, infer_meta) and run.
#include "ge/engine/engine.h"

#include "ge/op/infer_contexts.h"
#include "ge/text.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <queue>
#include <set>

namespace ge {

namespace {

using nlohmann::json;
using Kind = EngineError::Kind;

std::string NodeWhere(const GraphNode& n) { return "node '" + Abbreviate(n.name) + "' (" + Abbreviate(n.op_type) + ")"; }

// Calls one op callback and turns its failure into an EngineError whose
// message starts with `what` and " failed" ("node 'n' (Op): execute failed"):
// the details the callee left in the context's error slot when there are any
// (a Python exception: its message, and its traceback as details), else the
// bare code; a C++ exception escaping the callee is reported with its what().
// `source`, when given, is named after the call ("compile failed (f.py)").
template <typename Call>
void CallOp(const GraphNode& n, const char* what, const std::string* source, gert::ExtendedKernelContext& ctx,
            Call&& call) {
  ctx.SetNodeName(n.name);
  graphStatus code = GRAPH_FAILED;
  auto failed = [&] { return NodeWhere(n) + ": " + what + " failed" + (source ? " (" + *source + ")" : std::string()); };
  try {
    code = call();
  } catch (const std::exception& e) {
    throw EngineError(Kind::kOp, n.name, failed() + ": C++ exception: " + e.what());
  } catch (...) {
    throw EngineError(Kind::kOp, n.name, failed() + ": C++ exception of an unknown type");
  }
  if (code == GRAPH_SUCCESS) return;
  Status st = ctx.TakeError();
  if (!st.ok()) {
    // Details only for what they add to the message (where: plugin,
    // location, callback; a traceback): the message itself is said once.
    std::string details = st.Describe();
    if (details.compare(0, st.message().size(), st.message()) == 0) {
      const std::size_t start = details.find_first_not_of(" \n", st.message().size());
      details = start == std::string::npos ? std::string() : details.substr(start);
    }
    throw EngineError(Kind::kOp, n.name, failed() + ": " + st.message(), std::move(details));
  }
  throw EngineError(Kind::kOp, n.name, failed() + ": returned graphStatus " + std::to_string(code));
}

std::size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The longest op_type a suggestion is looked for: the edit distance costs
// the product of the lengths, and no op_type a person types is longer.
constexpr std::size_t kMaxSuggestChars = 256;

// " (did you mean 'X'?)", or the registered op_types when there are few.
// A known op_type is compared only when the lengths differ by less than the
// distance allowed (which the length difference bounds from below), and
// none when `wanted` is longer than kMaxSuggestChars.
std::string SuggestOpType(const std::string& wanted, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, wanted.size() / 4) + 1;
  for (const auto& k : known) {
    if (wanted.size() > kMaxSuggestChars) break;
    const std::size_t gap = wanted.size() > k.size() ? wanted.size() - k.size() : k.size() - wanted.size();
    if (gap >= best_d) continue;
    const std::size_t d = EditDistance(wanted, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  if (!best.empty()) return " (did you mean '" + Abbreviate(best) + "'?)";
  if (known.empty()) return " (no op is registered)";
  std::string list;
  for (std::size_t i = 0; i < known.size() && i < 12; ++i) list += (i ? ", " : "") + known[i];
  if (known.size() > 12) list += ", ...";
  return " (registered op_types: " + list + ")";
}

int64_t JsonInt(const json& v, const std::string& where) {
  if (!v.is_number_integer()) throw GraphError(where, "expected an integer, got " + Abbreviate(v.dump()));
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) throw GraphError(where, "integer does not fit int64");
  return v.get<int64_t>();
}
float JsonFloat(const json& v, const std::string& where) {
  if (!v.is_number()) throw GraphError(where, "expected a number, got " + Abbreviate(v.dump()));
  return static_cast<float>(v.get<double>());
}
bool JsonBool(const json& v, const std::string& where) {
  if (!v.is_boolean()) throw GraphError(where, "expected true or false, got " + Abbreviate(v.dump()));
  return v.get<bool>();
}
std::string JsonStr(const json& v, const std::string& where) {
  if (!v.is_string()) throw GraphError(where, "expected a string, got " + Abbreviate(v.dump()));
  return v.get<std::string>();
}
DataType JsonDataType(const json& v, const std::string& where) {
  const std::string s = JsonStr(v, where);
  auto dt = DataTypeFromName(s);
  if (!dt) throw GraphError(where, "unknown dtype '" + Abbreviate(s) + "'");
  return *dt;
}
template <typename T, typename F>
std::vector<T> JsonList(const json& v, const std::string& where, F&& f) {
  if (!v.is_array()) throw GraphError(where, "expected a list, got " + Abbreviate(v.dump()));
  std::vector<T> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(f(v[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace

AttrValue AttrFromJson(const json& v, AttrType type, const std::string& where) {
  switch (type) {
    case AttrType::VT_INT: return JsonInt(v, where);
    case AttrType::VT_FLOAT: return JsonFloat(v, where);
    case AttrType::VT_BOOL: return JsonBool(v, where);
    case AttrType::VT_STRING: return JsonStr(v, where);
    case AttrType::VT_DATA_TYPE: return JsonDataType(v, where);
    case AttrType::VT_TENSOR: {
      if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data")) {
        throw GraphError(where, "a tensor attribute is {\"dtype\": ..., \"shape\": [...], \"data\": [...]}");
      }
      DataType dt = JsonDataType(v["dtype"], where + ".dtype");
      Shape s;
      for (const auto& d : JsonList<int64_t>(v["shape"], where + ".shape", JsonInt)) {
        if (d < 0 || s.GetDimNum() >= kMaxDimNum) throw GraphError(where + ".shape", "bad shape");
        s.AppendDim(d);
      }
      return TensorAttr(std::make_shared<const Tensor>(TensorFromJson(v["data"], dt, s, where + ".data")));
    }
    case AttrType::VT_LIST_INT: return JsonList<int64_t>(v, where, JsonInt);
    case AttrType::VT_LIST_FLOAT: return JsonList<float>(v, where, JsonFloat);
    case AttrType::VT_LIST_BOOL: return JsonList<bool>(v, where, JsonBool);
    case AttrType::VT_LIST_STRING: return JsonList<std::string>(v, where, JsonStr);
    case AttrType::VT_LIST_DATA_TYPE: return JsonList<DataType>(v, where, JsonDataType);
    case AttrType::VT_LIST_LIST_INT:
      return JsonList<std::vector<int64_t>>(v, where, [](const json& x, const std::string& w) {
        return JsonList<int64_t>(x, w, JsonInt);
      });
  }
  throw GraphError(where, "unknown attribute type");
}

namespace {

// The graph's names, looked up by every pass of Compile.
struct GraphIndex {
  explicit GraphIndex(const Graph& graph) {
    for (const auto& in : graph.inputs) inputs[in.name] = &in;
    for (std::size_t i = 0; i < graph.nodes.size(); ++i) nodes[graph.nodes[i].name] = i;
  }
  std::map<std::string, const GraphInput*> inputs;
  std::map<std::string, std::size_t> nodes;
};

// Node name -> the metadata of its flattened outputs (from infer_meta, or
// unknown descriptions for an op without it).
using OutputMetas = std::map<std::string, std::vector<TensorDesc>>;

// ---- pass 1: resolve ops, check inputs and attributes against the IR ----

// Finds and creates the node's op; fills its schema and the stats' identity.
void ResolveOp(const OpRegistry& registry, const GraphNode& n, CompiledNode& c) {
  auto reg = registry.Find(n.op_type);
  if (!reg) {
    // A plugin's note says why the op_type is known but not registered (a
    // plugin that implements it was not loaded, or one only prototypes it);
    // else a close op_type or the registered ones.
    const std::string note = registry.UnimplementedNote(n.op_type);
    throw EngineError(Kind::kUnknownOpType, n.name,
                      NodeWhere(n) + ": unknown op_type '" + Abbreviate(n.op_type) + "'" +
                          (note.empty() ? SuggestOpType(n.op_type, registry.ListOpTypes()) : ": " + note));
  }
  c.schema = reg->schema;
  std::string why;
  c.op = registry.Create(n.op_type, &why);
  if (!c.op) {
    const std::string source = reg->plugin.empty() || reg->plugin == reg->source ? reg->source
                                                                                : reg->plugin + ", " + reg->source;
    throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": creating the op failed (" + source + ")" +
                                             (why.empty() ? std::string() : ": " + why));
  }
  c.infer_shape = reg->infer_shape;
  c.infer_datatype = reg->infer_datatype;
  c.capabilities = OpCapabilities(*c.op);
  if (c.infer_shape != nullptr) c.capabilities = c.capabilities | CustomOpCapability::kInferMeta;
  c.stats.name = n.name;
  c.stats.op_type = n.op_type;
  c.stats.source = reg->source;
  c.stats.python = !reg->plugin.empty();
}

// Checks each input against its IR kind and its references against the graph;
// returns the instance count of every IR input.
std::vector<std::size_t> CheckInputs(const GraphNode& n, const OpSchema& s, const GraphIndex& index) {
  if (n.inputs.size() != s.inputs.size()) {
    throw EngineError(Kind::kGraph, n.name, NodeWhere(n) + ": inputs: got " + std::to_string(n.inputs.size()) + ", the IR " +
                                                s.ToString() + " expects " + std::to_string(s.inputs.size()));
  }
  std::vector<std::size_t> counts;
  for (std::size_t k = 0; k < s.inputs.size(); ++k) {
    const NodeInput& in = n.inputs[k];
    const std::string w = NodeWhere(n) + ": inputs[" + std::to_string(k) + "] (IR input '" + s.inputs[k].name + "')";
    switch (s.inputs[k].kind) {
      case IrInputKind::kRequired:
        if (!std::holds_alternative<TensorRef>(in)) {
          throw EngineError(Kind::kGraph, n.name, w + ": required input needs one tensor reference");
        }
        counts.push_back(1);
        break;
      case IrInputKind::kOptional:
        if (std::holds_alternative<std::vector<TensorRef>>(in)) {
          throw EngineError(Kind::kGraph, n.name, w + ": optional input takes one tensor or null, not a list");
        }
        counts.push_back(std::holds_alternative<TensorRef>(in) ? 1 : 0);
        break;
      case IrInputKind::kDynamic:
        if (!std::holds_alternative<std::vector<TensorRef>>(in)) {
          throw EngineError(Kind::kGraph, n.name, w + ": dynamic input needs a list of tensor references");
        }
        counts.push_back(std::get<std::vector<TensorRef>>(in).size());
        break;
    }
    auto check_ref = [&](const TensorRef& r) {
      if (r.node.empty()) {
        if (!index.inputs.count(r.text)) {
          throw EngineError(Kind::kGraph, n.name, w + ": unknown graph input '" + Abbreviate(r.text) + "'");
        }
      } else {
        if (!index.nodes.count(r.node)) {
          throw EngineError(Kind::kGraph, n.name,
                            w + ": unknown node '" + Abbreviate(r.node) + "' in '" + Abbreviate(r.text) + "'");
        }
        if (r.node == n.name) throw EngineError(Kind::kGraph, n.name, w + ": a node cannot consume its own output");
      }
    };
    if (auto* r = std::get_if<TensorRef>(&in)) check_ref(*r);
    if (auto* v = std::get_if<std::vector<TensorRef>>(&in)) for (const auto& r : *v) check_ref(r);
  }
  return counts;
}

// Attributes: known names only, coerced by the IR's types, defaults applied.
RuntimeAttrs CoerceAttrs(const GraphNode& n, const OpSchema& s) {
  for (const auto& [k, v] : n.attrs.items()) {
    if (!s.FindAttr(k)) {
      std::string known;
      for (const auto& a : s.attrs) known += (known.empty() ? "" : ", ") + a.name;
      throw EngineError(Kind::kGraph, n.name, NodeWhere(n) + ": attrs." + Abbreviate(k) + ": unknown attribute (the IR has: " +
                                                  (known.empty() ? "none" : known) + ")");
    }
  }
  std::vector<AttrValue> values;
  for (const auto& a : s.attrs) {
    if (n.attrs.contains(a.name)) {
      try {
        values.push_back(AttrFromJson(n.attrs[a.name], a.type, NodeWhere(n) + ": attrs." + a.name));
      } catch (const GraphError& e) {
        throw EngineError(Kind::kGraph, n.name, std::string(e.what()) + " (" + std::string(AttrTypeName(a.type)) + ")");
      }
    } else if (a.default_value) {
      values.push_back(*a.default_value);
    } else {
      throw EngineError(Kind::kGraph, n.name, NodeWhere(n) + ": attrs." + Abbreviate(a.name) + ": missing required attribute (" +
                                                  std::string(AttrTypeName(a.type)) + ")");
    }
  }
  return RuntimeAttrs(std::move(values));
}

// One compiled node per graph node, in the graph's order.
std::vector<CompiledNode> ResolveNodes(const OpRegistry& registry, const Graph& graph, const GraphIndex& index) {
  std::vector<CompiledNode> nodes(graph.nodes.size());
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& n = graph.nodes[i];
    CompiledNode& c = nodes[i];
    c.node = &n;
    ResolveOp(registry, n, c);
    const std::vector<std::size_t> counts = CheckInputs(n, *c.schema, index);
    c.inputs = n.inputs;
    c.input_layout = InstanceLayout(counts);
    c.attrs = CoerceAttrs(n, *c.schema);
  }
  return nodes;
}

// ---- pass 2: dependency order (Kahn); a cycle names a node on it ----

// The order is the one of sweeping the node list again and again, taking
// each node whose producers are taken (a node listed after its producers in
// the same sweep, else in a later one): for node i, its sweep is the largest
// over its producers d of sweep(d), plus one when d is listed after i; the
// order is by (sweep, position in the list). Computed in O(N + E) over a Kahn
// order plus one sort, whatever the listing order (a 100k-node chain listed
// consumer-first is as fast as one listed producer-first).
std::vector<std::size_t> DependencyOrder(const Graph& graph, const std::vector<CompiledNode>& nodes,
                                         const GraphIndex& index) {
  const std::size_t n = nodes.size();
  std::vector<std::vector<std::size_t>> deps(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto add = [&](const TensorRef& r) {
      if (!r.node.empty()) deps[i].push_back(index.nodes.at(r.node));
    };
    for (const auto& in : nodes[i].inputs) {
      if (auto* r = std::get_if<TensorRef>(&in)) add(*r);
      if (auto* v = std::get_if<std::vector<TensorRef>>(&in)) for (const auto& r : *v) add(r);
    }
    std::sort(deps[i].begin(), deps[i].end());
    deps[i].erase(std::unique(deps[i].begin(), deps[i].end()), deps[i].end());
  }
  std::vector<std::vector<std::size_t>> consumers(n);
  std::vector<std::size_t> waiting(n);  // producers not yet taken
  for (std::size_t i = 0; i < n; ++i) {
    waiting[i] = deps[i].size();
    for (std::size_t d : deps[i]) consumers[d].push_back(i);
  }
  std::vector<std::size_t> kahn;
  kahn.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) kahn.push_back(i);
  }
  for (std::size_t k = 0; k < kahn.size(); ++k) {
    for (std::size_t c : consumers[kahn[k]]) {
      if (--waiting[c] == 0) kahn.push_back(c);
    }
  }
  if (kahn.size() < n) {
    // The first node (in the list) never taken, as the sweeps would name it.
    for (std::size_t i = 0; i < n; ++i) {
      if (waiting[i] != 0) {
        throw EngineError(Kind::kGraph, graph.nodes[i].name,
                          NodeWhere(graph.nodes[i]) + ": the graph has a cycle through this node");
      }
    }
  }
  std::vector<std::size_t> sweep(n, 0);
  for (std::size_t i : kahn) {
    for (std::size_t d : deps[i]) sweep[i] = std::max(sweep[i], sweep[d] + (d > i ? 1 : 0));
  }
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return sweep[x] != sweep[y] ? sweep[x] < sweep[y] : x < y;
  });
  return order;
}

// ---- pass 3: infer_meta in order; output references checked against the results ----

// The flattened input metadata of a node whose producers are in `metas`, and
// which of them is known at compile time (c.input_known).
std::vector<TensorDesc> InputDescs(CompiledNode& c, const std::vector<CompiledNode>& nodes, const GraphIndex& index,
                                   const OutputMetas& metas) {
  const GraphNode& n = *c.node;
  std::vector<TensorDesc> in_descs;
  c.input_known.clear();
  auto desc_of = [&](const TensorRef& r, const std::string& w) -> TensorDesc {
    c.input_known.push_back(r.node.empty() || nodes[index.nodes.at(r.node)].inferred.has_value());
    if (r.node.empty()) return index.inputs.at(r.text)->tensor.Desc();
    const auto& outs = metas.at(r.node);
    if (r.index >= outs.size()) {
      throw EngineError(Kind::kGraph, n.name, w + ": '" + Abbreviate(r.text) + "' refers to output " + std::to_string(r.index) +
                                                  " of node '" + r.node + "', which has " + std::to_string(outs.size()) +
                                                  " output(s)");
    }
    return outs[r.index];
  };
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    const std::string w = NodeWhere(n) + ": inputs[" + std::to_string(k) + "]";
    if (auto* r = std::get_if<TensorRef>(&c.inputs[k])) in_descs.push_back(desc_of(*r, w));
    if (auto* v = std::get_if<std::vector<TensorRef>>(&c.inputs[k])) for (const auto& r : *v) in_descs.push_back(desc_of(r, w));
  }
  return in_descs;
}

// One instance per IR output: the layout of an op whose inference does not
// count dynamic outputs. `why` names what needs the count.
InstanceLayout IrOutputLayout(const GraphNode& n, const OpSchema& s, const std::string& why) {
  std::vector<std::size_t> counts;
  for (const auto& o : s.outputs) {
    if (o.kind == IrOutputKind::kDynamic) {
      throw EngineError(Kind::kOp, n.name,
                        NodeWhere(n) + ": output '" + Abbreviate(o.name) + "' is dynamic, which needs infer_meta " +
                            "(InferMetaOp) to count its instances; " + why);
    }
    counts.push_back(1);
  }
  return InstanceLayout(counts);
}

// GE's two-step inference: InferShape, then InferDataType, through the op
// object or the registration's IMPL_OP functions. Outputs get ND formats.
std::vector<TensorDesc> InferShapeAndDataType(CompiledNode& c, ShapeInferOp* op) {
  const GraphNode& n = *c.node;
  const std::string what = op != nullptr ? "ShapeInferOp" : "IMPL_OP InferShape";
  c.output_layout = IrOutputLayout(n, *c.schema, what + " lays outputs out by the IR");
  ++c.stats.infer_meta_calls;
  gert::InferShapeContext shape_ctx(*c.schema, c.input_descs, c.input_layout, c.output_layout, c.attrs);
  CallOp(n, "InferShape", nullptr, shape_ctx, [&] {
    return op != nullptr ? op->InferShape(&shape_ctx) : c.infer_shape(&shape_ctx);
  });
  gert::InferDataTypeContext dtype_ctx(*c.schema, c.input_descs, c.input_layout, c.output_layout, c.attrs);
  if (op != nullptr || c.infer_datatype != nullptr) {
    CallOp(n, "InferDataType", nullptr, dtype_ctx, [&] {
      return op != nullptr ? op->InferDataType(&dtype_ctx) : c.infer_datatype(&dtype_ctx);
    });
  }
  std::vector<TensorDesc> out(c.output_layout.Total());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const DataType dt = dtype_ctx.OutputDataTypes()[i];
    if (dt == DT_UNDEFINED) {
      throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": output " + std::to_string(i) + " has no data type: " +
                                               (op != nullptr || c.infer_datatype != nullptr
                                                    ? "InferDataType did not set it"
                                                    : "IMPL_OP registered InferShape without InferDataType"));
    }
    out[i] = TensorDesc(shape_ctx.OutputShapes()[i], dt);
  }
  c.inferred = out;
  return out;
}

// "inputs[k] comes from node 'p' (Op), whose outputs are unknown until
// execute", for the node's first input unknown at compile time; "" if none.
std::string UnknownInputReason(const CompiledNode& c, const std::vector<CompiledNode>& nodes, const GraphIndex& index) {
  std::size_t flat = 0;
  for (std::size_t k = 0; k < c.inputs.size(); ++k) {
    std::vector<TensorRef> refs;
    if (auto* r = std::get_if<TensorRef>(&c.inputs[k])) refs.push_back(*r);
    if (auto* v = std::get_if<std::vector<TensorRef>>(&c.inputs[k])) refs = *v;
    for (const TensorRef& r : refs) {
      if (!c.input_known.at(flat++)) {
        const CompiledNode& p = nodes[index.nodes.at(r.node)];
        return "inputs[" + std::to_string(k) + "] comes from " + NodeWhere(*p.node) +
               ", whose outputs are unknown until execute (" +
               (HasCapability(p.capabilities, CustomOpCapability::kInferMeta) ? "its own inputs are" : "it has no infer_meta") + ")";
      }
    }
  }
  return {};
}

// Outputs of InferShape (ShapeInferOp, IMPL_OP) or infer_meta: no negative
// dim (this engine has no unknown dims: outputs are allocated from these
// shapes) and an element count that fits int64.
void CheckInferredShapes(const CompiledNode& c, const std::string& what) {
  const GraphNode& n = *c.node;
  for (std::size_t i = 0; i < c.inferred->size(); ++i) {
    const Shape& s = (*c.inferred)[i].shape.GetStorageShape();
    for (std::size_t d = 0; d < s.GetDimNum(); ++d) {
      if (s.GetDim(d) < 0) {
        throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": " + what + " gave output " + std::to_string(i) +
                                                 " an invalid dim " + std::to_string(s.GetDim(d)) + " (shape " +
                                                 s.ToString() + "; dims must be 0 or more)");
      }
    }
    if (s.GetShapeSize() < 0) {
      throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": " + what + " gave output " + std::to_string(i) + " the shape " +
                                               s.ToString() + ", whose element count does not fit int64");
    }
  }
}

// Runs the node's inference (if any) and returns its output metadata: the
// op's InferMetaOp, else its ShapeInferOp, else the registration's IMPL_OP
// infer functions. A node with an input unknown at compile time (`unknown`
// says which) runs none of them: its outputs are unknown until execute.
std::vector<TensorDesc> InferNodeMeta(CompiledNode& c, const std::string& unknown) {
  const GraphNode& n = *c.node;
  if (!unknown.empty()) {
    c.output_layout = IrOutputLayout(n, *c.schema, "inference is skipped at compile time: " + unknown);
    return std::vector<TensorDesc>(c.output_layout.Total());
  }
  if (auto* im = CustomOpCast<InferMetaOp>(c.op)) {
    InferMetaContext ictx(*c.schema, c.input_descs, c.input_layout, c.attrs);
    ++c.stats.infer_meta_calls;
    CallOp(n, "infer_meta", nullptr, ictx, [&] { return im->InferMeta(&ictx); });
    if (!ictx.HasOutputs()) throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": infer_meta produced no outputs");
    c.inferred = ictx.Outputs();
    c.output_layout = ictx.OutputLayout();
    CheckInferredShapes(c, "infer_meta");
    return ictx.Outputs();
  }
  // The op's ShapeInferOp, else the IMPL_OP functions (InferShapeAndDataType takes null for those).
  auto* si = CustomOpCast<ShapeInferOp>(c.op);
  if (si != nullptr || c.infer_shape != nullptr) {
    InferShapeAndDataType(c, si);
    CheckInferredShapes(c, "InferShape");
    return *c.inferred;
  }
  // Without inference every output is one instance whose metadata is only
  // known after execution; consumers are checked at run time.
  c.output_layout = IrOutputLayout(n, *c.schema, "the op has no output inference");
  return std::vector<TensorDesc>(c.output_layout.Total());
}

// ---- the IR's dtype constraints (a C++ prototype's TensorType sets and DATATYPE symbols) ----

std::string DtypeName(DataType dt) { return IsKnownDataType(dt) ? DataTypeName(dt) : DataTypeGeName(dt); }

// Per uniform symbol ("T"): the first tensor that fixed its dtype.
struct SymbolUse {
  std::string what;
  DataType dt;
};
using SymbolUses = std::map<std::string, SymbolUse>;

// Checks one tensor's dtype against its IR entry `d`; `what` names the entry
// ("input 'x1' (inputs[0])"). Errors are EngineErrors of `kind` naming the node.
void CheckDtype(const GraphNode& n, Kind kind, const IrDataTypes& d, const std::string& what, DataType dt,
                SymbolUses& uses) {
  if (!d.Allows(dt)) {
    throw EngineError(kind, n.name, NodeWhere(n) + ": " + what + ": dtype " + DtypeName(dt) + " is not allowed (allowed" +
                                        (d.symbol.empty() ? std::string() : " for " + d.symbol) + ": " +
                                        DataTypeSetString(d.allowed) + ")");
  }
  if (!d.uniform || d.symbol.empty()) return;
  auto [it, first] = uses.emplace(d.symbol, SymbolUse{what, dt});
  if (!first && it->second.dt != dt) {
    throw EngineError(kind, n.name, NodeWhere(n) + ": " + it->second.what + " has dtype " + DtypeName(it->second.dt) + " but " +
                                        what + " has dtype " + DtypeName(dt) + "; both are declared with type symbol '" +
                                        d.symbol + "', which stands for one dtype");
  }
}

// Inputs (flattened dtypes `dts`): every instance whose `known` flag is set
// (null: all) against its IR input's set. At compile time the known ones are
// the graph inputs and outputs of nodes whose infer_meta ran; at execute time,
// for a node with inputs unknown at compile time, all of them.
void CheckInputDtypes(const CompiledNode& c, const std::vector<DataType>& dts, const std::vector<bool>* known,
                      SymbolUses& uses) {
  const GraphNode& n = *c.node;
  const OpSchema& s = *c.schema;
  std::size_t flat = 0;
  for (std::size_t k = 0; k < c.inputs.size() && k < s.inputs.size(); ++k) {
    auto check = [&](const TensorRef&, const std::string& what) {
      const std::size_t i = flat++;
      if (i < dts.size() && (known == nullptr || known->at(i))) CheckDtype(n, Kind::kGraph, s.inputs[k].dtypes, what, dts[i], uses);
    };
    const std::string what = "input '" + s.inputs[k].name + "' (inputs[" + std::to_string(k) + "]";
    if (auto* r = std::get_if<TensorRef>(&c.inputs[k])) check(*r, what + ")");
    if (auto* v = std::get_if<std::vector<TensorRef>>(&c.inputs[k])) {
      for (std::size_t i = 0; i < v->size(); ++i) check((*v)[i], what + "[" + std::to_string(i) + "])");
    }
  }
}

// Outputs (flattened dtypes `dts`, made by `from`: "infer_meta" at compile
// time, "execute" when they were unknown until then) against their IR
// output's set and symbol.
void CheckOutputDtypes(const CompiledNode& c, const std::vector<DataType>& dts, const char* from, SymbolUses& uses) {
  const OpSchema& s = *c.schema;
  for (std::size_t k = 0; k < s.outputs.size() && k < c.output_layout.IrNum(); ++k) {
    for (std::size_t i = 0; i < c.output_layout.Count(k); ++i) {
      const std::size_t flat = c.output_layout.Start(k) + i;
      if (flat >= dts.size()) continue;
      std::string what = "output '" + s.outputs[k].name + "' (outputs[" + std::to_string(k) + "]";
      what += s.outputs[k].kind == IrOutputKind::kDynamic ? "[" + std::to_string(i) + "])" : ")";
      CheckDtype(*c.node, Kind::kOp, s.outputs[k].dtypes, what + " from " + from, dts[flat], uses);
    }
  }
}

std::vector<DataType> DataTypes(const std::vector<TensorDesc>& descs) {
  std::vector<DataType> dts;
  for (const auto& d : descs) dts.push_back(d.data_type);
  return dts;
}

OutputMetas InferMetas(std::vector<CompiledNode>& nodes, const std::vector<std::size_t>& order, const GraphIndex& index) {
  OutputMetas metas;
  for (std::size_t idx : order) {
    CompiledNode& c = nodes[idx];
    const GraphNode& n = *c.node;
    c.input_descs = InputDescs(c, nodes, index, metas);  // kept for the compile and task-plan phases
    SymbolUses uses;
    CheckInputDtypes(c, DataTypes(c.input_descs), &c.input_known, uses);
    metas[n.name] = InferNodeMeta(c, UnknownInputReason(c, nodes, index));
    if (c.inferred) CheckOutputDtypes(c, DataTypes(*c.inferred), "infer_meta", uses);
    if (!CustomOpCast<EagerExecuteOp>(c.op) && !CustomOpCast<AnnotatedArgsOp>(c.op)) {
      const std::string from = c.stats.source.empty() ? std::string() : " from " + c.stats.source;
      throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": op_type '" + n.op_type + "'" + from +
                                               " can neither execute nor declare launch args (capabilities: " +
                                               CapabilityString(c.capabilities) +
                                               "): its implementation needs execute or declare_launch_args");
    }
  }
  return metas;
}

void CheckGraphOutputs(const Graph& graph, const GraphIndex& index, const OutputMetas& metas) {
  for (const auto& r : graph.outputs) {
    if (r.node.empty()) {
      if (!index.inputs.count(r.text)) {
        throw EngineError(Kind::kGraph, "", graph.file + ": outputs: unknown tensor '" + Abbreviate(r.text) + "'");
      }
      continue;
    }
    auto it = metas.find(r.node);
    if (it == metas.end()) {
      throw EngineError(Kind::kGraph, "",
                        graph.file + ": outputs: unknown node '" + Abbreviate(r.node) + "' in '" + Abbreviate(r.text) + "'");
    }
    if (r.index >= it->second.size()) {
      throw EngineError(Kind::kGraph, r.node, graph.file + ": outputs: '" + Abbreviate(r.text) + "' but node '" +
                                                  Abbreviate(r.node) + "' has " + std::to_string(it->second.size()) +
                                                  " output(s)");
    }
  }
}

// ---- pass 4: the compile phase, once per compilable node, in dependency order ----

void CompileNodes(CompiledGraph& cg, const OutputMetas& metas, const CompileOptions& copts) {
  const std::string platform_dir = copts.platform_dir.empty() ? DefaultPlatformDir() : copts.platform_dir;
  const std::string soc = copts.soc.empty() ? "host" : copts.soc;
  for (CompiledNode& c : cg.nodes) {
    auto* comp = CustomOpCast<CompilableOp>(c.op);
    if (comp == nullptr) continue;
    const GraphNode& n = *c.node;
    const std::vector<TensorDesc>& in_descs = c.input_descs;
    const std::vector<TensorDesc> out_descs = metas.at(n.name);
    OpCompileContext ctx(*c.schema, in_descs, c.input_layout, out_descs, c.output_layout, c.attrs, cg.options,
                         [soc, platform_dir]() {
                           return std::make_shared<const PlatformInfos>(PlatformInfos::ForSoc(soc, platform_dir));
                         });
    ++c.stats.compile_calls;
    CallOp(n, "compile", &c.stats.source, ctx, [&] { return comp->Compile(&ctx); });
  }
}

// ---- pass 5: task plans ----

// A launch of the node's plan, its kernel resolved (its binary loaded once per cache).
CompiledNode::Launch ResolveLaunch(const GraphNode& n, const KernelLaunch& l, KernelCache& kernels) {
  CompiledNode::Launch launch;
  launch.kernel_name = l.kernel_name;
  launch.label = NodeWhere(n) + ": kernel '" + Abbreviate(l.kernel_name) + "'";
  launch.block_dim = l.block_dim;
  launch.slots = l.args;
  launch.words.resize(l.args.size());
  for (std::size_t i = 0; i < l.args.size(); ++i) {
    if (l.args[i].kind == KernelArgSlot::Kind::kScalar) launch.words[i] = l.args[i].value;
  }
  try {
    // The label's suffix is report text only: the cache knows it is loading.
    const std::string load_label = launch.label + ": kernel_bin";
    launch.fn = kernels.Resolve(*l.kernel_bin, l.kernel_name, load_label.c_str());
  } catch (const KernelError& e) {
    throw EngineError(Kind::kKernel, n.name, NodeWhere(n) + ": kernel '" + Abbreviate(l.kernel_name) + "': " + e.what(), {},
                      /*fatal=*/e.crashed_while_loading());
  }
  return launch;
}

// declare_launch_args once per node per compilation. A node whose op also has
// execute uses the plan: it runs without Python.
void BuildTaskPlans(CompiledGraph& cg) {
  cg.kernels = std::make_shared<KernelCache>();
  for (CompiledNode& c : cg.nodes) {
    auto* decl = CustomOpCast<AnnotatedArgsOp>(c.op);
    if (decl == nullptr) continue;
    const GraphNode& n = *c.node;
    if (!c.inferred) {
      throw EngineError(Kind::kOp, n.name,
                        NodeWhere(n) + ": declare_launch_args needs infer_meta to describe the outputs" +
                            (HasCapability(c.capabilities, CustomOpCapability::kInferMeta)
                                 ? std::string(", which could not run at compile time: an input is unknown until execute "
                                               "(an upstream node has no infer_meta)")
                                 : std::string()));
    }
    const std::vector<TensorDesc>& in_descs = c.input_descs;
    AnnotatedArgsContext ctx(*c.schema, in_descs, c.input_layout, *c.inferred, c.output_layout, c.attrs, 0);
    ++c.stats.declare_calls;
    CallOp(n, "declare_launch_args", &c.stats.source, ctx,
           [&] { return decl->DeclareLaunchArgs(ctx); });
    if (ctx.Plan().launches.empty()) {
      // A plan without launches would hand on outputs that nothing wrote.
      throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": declare_launch_args (" + c.stats.source +
                                               ") declared no launch (call add_launch at least once)");
    }
    c.plan = ctx.TakePlan();
    for (const KernelLaunch& l : c.plan->launches) c.launches.push_back(ResolveLaunch(n, l, *cg.kernels));
  }
}

}  // namespace

CompiledGraph Engine::Compile(const Graph& graph, const CompileOptions& copts) {
  CompiledGraph cg;
  cg.graph = &graph;
  cg.options = graph.options;
  for (const auto& [k, v] : copts.options) cg.options[k] = v;
  const GraphIndex index(graph);

  std::vector<CompiledNode> nodes = ResolveNodes(registry_, graph, index);
  const std::vector<std::size_t> order = DependencyOrder(graph, nodes, index);
  const OutputMetas metas = InferMetas(nodes, order, index);
  CheckGraphOutputs(graph, index, metas);
  for (std::size_t idx : order) cg.nodes.push_back(std::move(nodes[idx]));
  CompileNodes(cg, metas, copts);
  BuildTaskPlans(cg);
  return cg;
}

Engine::~Engine() = default;

// Replays a node's cached task plan: outputs allocated from infer_meta, the
// run's addresses patched into the argument words, each launch run as
// block_dim blocks on the pool. No Python, no GIL.
void Engine::RunPlan(CompiledNode& c, const std::vector<Tensor*>& ins, std::map<std::string, Tensor>& values) {
  const GraphNode& n = *c.node;
  if (!pool_) pool_ = std::make_unique<BlockPool>();
  const auto s0 = std::chrono::steady_clock::now();
  std::vector<Tensor> outs;
  outs.reserve(c.inferred->size());
  for (const auto& d : *c.inferred) {
    try {
      outs.push_back(Tensor::Allocate(d));
    } catch (const std::exception& e) {
      throw EngineError(Kind::kRun, n.name, NodeWhere(n) + ": cannot allocate an output: " + e.what());
    }
  }
  for (auto& l : c.launches) {
    for (std::size_t i = 0; i < l.slots.size(); ++i) {
      const KernelArgSlot& s = l.slots[i];
      switch (s.kind) {
        case KernelArgSlot::Kind::kInput: l.words[i] = reinterpret_cast<uintptr_t>(ins[s.value]->GetAddr()); break;
        case KernelArgSlot::Kind::kOutput: l.words[i] = reinterpret_cast<uintptr_t>(outs[s.value].GetAddr()); break;
        case KernelArgSlot::Kind::kWorkspace: l.words[i] = reinterpret_cast<uintptr_t>(c.plan->workspaces[s.value].get()); break;
        case KernelArgSlot::Kind::kScalar: break;
      }
    }
    auto crash = pool_->Run(l.fn, l.block_dim, l.words.data(), l.label.c_str());
    ++c.stats.kernel_launches;
    if (crash) {
      throw EngineError(Kind::kKernel, n.name, NodeWhere(n) + ": kernel '" + Abbreviate(l.kernel_name) + "' crashed: " + *crash, {},
                        /*fatal=*/true);
    }
  }
  c.stats.execute_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
  for (std::size_t i = 0; i < outs.size(); ++i) values.insert_or_assign(n.name + ":" + std::to_string(i), std::move(outs[i]));
}

// The input tensors a node receives, flattened in IR order. A graph value is
// never changed under its other readers, whatever the order of the nodes:
// - an input the op declares as mutated (an alias of an output, mutates_args)
//   is a private copy, which the op may change and pass on as that output;
// - every other input is a read-only view of the value (Python's Tensor.data
//   and __array_interface__ refuse writes; a guard, the address stays raw).
// Graph inputs are copied once per run for the same reason (the next run
// starts from the graph's own data).
std::vector<Tensor> Engine::NodeInputs(const CompiledNode& c, std::map<std::string, Tensor>& values) {
  const GraphNode& n = *c.node;
  const std::vector<bool> mutated = c.schema->MutatedInputs();
  std::vector<Tensor> out;
  out.reserve(c.input_layout.Total());
  for (std::size_t ir = 0; ir < c.inputs.size(); ++ir) {
    auto take = [&](const TensorRef& r) {
      auto it = values.find(r.node.empty() ? r.text : r.node + ":" + std::to_string(r.index));
      if (it == values.end()) {
        throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": input '" + Abbreviate(r.text) + "' was not produced");
      }
      const bool writable = ir < mutated.size() && mutated[ir];
      out.push_back(writable ? it->second.Clone() : it->second.ReadOnlyView());
    };
    if (auto* r = std::get_if<TensorRef>(&c.inputs[ir])) take(*r);
    if (auto* v = std::get_if<std::vector<TensorRef>>(&c.inputs[ir])) for (const auto& r : *v) take(r);
  }
  return out;
}

RunResult Engine::Run(CompiledGraph& cg, int repeat) {
  if (repeat < 1) throw EngineError(Kind::kRun, "", "repeat must be at least 1");
  const Graph& graph = *cg.graph;
  RunResult result;
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, Tensor> values;  // "x", "n0:0", ...
  for (int run = 0; run < repeat; ++run) {
    values.clear();
    for (const auto& in : graph.inputs) values.emplace(in.name, in.tensor.Clone());  // see NodeInputs
    for (CompiledNode& c : cg.nodes) {
      const GraphNode& n = *c.node;
      std::vector<Tensor> in_tensors = NodeInputs(c, values);
      std::vector<Tensor*> ins;
      ins.reserve(in_tensors.size());
      for (Tensor& t : in_tensors) ins.push_back(&t);
      if (c.plan) {
        RunPlan(c, ins, values);
        continue;
      }
      // Outputs unknown at compile time (no infer_meta, or an input unknown
      // then): the IR's dtype rules are checked now, with the compile-time
      // messages, inputs before the call and outputs after it.
      SymbolUses uses;
      if (!c.inferred) {
        std::vector<DataType> dts;
        for (const Tensor& t : in_tensors) dts.push_back(t.GetDataType());
        CheckInputDtypes(c, dts, nullptr, uses);
      }
      EagerOpExecutionContext ctx(*c.schema, ins, c.input_layout, c.attrs, c.output_layout);
      auto* ex = CustomOpCast<EagerExecuteOp>(c.op);
      const auto s0 = std::chrono::steady_clock::now();
      ++c.stats.execute_calls;
      CallOp(n, "execute", nullptr, ctx, [&] { return ex->Execute(&ctx); });
      c.stats.execute_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
      auto outs = ctx.TakeOutputs();
      // The op's file, for what its execute did wrong (" (path)", or "").
      const std::string source = c.stats.source.empty() ? std::string() : " (" + c.stats.source + ")";
      std::vector<DataType> out_dts;
      for (std::size_t i = 0; i < outs.size(); ++i) {
        if (!outs[i]) {
          throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": execute did not allocate output " + std::to_string(i) + source);
        }
        out_dts.push_back(outs[i]->GetDataType());
      }
      if (!c.inferred) CheckOutputDtypes(c, out_dts, "execute", uses);
      for (std::size_t i = 0; i < outs.size(); ++i) {
        if (c.inferred) {
          const TensorDesc& want = (*c.inferred)[i];
          if (outs[i]->GetDataType() != want.data_type) {
            throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": output " + std::to_string(i) + " has dtype " +
                                                     DataTypeName(outs[i]->GetDataType()) + ", infer_meta said " +
                                                     DataTypeName(want.data_type) + source);
          }
          if (outs[i]->GetStorageShape() != want.shape.GetStorageShape()) {
            throw EngineError(Kind::kOp, n.name, NodeWhere(n) + ": output " + std::to_string(i) + " has shape " +
                                                     outs[i]->GetStorageShape().ToString() + ", infer_meta said " +
                                                     want.shape.GetStorageShape().ToString() + source);
          }
        }
        values.insert_or_assign(n.name + ":" + std::to_string(i), std::move(*outs[i]));
      }
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& r : graph.outputs) {
    auto it = values.find(r.node.empty() ? r.text : r.node + ":" + std::to_string(r.index));
    if (it == values.end()) throw EngineError(Kind::kOp, r.node, "graph output '" + Abbreviate(r.text) + "' was not produced");
    result.outputs.insert_or_assign(r.text, it->second);
  }
  return result;
}

}  // namespace ge

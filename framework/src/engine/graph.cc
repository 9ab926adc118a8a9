// Graph file parsing and JSON -> tensor conversion.
#include "ge/engine/graph.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "ge/engine/npy.h"
#include "ge/text.h"

namespace ge {

namespace {

using nlohmann::json;

// A 16-bit float (1 sign bit, `exp_bits` exponent bits, `man_bits` mantissa
// bits: binary16 is 5/10, bfloat16 8/7) from a double, rounded once to nearest
// even, as numpy's float16(x) does. Rounding through float first would round
// twice: a value just above a midpoint can land on the midpoint and then tie
// the wrong way. Subnormals, infinities and NaN (quiet) are kept.
uint16_t DoubleTo16(double d, int exp_bits, int man_bits) {
  uint64_t x;
  std::memcpy(&x, &d, 8);
  const uint32_t sign = static_cast<uint32_t>(x >> 63) << 15;
  const int exp = static_cast<int>((x >> 52) & 0x7ff);
  const uint64_t man = x & ((uint64_t{1} << 52) - 1);
  const int max_e = (1 << exp_bits) - 1;
  const uint32_t inf = static_cast<uint32_t>(max_e) << man_bits;
  if (exp == 0x7ff) return static_cast<uint16_t>(sign | inf | (man ? 1U << (man_bits - 1) : 0));
  if (exp == 0) return static_cast<uint16_t>(sign);  // double subnormals are far below both formats
  const int e = exp - 1023 + ((1 << (exp_bits - 1)) - 1);
  if (e >= max_e) return static_cast<uint16_t>(sign | inf);
  auto round = [](uint64_t kept, uint64_t rem, int shift) {
    const uint64_t mid = uint64_t{1} << (shift - 1);
    return (rem > mid || (rem == mid && (kept & 1))) ? kept + 1 : kept;  // a carry moves into the exponent
  };
  if (e <= 0) {  // subnormal in the target format
    if (e < -man_bits) return static_cast<uint16_t>(sign);
    const uint64_t full = man | (uint64_t{1} << 52);
    const int shift = 52 - man_bits + 1 - e;
    return static_cast<uint16_t>(sign | round(full >> shift, full & ((uint64_t{1} << shift) - 1), shift));
  }
  const int shift = 52 - man_bits;
  const uint64_t kept = (static_cast<uint64_t>(e) << man_bits) | (man >> shift);
  return static_cast<uint16_t>(sign | round(kept, man & ((uint64_t{1} << shift) - 1), shift));
}

void Flatten(const json& v, std::size_t depth, const Shape& shape, std::vector<const json*>& out, const std::string& where) {
  if (depth == shape.GetDimNum()) {
    if (v.is_array()) throw GraphError(where, "data is nested deeper than the shape " + shape.ToString());
    out.push_back(&v);
    return;
  }
  if (!v.is_array()) throw GraphError(where, "data does not match the shape " + shape.ToString() + " (expected a list at depth " + std::to_string(depth) + ")");
  if (static_cast<int64_t>(v.size()) != shape.GetDim(depth)) {
    throw GraphError(where, "data has " + std::to_string(v.size()) + " entries at depth " + std::to_string(depth) +
                                ", the shape " + shape.ToString() + " needs " + std::to_string(shape.GetDim(depth)));
  }
  for (const auto& e : v) Flatten(e, depth + 1, shape, out, where);
}

template <typename T>
void StoreInts(const std::vector<const json*>& vals, void* dst, const std::string& where, DataType dt) {
  T* p = static_cast<T*>(dst);
  for (std::size_t i = 0; i < vals.size(); ++i) {
    const json& v = *vals[i];
    if (!v.is_number_integer()) throw GraphError(where, "element " + std::to_string(i) + " must be an integer for " + DataTypeName(dt));
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) throw GraphError(where, "element " + std::to_string(i) + " does not fit " + DataTypeName(dt));
      p[i] = static_cast<T>(u);
    } else {
      const auto s = v.get<int64_t>();
      if ((std::is_unsigned_v<T> && s < 0) || (!std::is_unsigned_v<T> && (s < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
                                                                         s > static_cast<int64_t>(std::numeric_limits<T>::max())))) {
        throw GraphError(where, "element " + std::to_string(i) + " does not fit " + DataTypeName(dt));
      }
      p[i] = static_cast<T>(s);
    }
  }
}

std::string Str(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw GraphError(where, std::string("missing field '") + key + "'");
  if (!j[key].is_string()) throw GraphError(where + "." + key, "must be a string");
  return j[key].get<std::string>();
}

TensorRef ParseRef(const json& v, const std::string& where) {
  if (!v.is_string()) throw GraphError(where, "must be a tensor name or \"node:index\" string");
  TensorRef r;
  r.text = v.get<std::string>();
  if (r.text.empty()) throw GraphError(where, "empty tensor reference");
  const auto colon = r.text.rfind(':');
  if (colon != std::string::npos) {
    r.node = r.text.substr(0, colon);
    const std::string idx = r.text.substr(colon + 1);
    if (r.node.empty() || idx.empty() || idx.find_first_not_of("0123456789") != std::string::npos) {
      throw GraphError(where, "bad tensor reference '" + Abbreviate(r.text) + "' (expected \"node:index\")");
    }
    if (idx.size() > 9) throw GraphError(where, "output index in '" + Abbreviate(r.text) + "' is too large");
    r.index = std::stoul(idx);
  }
  return r;
}

Shape ShapeFromJson(const json& j, const std::string& where) {
  if (!j.is_array()) throw GraphError(where, "shape must be a list of non-negative integers");
  if (j.size() > kMaxDimNum) throw GraphError(where, "shape has " + std::to_string(j.size()) + " dims, more than the maximum rank " + std::to_string(kMaxDimNum));
  Shape s;
  for (const auto& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) throw GraphError(where, "shape must be a list of non-negative integers");
    s.AppendDim(d.get<int64_t>());
  }
  return s;
}

}  // namespace

Tensor TensorFromJson(const json& data, DataType dtype, const Shape& shape, const std::string& where) {
  std::vector<const json*> vals;
  Flatten(data, 0, shape, vals, where);
  if (DataTypeSize(dtype) == 0) {  // Allocate would throw std::invalid_argument without the field
    throw GraphError(where, "dtype " + DataTypeName(dtype) + " cannot be given as inline data");
  }
  Tensor t;
  try {
    t = Tensor::Allocate(TensorDesc(shape, dtype));
  } catch (const std::invalid_argument& e) {
    throw GraphError(where, e.what());
  }
  void* dst = t.GetAddr();
  auto as_double = [&](std::size_t i) {
    const json& v = *vals[i];
    if (!v.is_number()) throw GraphError(where, "element " + std::to_string(i) + " must be a number for " + DataTypeName(dtype));
    return v.get<double>();
  };
  switch (dtype) {
    case DT_FLOAT: for (std::size_t i = 0; i < vals.size(); ++i) static_cast<float*>(dst)[i] = static_cast<float>(as_double(i)); break;
    case DT_DOUBLE: for (std::size_t i = 0; i < vals.size(); ++i) static_cast<double*>(dst)[i] = as_double(i); break;
    case DT_FLOAT16: for (std::size_t i = 0; i < vals.size(); ++i) static_cast<uint16_t*>(dst)[i] = DoubleTo16(as_double(i), 5, 10); break;
    case DT_BF16: for (std::size_t i = 0; i < vals.size(); ++i) static_cast<uint16_t*>(dst)[i] = DoubleTo16(as_double(i), 8, 7); break;
    case DT_INT8: StoreInts<int8_t>(vals, dst, where, dtype); break;
    case DT_INT16: StoreInts<int16_t>(vals, dst, where, dtype); break;
    case DT_INT32: StoreInts<int32_t>(vals, dst, where, dtype); break;
    case DT_INT64: StoreInts<int64_t>(vals, dst, where, dtype); break;
    case DT_UINT8: StoreInts<uint8_t>(vals, dst, where, dtype); break;
    case DT_UINT16: StoreInts<uint16_t>(vals, dst, where, dtype); break;
    case DT_UINT32: StoreInts<uint32_t>(vals, dst, where, dtype); break;
    case DT_UINT64: StoreInts<uint64_t>(vals, dst, where, dtype); break;
    case DT_BOOL:
      for (std::size_t i = 0; i < vals.size(); ++i) {
        const json& v = *vals[i];
        if (v.is_boolean()) static_cast<uint8_t*>(dst)[i] = v.get<bool>() ? 1 : 0;
        else if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) static_cast<uint8_t*>(dst)[i] = static_cast<uint8_t>(v.get<int64_t>());
        else throw GraphError(where, "element " + std::to_string(i) + " must be true/false for bool");
      }
      break;
    default: throw GraphError(where, "dtype " + DataTypeName(dtype) + " cannot be given as inline data");
  }
  return t;
}

// Deepest JSON nesting accepted: deeper documents are refused before parsing
// (the parser and value copies recurse, so a hostile file could exhaust the stack).
constexpr int kMaxJsonDepth = 256;
// Largest graph file read: inline data belongs in .npy files beyond this.
constexpr std::uintmax_t kMaxGraphBytes = 1ull << 30;

static void CheckJsonDepth(const std::string& text, const std::string& file) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') in_string = true;
    else if (ch == '[' || ch == '{') {
      if (++depth > kMaxJsonDepth) {
        throw GraphError(file, "JSON is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      }
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
}

// JSON leaves duplicate keys to the reader, and nlohmann keeps the last: a graph
// with two "nodes" lists or "axis" twice would silently lose one. This SAX pass
// refuses any duplicate, naming the key and where it is ("nodes[1].attrs").
class DuplicateKeyCheck : public nlohmann::json_sax<json> {
 public:
  explicit DuplicateKeyCheck(std::string file) : file_(std::move(file)) {}

  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override {
    Value();
    stack_.push_back(Frame{true, {}, {}, 0});
    return true;
  }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    if (!f.keys.insert(k).second) {
      const std::string where = Path();
      throw GraphError(file_ + (where.empty() ? "" : ": " + where),
                       "duplicate key \"" + Abbreviate(k) + "\" (JSON readers would keep only one of them)");
    }
    f.key = k;
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    Value();
    stack_.push_back(Frame{false, {}, {}, 0});
    return true;
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;  // the real parse reports it
  }

 private:
  struct Frame {
    bool object;
    std::set<std::string> keys;
    std::string key;    // the object's current key
    std::size_t index;  // the array's next element
  };
  // A value starts: in an array it takes the next index.
  bool Value() {
    if (!stack_.empty() && !stack_.back().object) ++stack_.back().index;
    return true;
  }
  // "nodes[1].attrs" for the innermost object (array indexes are the element's).
  std::string Path() const {
    std::string p;
    for (std::size_t i = 0; i + 1 < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      if (f.object) {
        p += (p.empty() ? "" : ".") + Abbreviate(f.key);
      } else {
        p += "[" + std::to_string(f.index - 1) + "]";
      }
    }
    return p;
  }

  std::string file_;
  std::vector<Frame> stack_;
};

// Names become file names (<node>_<index>.npy) and references: no path
// separators, NUL or other control characters, not "." or "..".
static void CheckName(const std::string& name, const std::string& where) {
  if (name.empty()) throw GraphError(where, "name must not be empty");
  if (name == "." || name == "..") throw GraphError(where, "name '" + Abbreviate(name) + "' is not allowed");
  for (unsigned char ch : name) {
    if (ch == '/' || ch == ':' || ch < 0x20 || ch == 0x7f) {
      throw GraphError(where, "name '" + Abbreviate(name) + "' may not contain '/', ':' or control characters");
    }
  }
}

Graph ParseGraph(const std::string& text, const std::string& file, const std::filesystem::path& base_dir) {
  CheckJsonDepth(text, file);
  {
    DuplicateKeyCheck check(file);
    json::sax_parse(text, &check);
  }
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw GraphError(file, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) throw GraphError(file, "the graph must be a JSON object");
  static const std::set<std::string> kTop{"name", "options", "inputs", "nodes", "outputs"};
  for (const auto& [k, v] : j.items()) {
    if (!kTop.count(k)) throw GraphError(file, "unknown field '" + Abbreviate(k) + "' (expected name, options, inputs, nodes, outputs)");
  }
  Graph g;
  g.file = file;
  g.name = j.contains("name") ? Str(j, "name", file) : std::filesystem::path(file).stem().string();
  if (j.contains("options")) {
    if (!j["options"].is_object()) throw GraphError(file + ": options", "must be an object of strings");
    for (const auto& [k, v] : j["options"].items()) {
      if (!v.is_string()) throw GraphError(file + ": options." + Abbreviate(k), "must be a string");
      g.options[k] = v.get<std::string>();
    }
  }
  std::set<std::string> names;
  if (j.contains("inputs")) {
    if (!j["inputs"].is_array()) throw GraphError(file + ": inputs", "must be a list");
    for (std::size_t i = 0; i < j["inputs"].size(); ++i) {
      const json& in = j["inputs"][i];
      std::string where = file + ": inputs[" + std::to_string(i) + "]";
      if (!in.is_object()) throw GraphError(where, "must be an object");
      GraphInput gi;
      gi.name = Str(in, "name", where);
      where += " '" + Abbreviate(gi.name) + "'";
      CheckName(gi.name, where);
      if (!names.insert(gi.name).second) throw GraphError(where, "duplicate input name '" + Abbreviate(gi.name) + "'");
      std::optional<DataType> dt;
      if (in.contains("dtype")) {
        const std::string dts = Str(in, "dtype", where);
        dt = DataTypeFromName(dts);
        if (!dt) throw GraphError(where + ".dtype", "unknown dtype '" + Abbreviate(dts) + "' (use numpy names: float32, float16, bfloat16, float64, int8..int64, uint8..uint64, bool)");
      }
      std::optional<Shape> shape;
      if (in.contains("shape")) shape = ShapeFromJson(in["shape"], where + ".shape");
      const bool has_data = in.contains("data"), has_file = in.contains("file");
      if (has_data == has_file) throw GraphError(where, "give exactly one of \"data\" and \"file\"");
      if (has_data) {
        if (!dt) throw GraphError(where, "missing field 'dtype'");
        if (!shape) throw GraphError(where, "missing field 'shape'");
        gi.tensor = TensorFromJson(in["data"], *dt, *shape, where + ".data");
      } else {
        std::filesystem::path p = Str(in, "file", where);
        if (p.is_relative()) p = base_dir / p;
        try {
          gi.tensor = ReadNpy(p, dt);
        } catch (const NpyError& e) {
          throw GraphError(where + ".file", e.what());
        }
        if (shape && gi.tensor.GetStorageShape() != *shape) {
          throw GraphError(where + ".file", p.string() + " has shape " + gi.tensor.GetStorageShape().ToString() +
                                                ", the graph declares " + shape->ToString());
        }
      }
      g.inputs.push_back(std::move(gi));
    }
  }
  if (!j.contains("nodes") || !j["nodes"].is_array()) throw GraphError(file + ": nodes", "must be a list of nodes");
  for (std::size_t i = 0; i < j["nodes"].size(); ++i) {
    const json& n = j["nodes"][i];
    std::string where = file + ": nodes[" + std::to_string(i) + "]";
    if (!n.is_object()) throw GraphError(where, "must be an object");
    GraphNode node;
    node.name = Str(n, "name", where);
    where += " '" + Abbreviate(node.name) + "'";
    CheckName(node.name, where);
    if (!names.insert(node.name).second) throw GraphError(where, "duplicate name '" + Abbreviate(node.name) + "'");
    node.op_type = Str(n, "op_type", where);
    for (const auto& [k, v] : n.items()) {
      if (k != "name" && k != "op_type" && k != "inputs" && k != "attrs") {
        throw GraphError(where, "unknown field '" + Abbreviate(k) + "' (expected name, op_type, inputs, attrs)");
      }
    }
    if (n.contains("inputs")) {
      if (!n["inputs"].is_array()) throw GraphError(where + ".inputs", "must be a list");
      for (std::size_t k = 0; k < n["inputs"].size(); ++k) {
        const json& v = n["inputs"][k];
        const std::string w = where + ".inputs[" + std::to_string(k) + "]";
        if (v.is_null()) {
          node.inputs.emplace_back(std::monostate{});
        } else if (v.is_array()) {
          std::vector<TensorRef> refs;
          for (std::size_t m = 0; m < v.size(); ++m) refs.push_back(ParseRef(v[m], w + "[" + std::to_string(m) + "]"));
          node.inputs.emplace_back(std::move(refs));
        } else {
          node.inputs.emplace_back(ParseRef(v, w));
        }
      }
    }
    if (n.contains("attrs")) {
      if (!n["attrs"].is_object()) throw GraphError(where + ".attrs", "must be an object");
      node.attrs = n["attrs"];
    }
    g.nodes.push_back(std::move(node));
  }
  if (!j.contains("outputs") || !j["outputs"].is_array() || j["outputs"].empty()) {
    throw GraphError(file + ": outputs", "must be a non-empty list of \"node:index\" references");
  }
  std::set<std::string> seen_outputs;
  for (std::size_t i = 0; i < j["outputs"].size(); ++i) {
    const std::string where = file + ": outputs[" + std::to_string(i) + "]";
    g.outputs.push_back(ParseRef(j["outputs"][i], where));
    if (!seen_outputs.insert(g.outputs.back().text).second) {
      throw GraphError(where, "'" + Abbreviate(g.outputs.back().text) + "' is listed twice");
    }
  }
  return g;
}

Graph LoadGraph(const std::filesystem::path& path) {
  // A graph is a regular file of bounded size: a FIFO would block, /dev/zero
  // would be read until memory runs out.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st)) {
    if (!std::filesystem::is_regular_file(st)) throw GraphError(path.string(), "not a regular file");
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxGraphBytes) {
      throw GraphError(path.string(), "the graph file is " + std::to_string(size) + " bytes, more than the " +
                                          std::to_string(kMaxGraphBytes) + " a graph may be (put large data in .npy files)");
    }
  }
  std::ifstream in(path);
  if (!in) throw GraphError(path.string(), std::string("cannot open graph file (") + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseGraph(ss.str(), path.string(), path.parent_path());
}

}  // namespace ge

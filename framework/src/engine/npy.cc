// .npy codec (see npy.h for why it is ours).
#include "ge/engine/npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

namespace ge {

namespace {
constexpr char kMagic[] = "\x93NUMPY";

std::string HeaderValue(const std::string& header, const std::string& key, const std::string& file) {
  const std::string needle = "'" + key + "'";
  auto pos = header.find(needle);
  if (pos == std::string::npos) throw NpyError(file + ": .npy header has no '" + key + "'");
  pos = header.find(':', pos + needle.size());
  if (pos == std::string::npos) throw NpyError(file + ": malformed .npy header");
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  std::size_t end = pos;
  if (header[pos] == '(') {
    end = header.find(')', pos);
    if (end == std::string::npos) throw NpyError(file + ": malformed shape in .npy header");
    return header.substr(pos, end - pos + 1);
  }
  if (header[pos] == '\'') {
    end = header.find('\'', pos + 1);
    if (end == std::string::npos) throw NpyError(file + ": malformed .npy header");
    return header.substr(pos + 1, end - pos - 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  std::string v = header.substr(pos, end - pos);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}
}  // namespace

Tensor ReadNpy(const std::filesystem::path& path, std::optional<DataType> expected) {
  const std::string file = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NpyError(file + ": cannot open (" + std::strerror(errno) + ")");
  char magic[6];
  if (!in.read(magic, 6) || std::memcmp(magic, kMagic, 6) != 0) throw NpyError(file + ": not a .npy file (bad magic)");
  unsigned char ver[2];
  if (!in.read(reinterpret_cast<char*>(ver), 2)) throw NpyError(file + ": truncated .npy header");
  uint32_t header_len = 0;
  if (ver[0] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) throw NpyError(file + ": truncated .npy header");
    header_len = b[0] | (b[1] << 8);
  } else if (ver[0] == 2 || ver[0] == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) throw NpyError(file + ": truncated .npy header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    throw NpyError(file + ": unsupported .npy version " + std::to_string(ver[0]) + ", supported 1, 2, 3");
  }
  if (header_len > (1U << 20)) throw NpyError(file + ": .npy header too large");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) throw NpyError(file + ": truncated .npy header");

  const std::string descr = HeaderValue(header, "descr", file);
  const std::string fortran = HeaderValue(header, "fortran_order", file);
  const std::string shape_text = HeaderValue(header, "shape", file);
  if (fortran != "False") throw NpyError(file + ": Fortran-order arrays are not supported; save C-order data");
  if (!descr.empty() && descr[0] == '>') {
    throw NpyError(file + ": big-endian dtype '" + descr + "' is not supported; save little-endian data");
  }
  std::optional<DataType> dt;
  if (descr == "|V2" || descr == "<V2") {
    if (expected == DT_BF16) dt = DT_BF16;
  } else {
    dt = DataTypeFromTypestr(descr);
  }
  if (!dt) throw NpyError(file + ": unsupported dtype '" + descr + "'");
  if (expected && *expected != *dt) {
    throw NpyError(file + ": holds " + DataTypeName(*dt) + " data, the graph declares " + DataTypeName(*expected));
  }
  Shape shape;
  std::regex num("-?[0-9]+");
  for (auto it = std::sregex_iterator(shape_text.begin(), shape_text.end(), num); it != std::sregex_iterator(); ++it) {
    const long long d = std::stoll(it->str());
    if (d < 0) throw NpyError(file + ": negative dim in shape " + shape_text);
    if (shape.GetDimNum() >= kMaxDimNum) {
      throw NpyError(file + ": shape " + shape_text + " has more dims than the maximum rank " + std::to_string(kMaxDimNum));
    }
    shape.AppendDim(d);
  }
  Tensor t;
  try {
    t = Tensor::Allocate(TensorDesc(shape, *dt));
  } catch (const std::invalid_argument& e) {
    throw NpyError(file + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw NpyError(file + ": not enough memory for shape " + shape.ToString());
  }
  if (t.GetSize() > 0 && !in.read(static_cast<char*>(t.GetAddr()), static_cast<std::streamsize>(t.GetSize()))) {
    throw NpyError(file + ": truncated data: shape " + shape.ToString() + " of " + DataTypeName(*dt) + " needs " +
                   std::to_string(t.GetSize()) + " bytes");
  }
  return t;
}

void WriteNpy(const std::filesystem::path& path, const Tensor& t) {
  const std::string file = path.string();
  if (!t.HasData()) throw NpyError(file + ": tensor has no host data to write");
  std::string descr = t.GetDataType() == DT_BF16 ? "|V2" : DataTypeTypestr(t.GetDataType());
  std::ostringstream shape;
  shape << '(';
  const Shape& s = t.GetStorageShape();
  for (std::size_t i = 0; i < s.GetDimNum(); ++i) shape << s.GetDim(i) << (s.GetDimNum() == 1 ? "," : (i + 1 < s.GetDimNum() ? ", " : ""));
  shape << ')';
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape.str() + ", }";
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw NpyError(file + ": cannot create (" + std::strerror(errno) + ")");
  out.write(kMagic, 6);
  const char ver[2] = {1, 0};
  out.write(ver, 2);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>((header.size() >> 8) & 0xff)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(t.GetAddr()), static_cast<std::streamsize>(t.GetSize()));
  out.flush();
  if (!out) throw NpyError(file + ": write failed (" + std::strerror(errno) + ")");
}

}  // namespace ge

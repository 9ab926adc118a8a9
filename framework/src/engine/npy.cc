// .npy codec (see npy.h for why it is ours).
#include "ge/engine/npy.h"

#include <cstdint>
#include <filesystem>

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "ge/text.h"

namespace ge {

namespace {
constexpr char kMagic[] = "\x93NUMPY";

// The header as numpy writes and reads it (numpy.lib.format, which uses
// ast.literal_eval): a dict literal with exactly the keys 'descr' (a string),
// 'fortran_order' (True or False) and 'shape' (a tuple of non-negative ints),
// then spaces and a newline. Anything else is refused as numpy refuses it:
// "(4.8,)" or "(1e9,)" is not a shape, a repeated or unknown key is an error.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, std::string file) : t_(text), file_(std::move(file)) {}

  NpyHeader Parse() {
    NpyHeader h;
    bool has_descr = false, has_fortran = false, has_shape = false;
    Expect('{');
    for (;;) {
      Skip();
      if (Peek() == '}') break;
      const std::string key = StringLiteral("a key");
      Expect(':');
      Skip();
      if (key == "descr" && !has_descr) {
        h.descr = StringLiteral("'descr'");
        has_descr = true;
      } else if (key == "fortran_order" && !has_fortran) {
        h.fortran_order = Boolean();
        has_fortran = true;
      } else if (key == "shape" && !has_shape) {
        h.shape = IntTuple();
        has_shape = true;
      } else if (key == "descr" || key == "fortran_order" || key == "shape") {
        Fail("key '" + key + "' appears twice");
      } else {
        Fail("unknown key '" + Abbreviate(key) + "' (numpy writes descr, fortran_order, shape)");
      }
      Skip();
      if (Peek() == ',') {
        ++i_;
        continue;
      }
      if (Peek() != '}') Fail("expected ',' or '}'");
    }
    ++i_;  // '}'
    while (i_ < t_.size() && t_[i_] == ' ') ++i_;
    if (i_ + 1 != t_.size() || t_[i_] != '\n') Fail("the header must end with spaces and a newline");
    if (!has_descr || !has_fortran || !has_shape) {
      Fail(std::string("missing key '") + (!has_descr ? "descr" : !has_fortran ? "fortran_order" : "shape") + "'");
    }
    return h;
  }

 private:
  [[noreturn]] void Fail(const std::string& why) const {
    throw NpyError(file_ + ": malformed .npy header: " + why + " at character " + std::to_string(i_) + " of " +
                   Abbreviate(t_, 120));
  }
  void Skip() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
  }
  char Peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  void Expect(char c) {
    Skip();
    if (Peek() != c) Fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string StringLiteral(const char* what) {
    Skip();
    const char q = Peek();
    if (q != '\'' && q != '"') Fail(std::string("expected a string for ") + what);
    const std::size_t end = t_.find(q, i_ + 1);
    if (end == std::string::npos) Fail("unterminated string");
    std::string v = t_.substr(i_ + 1, end - i_ - 1);
    if (v.find('\\') != std::string::npos) Fail("escapes in strings are not supported");
    i_ = end + 1;
    return v;
  }
  bool Boolean() {
    if (t_.compare(i_, 4, "True") == 0) return i_ += 4, true;
    if (t_.compare(i_, 5, "False") == 0) return i_ += 5, false;
    Fail("'fortran_order' must be True or False");
  }
  std::vector<int64_t> IntTuple() {
    std::vector<int64_t> dims;
    bool comma = false;
    Expect('(');
    for (;;) {
      Skip();
      if (Peek() == ')') break;
      const std::size_t start = i_;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
      if (i_ == start || i_ - start > 18) Fail("'shape' must be a tuple of non-negative ints");
      if (t_[start] == '0' && i_ - start > 1) Fail("'shape' has a leading zero (not a Python int literal)");
      if (Peek() == 'L') ++i_;  // Python 2's long suffix, which numpy still reads
      dims.push_back(std::stoll(t_.substr(start, i_ - start)));
      Skip();
      if (Peek() == ',') {
        ++i_;
        comma = true;
        continue;
      }
      if (Peek() != ')') Fail("'shape' must be a tuple of non-negative ints");
    }
    // A one-element tuple needs its comma in Python: "(3)" is an int, not a shape.
    if (dims.size() == 1 && !comma) Fail("'shape' must be a tuple (\"(3,)\", not \"(3)\")");
    ++i_;  // ')'
    return dims;
  }

  const std::string& t_;
  std::string file_;
  std::size_t i_ = 0;
};
}  // namespace

Tensor ReadNpy(const std::filesystem::path& path, std::optional<DataType> expected) {
  const std::string file = Abbreviate(path.string());  // for messages only
  // Only a regular file: a FIFO would block, /dev/zero would never end.
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    throw NpyError(file + ": not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NpyError(file + ": cannot open (" + std::strerror(errno) + ")");
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw NpyError(file + ": cannot read its size (" + ec.message() + ")");
  char magic[6];
  if (!in.read(magic, 6) || std::memcmp(magic, kMagic, 6) != 0) throw NpyError(file + ": not a .npy file (bad magic)");
  unsigned char ver[2];
  if (!in.read(reinterpret_cast<char*>(ver), 2)) throw NpyError(file + ": truncated .npy header");
  uint32_t header_len = 0;
  if (ver[1] != 0) {
    throw NpyError(file + ": unsupported .npy version " + std::to_string(ver[0]) + "." + std::to_string(ver[1]) +
                   ", supported 1.0, 2.0, 3.0");
  }
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

  const NpyHeader h = HeaderParser(header, file).Parse();
  const std::string& descr = h.descr;
  if (h.fortran_order) throw NpyError(file + ": Fortran-order arrays are not supported; save C-order data");
  if (!descr.empty() && descr[0] == '>') {
    throw NpyError(file + ": big-endian dtype '" + Abbreviate(descr) + "' is not supported; save little-endian data");
  }
  std::optional<DataType> dt;
  if (descr == "|V2" || descr == "<V2") {
    if (expected == DT_BF16) dt = DT_BF16;
  } else {
    dt = DataTypeFromTypestr(descr);
  }
  if (!dt) throw NpyError(file + ": unsupported dtype '" + Abbreviate(descr) + "'");
  if (expected && *expected != *dt) {
    throw NpyError(file + ": holds " + DataTypeName(*dt) + " data, the graph declares " + DataTypeName(*expected));
  }
  if (h.shape.size() > kMaxDimNum) {
    throw NpyError(file + ": shape has " + std::to_string(h.shape.size()) + " dims, more than the maximum rank " +
                   std::to_string(kMaxDimNum));
  }
  Shape shape;
  for (int64_t d : h.shape) shape.AppendDim(d);
  // The declared size is compared with the file before anything is allocated:
  // a 128-byte file cannot make us allocate gigabytes.
  const std::size_t elem = DataTypeSize(*dt);
  uint64_t need = elem;
  bool overflow = false;
  for (int64_t d : h.shape) {
    if (d != 0 && need > UINT64_MAX / static_cast<uint64_t>(d)) overflow = true;
    need = overflow ? 0 : need * static_cast<uint64_t>(d);
  }
  const uint64_t have = file_size - static_cast<uint64_t>(in.tellg());
  if (overflow || need > have) {
    throw NpyError(file + ": truncated data: shape " + shape.ToString() + " of " + DataTypeName(*dt) + " needs " +
                   (overflow ? std::string("more than 2^64") : std::to_string(need)) + " bytes, the file has " +
                   std::to_string(have) + " after its header");
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
  const std::string file = Abbreviate(path.string());  // for messages only
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

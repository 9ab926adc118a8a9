// Runtime value types: Shape, StorageShape, ExpandDimsType, StorageFormat,
// TensorDesc, Tensor, the DataType tables and the .npy codec.
#define BOOST_TEST_MODULE runtime_types
#include <boost/test/unit_test.hpp>

#include "test_util.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "ge/engine/npy.h"
#include "ge/runtime/shape.h"
#include "ge/runtime/tensor.h"
#include "ge/runtime/types.h"

namespace fs = std::filesystem;
using namespace ge;

namespace {

using ge_test::Contains;

// A private temporary directory, removed at scope end.
using ge_test::TempDir;

// Writes a version 1.0 .npy file by hand (for the error cases).
void WriteRawNpy(const fs::path& p, const std::string& magic, const std::string& header_dict, const std::string& data) {
  std::string header = header_dict;
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(p, std::ios::binary);
  out.write(magic.data(), static_cast<std::streamsize>(magic.size()));
  const char ver[2] = {1, 0};
  out.write(ver, 2);
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  out.write(reinterpret_cast<const char*>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

const std::string kMagic("\x93NUMPY", 6);

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

}  // namespace

// ---- Shape -------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(shape)

BOOST_AUTO_TEST_CASE(rank_limit) {
  BOOST_CHECK_NO_THROW(Shape({1, 2, 3, 4, 5, 6, 7, 8}));
  BOOST_CHECK_THROW(Shape({1, 2, 3, 4, 5, 6, 7, 8, 9}), std::invalid_argument);
  BOOST_CHECK_THROW(Shape(std::vector<int64_t>(9, 1)), std::invalid_argument);
  Shape s(std::vector<int64_t>(kMaxDimNum, 2));
  BOOST_CHECK_EQUAL(s.GetDimNum(), kMaxDimNum);
  BOOST_CHECK_THROW(s.AppendDim(1), std::invalid_argument);
  BOOST_CHECK_EQUAL(s.GetDimNum(), kMaxDimNum);  // unchanged by the failed append
  Shape t;
  BOOST_CHECK_THROW(t.SetDimNum(kMaxDimNum + 1), std::invalid_argument);
  t.SetDimNum(3);
  BOOST_CHECK_EQUAL(t.GetDimNum(), 3u);
  BOOST_CHECK_EQUAL(t.GetDim(2), 0);  // new dims are 0
}

BOOST_AUTO_TEST_CASE(get_set_dims) {
  Shape s{2, 3, 4};
  BOOST_CHECK_EQUAL(s.GetDimNum(), 3u);
  BOOST_CHECK_EQUAL(s.GetDim(0), 2);
  BOOST_CHECK_EQUAL(s.GetDim(2), 4);
  BOOST_CHECK_THROW(s.GetDim(3), std::out_of_range);
  s.SetDim(1, 7);
  BOOST_CHECK_EQUAL(s.GetDim(1), 7);
  BOOST_CHECK_THROW(s.SetDim(3, 1), std::out_of_range);
  s.AppendDim(5);
  BOOST_CHECK_EQUAL(s.GetDimNum(), 4u);
  BOOST_CHECK((s.Dims() == std::vector<int64_t>{2, 7, 4, 5}));
  BOOST_CHECK_EQUAL(s.ToString(), "[2, 7, 4, 5]");
  BOOST_CHECK(s == Shape({2, 7, 4, 5}));
  BOOST_CHECK(s != Shape({2, 7, 4}));
  BOOST_CHECK(s != Shape({2, 7, 4, 6}));
}

BOOST_AUTO_TEST_CASE(size_and_scalar) {
  Shape scalar;
  BOOST_CHECK(scalar.IsScalar());
  BOOST_CHECK_EQUAL(scalar.GetShapeSize(), 1);
  BOOST_CHECK_EQUAL(scalar.ToString(), "[]");
  BOOST_CHECK_EQUAL(Shape({2, 3, 4}).GetShapeSize(), 24);
  BOOST_CHECK_EQUAL(Shape({2, 0, 4}).GetShapeSize(), 0);
  BOOST_CHECK_EQUAL(Shape({2, -1, 4}).GetShapeSize(), -1);
  Shape s{5, 6};
  BOOST_CHECK(!s.IsScalar());
  s.SetScalar();
  BOOST_CHECK(s.IsScalar());
  BOOST_CHECK_EQUAL(s.GetDimNum(), 0u);
  BOOST_CHECK_EQUAL(s.GetShapeSize(), 1);
  BOOST_CHECK(s == Shape());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(storage_shape) {
  StorageShape empty;
  BOOST_CHECK(empty.GetOriginShape().IsScalar());
  BOOST_CHECK(empty.GetStorageShape().IsScalar());
  StorageShape both(Shape{2, 3});
  BOOST_CHECK(both.GetOriginShape() == Shape({2, 3}));
  BOOST_CHECK(both.GetStorageShape() == Shape({2, 3}));
  StorageShape ss(Shape{2, 3}, Shape{1, 2, 3, 1});
  BOOST_CHECK(ss.GetOriginShape() == Shape({2, 3}));
  BOOST_CHECK(ss.GetStorageShape() == Shape({1, 2, 3, 1}));
  ss.MutableOriginShape().SetDim(0, 9);
  ss.MutableStorageShape().AppendDim(4);
  BOOST_CHECK(ss.GetOriginShape() == Shape({9, 3}));
  BOOST_CHECK(ss.GetStorageShape() == Shape({1, 2, 3, 1, 4}));
  BOOST_CHECK(!(ss == both));
  BOOST_CHECK(StorageShape(Shape{2, 3}) == both);
}

// ---- ExpandDimsType ----------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(expand_dims_type)

BOOST_AUTO_TEST_CASE(rule_strings_and_masks) {
  ExpandDimsType none;
  BOOST_CHECK_EQUAL(none.GetRuleSize(), 0u);
  BOOST_CHECK_EQUAL(none.ToString(), "");
  BOOST_CHECK_EQUAL(none.GetMask(), 0u);

  ExpandDimsType e(std::string("1001"));
  BOOST_CHECK_EQUAL(e.GetRuleSize(), 4u);
  BOOST_CHECK_EQUAL(e.GetMask(), 0b1001u);
  BOOST_CHECK(e.IsExpandIndex(0));
  BOOST_CHECK(!e.IsExpandIndex(1));
  BOOST_CHECK(!e.IsExpandIndex(2));
  BOOST_CHECK(e.IsExpandIndex(3));
  BOOST_CHECK(!e.IsExpandIndex(4));
  BOOST_CHECK_EQUAL(e.ToString(), "1001");

  // A trailing '0' is part of the rule: "0110" has size 4, mask 6.
  ExpandDimsType f(std::string("0110"));
  BOOST_CHECK_EQUAL(f.GetRuleSize(), 4u);
  BOOST_CHECK_EQUAL(f.GetMask(), 6u);
  BOOST_CHECK_EQUAL(f.ToString(), "0110");

  // From a mask: bit i is rule character i.
  ExpandDimsType m(int64_t{5});
  BOOST_CHECK_EQUAL(m.ToString(), "101");
  BOOST_CHECK_EQUAL(m.GetMask(), 5u);
  BOOST_CHECK(m == ExpandDimsType(std::string("101")));
  BOOST_CHECK(!(m == ExpandDimsType(std::string("1010"))));  // same mask, other rule size
  BOOST_CHECK_EQUAL(ExpandDimsType(std::string("11111111")).GetMask(), 255u);
  BOOST_CHECK_EQUAL(ExpandDimsType(int64_t{255}).ToString(), "11111111");
}

BOOST_AUTO_TEST_CASE(errors) {
  BOOST_CHECK_THROW(ExpandDimsType(std::string("102")), std::invalid_argument);
  BOOST_CHECK_THROW(ExpandDimsType(std::string("1 1")), std::invalid_argument);
  BOOST_CHECK_THROW(ExpandDimsType(std::string("111111111")), std::invalid_argument);  // 9 > kMaxDimNum
  BOOST_CHECK_THROW(ExpandDimsType(int64_t{-1}), std::invalid_argument);
  BOOST_CHECK_THROW(ExpandDimsType(int64_t{256}), std::invalid_argument);
  try {
    ExpandDimsType(std::string("10x"));
    BOOST_FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    BOOST_CHECK(Contains(e.what(), "10x"));
  }
}

BOOST_AUTO_TEST_CASE(expand) {
  Shape out;
  ExpandDimsType(std::string("1001")).Expand(Shape{2, 3}, out);
  BOOST_CHECK_EQUAL(out.ToString(), "[1, 2, 3, 1]");
  ExpandDimsType(std::string("0101")).Expand(Shape{2, 3}, out);
  BOOST_CHECK_EQUAL(out.ToString(), "[2, 1, 3, 1]");
  ExpandDimsType(std::string("000")).Expand(Shape{4, 5, 6}, out);
  BOOST_CHECK_EQUAL(out.ToString(), "[4, 5, 6]");
  ExpandDimsType().Expand(Shape{7, 8}, out);  // no rule: a copy
  BOOST_CHECK_EQUAL(out.ToString(), "[7, 8]");
  ExpandDimsType(std::string("11")).Expand(Shape(), out);  // a scalar to [1, 1]
  BOOST_CHECK_EQUAL(out.ToString(), "[1, 1]");

  Shape untouched{9};
  BOOST_CHECK_THROW(ExpandDimsType(std::string("1")).Expand(Shape{2, 3}, untouched), std::invalid_argument);
  BOOST_CHECK_THROW(ExpandDimsType(std::string("1000")).Expand(Shape{2, 3}, untouched), std::invalid_argument);
  BOOST_CHECK_EQUAL(untouched.ToString(), "[9]");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(storage_format) {
  StorageFormat d;
  BOOST_CHECK_EQUAL(d.GetOriginFormat(), FORMAT_ND);
  BOOST_CHECK_EQUAL(d.GetStorageFormat(), FORMAT_ND);
  BOOST_CHECK_EQUAL(d.GetExpandDimsType().GetRuleSize(), 0u);
  StorageFormat f(FORMAT_NCHW, FORMAT_NC1HWC0, ExpandDimsType(std::string("1100")));
  BOOST_CHECK_EQUAL(f.GetOriginFormat(), FORMAT_NCHW);
  BOOST_CHECK_EQUAL(f.GetStorageFormat(), FORMAT_NC1HWC0);
  BOOST_CHECK_EQUAL(f.GetExpandDimsType().ToString(), "1100");
  StorageFormat g = f;
  BOOST_CHECK(g == f);
  g.SetExpandDimsType(ExpandDimsType(std::string("0011")));
  BOOST_CHECK(!(g == f));
  g.SetExpandDimsType(f.GetExpandDimsType());
  g.SetOriginFormat(FORMAT_NHWC);
  BOOST_CHECK(!(g == f));
  g.SetOriginFormat(FORMAT_NCHW);
  g.SetStorageFormat(FORMAT_FRACTAL_NZ);
  BOOST_CHECK_EQUAL(g.GetStorageFormat(), FORMAT_FRACTAL_NZ);
  BOOST_CHECK(!(g == f));
  // GE numbering of the public enums.
  BOOST_CHECK_EQUAL(static_cast<int>(FORMAT_NCHW), 0);
  BOOST_CHECK_EQUAL(static_cast<int>(FORMAT_NHWC), 1);
  BOOST_CHECK_EQUAL(static_cast<int>(FORMAT_ND), 2);
}

BOOST_AUTO_TEST_CASE(tensor_desc) {
  TensorDesc d(Shape{2, 3}, DT_FLOAT);
  BOOST_CHECK_EQUAL(d.ByteSize(), 24u);
  BOOST_CHECK_EQUAL(d.ToString(), "float32[2, 3]");
  BOOST_CHECK_EQUAL(d.placement, kOnHost);
  BOOST_CHECK_EQUAL(TensorDesc(Shape{2, 3}, DT_FLOAT16).ByteSize(), 12u);
  BOOST_CHECK_EQUAL(TensorDesc(Shape{5}, DT_INT64).ByteSize(), 40u);
  BOOST_CHECK_EQUAL(TensorDesc(Shape(), DT_DOUBLE).ByteSize(), 8u);  // scalar
  BOOST_CHECK_EQUAL(TensorDesc(Shape{-1, 3}, DT_FLOAT).ByteSize(), 0u);
  BOOST_CHECK_EQUAL(TensorDesc(Shape{4}, DT_STRING).ByteSize(), 0u);
  // The byte size follows the storage shape.
  TensorDesc padded;
  padded.shape = StorageShape(Shape{3}, Shape{1, 3, 16});
  padded.data_type = DT_INT8;
  BOOST_CHECK_EQUAL(padded.ByteSize(), 48u);
  TensorDesc e = d;
  BOOST_CHECK(e == d);
  e.data_type = DT_INT32;
  BOOST_CHECK(!(e == d));
  e = d;
  e.format.SetStorageFormat(FORMAT_NHWC);
  BOOST_CHECK(!(e == d));
}

// ---- Tensor ----------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(tensor)

BOOST_AUTO_TEST_CASE(allocate_zeroed_aligned) {
  for (int64_t n : {1, 3, 17, 1000}) {
    Tensor t = Tensor::Allocate(TensorDesc(Shape{n}, DT_FLOAT));
    BOOST_REQUIRE(t.GetAddr() != nullptr);
    BOOST_CHECK_EQUAL(reinterpret_cast<uintptr_t>(t.GetAddr()) % 64, 0u);
    BOOST_CHECK_EQUAL(t.GetSize(), static_cast<std::size_t>(n) * 4);
    BOOST_CHECK(t.IsOwned());
    BOOST_CHECK(t.HasData());
    BOOST_CHECK(!t.IsReadOnly());
    BOOST_CHECK_EQUAL(t.GetShapeSize(), n);
    const auto* bytes = static_cast<const unsigned char*>(t.GetAddr());
    bool zero = true;
    for (std::size_t i = 0; i < t.GetSize(); ++i) zero = zero && bytes[i] == 0;
    BOOST_CHECK(zero);
  }
  Tensor scalar = Tensor::Allocate(TensorDesc(Shape(), DT_INT64));
  BOOST_CHECK_EQUAL(scalar.GetSize(), 8u);
  BOOST_CHECK_EQUAL(*scalar.Data<int64_t>(), 0);
  Tensor empty = Tensor::Allocate(TensorDesc(Shape{0, 3}, DT_FLOAT));
  BOOST_CHECK_EQUAL(empty.GetSize(), 0u);
  BOOST_CHECK(empty.HasData());
  BOOST_CHECK_THROW(Tensor::Allocate(TensorDesc(Shape{-1, 2}, DT_FLOAT)), std::invalid_argument);
  BOOST_CHECK_THROW(Tensor::Allocate(TensorDesc(Shape{2}, DT_STRING)), std::invalid_argument);
  BOOST_CHECK_THROW(Tensor::Allocate(TensorDesc(Shape{2}, DT_UNDEFINED)), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(borrow) {
  std::vector<int32_t> mem{1, 2, 3, 4};
  Tensor t = Tensor::Borrow(TensorDesc(Shape{2, 2}, DT_INT32), mem.data(), mem.size() * 4);
  BOOST_CHECK_EQUAL(t.GetAddr(), static_cast<void*>(mem.data()));
  BOOST_CHECK_EQUAL(t.GetSize(), 16u);
  BOOST_CHECK(!t.IsOwned());
  BOOST_CHECK(!t.Owner());
  BOOST_CHECK(t.HasData());
  BOOST_CHECK(!t.IsReadOnly());
  t.Data<int32_t>()[3] = 40;
  BOOST_CHECK_EQUAL(mem[3], 40);  // no copy
  Tensor ro = Tensor::Borrow(TensorDesc(Shape{4}, DT_INT32), mem.data(), 16, true);
  BOOST_CHECK(ro.IsReadOnly());
  BOOST_CHECK_EQUAL(ro.Data<int32_t>()[0], 1);
}

BOOST_AUTO_TEST_CASE(meta_only) {
  Tensor t = Tensor::MetaOnly(TensorDesc(Shape{2, 3}, DT_FLOAT16));
  BOOST_CHECK(t.GetAddr() == nullptr);
  BOOST_CHECK(!t.HasData());
  BOOST_CHECK(!t.IsOwned());
  BOOST_CHECK(t.IsReadOnly());
  BOOST_CHECK_EQUAL(t.GetDataType(), DT_FLOAT16);
  BOOST_CHECK(t.GetStorageShape() == Shape({2, 3}));
  BOOST_CHECK_EQUAL(t.GetShapeSize(), 6);
  Tensor def;
  BOOST_CHECK(!def.HasData());
}

BOOST_AUTO_TEST_CASE(copies_share_buffers) {
  Tensor a = Tensor::Allocate(TensorDesc(Shape{4}, DT_FLOAT));
  Tensor b = a;
  BOOST_CHECK_EQUAL(a.GetAddr(), b.GetAddr());
  BOOST_CHECK_EQUAL(a.Owner().get(), b.Owner().get());
  BOOST_CHECK_EQUAL(a.Owner().use_count(), 2);
  b.Data<float>()[2] = 3.5f;
  BOOST_CHECK_EQUAL(a.Data<float>()[2], 3.5f);
  // The buffer outlives the original: the copy keeps it.
  std::weak_ptr<void> weak = a.Owner();
  a = Tensor();
  BOOST_CHECK(!weak.expired());
  BOOST_CHECK_EQUAL(b.Data<float>()[2], 3.5f);
  b = Tensor();
  BOOST_CHECK(weak.expired());
  // Metadata is per copy.
  Tensor c = Tensor::Allocate(TensorDesc(Shape{2, 2}, DT_FLOAT));
  Tensor d = c;
  d.MutableDesc().shape = StorageShape(Shape{4});
  BOOST_CHECK(c.GetStorageShape() == Shape({2, 2}));
  BOOST_CHECK(d.GetStorageShape() == Shape({4}));
  BOOST_CHECK_EQUAL(c.GetAddr(), d.GetAddr());
}

BOOST_AUTO_TEST_SUITE_END()

// ---- DataType tables -----------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(data_types)

struct Row {
  DataType dt;
  std::size_t size;
  const char* name;
  char fmt;  // 0: none
  const char* typestr;
};
const Row kRows[] = {
    {DT_FLOAT, 4, "float32", 'f', "<f4"},    {DT_FLOAT16, 2, "float16", 'e', "<f2"},
    {DT_INT8, 1, "int8", 'b', "|i1"},        {DT_INT32, 4, "int32", 'i', "<i4"},
    {DT_UINT8, 1, "uint8", 'B', "|u1"},      {DT_INT16, 2, "int16", 'h', "<i2"},
    {DT_UINT16, 2, "uint16", 'H', "<u2"},    {DT_UINT32, 4, "uint32", 'I', "<u4"},
    {DT_INT64, 8, "int64", 'q', "<i8"},      {DT_UINT64, 8, "uint64", 'Q', "<u8"},
    {DT_DOUBLE, 8, "float64", 'd', "<f8"},   {DT_BOOL, 1, "bool", '?', "|b1"},
    {DT_BF16, 2, "bfloat16", 0, "<V2"},      {DT_COMPLEX64, 8, "complex64", 0, "<c8"},
    {DT_COMPLEX128, 16, "complex128", 0, "<c16"},
};

BOOST_AUTO_TEST_CASE(ge_numbering) {
  BOOST_CHECK_EQUAL(static_cast<int>(DT_FLOAT), 0);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_FLOAT16), 1);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_INT8), 2);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_INT32), 3);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_UINT8), 4);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_INT16), 6);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_UINT16), 7);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_UINT32), 8);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_INT64), 9);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_UINT64), 10);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_DOUBLE), 11);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_BOOL), 12);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_BF16), 27);
  BOOST_CHECK_EQUAL(static_cast<int>(DT_UNDEFINED), 28);
  BOOST_CHECK(IsKnownDataType(DT_FLOAT));
  BOOST_CHECK(IsKnownDataType(DT_BF16));
  BOOST_CHECK(IsKnownDataType(DT_UNDEFINED));
  BOOST_CHECK(!IsKnownDataType(5));  // a gap in GE's numbering
  BOOST_CHECK(!IsKnownDataType(DT_MAX));
  BOOST_CHECK(!IsKnownDataType(-1));
  BOOST_CHECK(!IsKnownDataType(1000));
}

BOOST_AUTO_TEST_CASE(sizes_names_formats) {
  for (const Row& r : kRows) {
    BOOST_TEST_CONTEXT("dtype " << r.name) {
      BOOST_CHECK_EQUAL(DataTypeSize(r.dt), r.size);
      BOOST_CHECK_EQUAL(DataTypeName(r.dt), r.name);
      auto back = DataTypeFromName(r.name);
      BOOST_REQUIRE(back.has_value());
      BOOST_CHECK_EQUAL(*back, r.dt);
      auto fmt = DataTypeStructFormat(r.dt);
      if (r.fmt == 0) {
        BOOST_CHECK(!fmt.has_value());
      } else {
        BOOST_REQUIRE(fmt.has_value());
        BOOST_CHECK_EQUAL(*fmt, r.fmt);
      }
      BOOST_CHECK_EQUAL(DataTypeTypestr(r.dt), r.typestr);
    }
  }
  BOOST_CHECK_EQUAL(DataTypeSize(DT_STRING), 0u);
  BOOST_CHECK_EQUAL(DataTypeSize(DT_UNDEFINED), 0u);
  BOOST_CHECK_EQUAL(DataTypeName(static_cast<DataType>(5)), "DT_5");
  // GE names are accepted too; the ambiguous "float" is not.
  BOOST_CHECK_EQUAL(DataTypeFromName("DT_FLOAT").value(), DT_FLOAT);
  BOOST_CHECK_EQUAL(DataTypeFromName("DT_BF16").value(), DT_BF16);
  BOOST_CHECK_EQUAL(DataTypeFromName("DT_INT64").value(), DT_INT64);
  BOOST_CHECK(!DataTypeFromName("float").has_value());
  BOOST_CHECK(!DataTypeFromName("").has_value());
  BOOST_CHECK(!DataTypeFromName("float99").has_value());
}

BOOST_AUTO_TEST_CASE(typestr_round_trip) {
  for (const Row& r : kRows) {
    if (r.dt == DT_BF16) continue;  // stored as 2-byte void: needs the expected dtype
    BOOST_TEST_CONTEXT("dtype " << r.name) {
      auto back = DataTypeFromTypestr(DataTypeTypestr(r.dt));
      BOOST_REQUIRE(back.has_value());
      BOOST_CHECK_EQUAL(*back, r.dt);
    }
  }
  BOOST_CHECK_EQUAL(DataTypeFromTypestr("=f4").value(), DT_FLOAT);
  BOOST_CHECK_EQUAL(DataTypeFromTypestr("|b1").value(), DT_BOOL);
  BOOST_CHECK(!DataTypeFromTypestr("<V2").has_value());
  BOOST_CHECK(!DataTypeFromTypestr("<U8").has_value());
  BOOST_CHECK(!DataTypeFromTypestr("f").has_value());
  BOOST_CHECK(!DataTypeFromTypestr("").has_value());
}

BOOST_AUTO_TEST_SUITE_END()

// ---- .npy ------------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(npy)

BOOST_AUTO_TEST_CASE(round_trip) {
  TempDir dir;
  // float32 2-D
  {
    Tensor t = Tensor::Allocate(TensorDesc(Shape{2, 3}, DT_FLOAT));
    for (int i = 0; i < 6; ++i) t.Data<float>()[i] = 0.5f * static_cast<float>(i) - 1.0f;
    WriteNpy(dir.path / "f32.npy", t);
    Tensor r = ReadNpy(dir.path / "f32.npy");
    BOOST_CHECK_EQUAL(r.GetDataType(), DT_FLOAT);
    BOOST_CHECK(r.GetStorageShape() == Shape({2, 3}));
    BOOST_REQUIRE_EQUAL(r.GetSize(), t.GetSize());
    BOOST_CHECK_EQUAL(std::memcmp(r.GetAddr(), t.GetAddr(), t.GetSize()), 0);
    // The data starts 64-byte aligned after the version 1.0 header (numpy's layout).
    BOOST_CHECK_EQUAL((fs::file_size(dir.path / "f32.npy") - 24u) % 64u, 0u);
  }
  // every sized dtype, 1-D (a "(n,)" shape) and a scalar ("()")
  for (DataType dt : {DT_FLOAT16, DT_INT8, DT_INT16, DT_INT32, DT_INT64, DT_UINT8, DT_UINT16, DT_UINT32, DT_UINT64,
                      DT_DOUBLE, DT_BOOL}) {
    BOOST_TEST_CONTEXT("dtype " << DataTypeName(dt)) {
      Tensor t = Tensor::Allocate(TensorDesc(Shape{3}, dt));
      auto* b = static_cast<unsigned char*>(t.GetAddr());
      for (std::size_t i = 0; i < t.GetSize(); ++i) b[i] = static_cast<unsigned char>(dt == DT_BOOL ? (i & 1) : i + 1);
      WriteNpy(dir.path / "v.npy", t);
      Tensor r = ReadNpy(dir.path / "v.npy", dt);
      BOOST_CHECK_EQUAL(r.GetDataType(), dt);
      BOOST_CHECK(r.GetStorageShape() == Shape({3}));
      BOOST_REQUIRE_EQUAL(r.GetSize(), t.GetSize());
      BOOST_CHECK_EQUAL(std::memcmp(r.GetAddr(), t.GetAddr(), t.GetSize()), 0);
    }
  }
  {
    Tensor t = Tensor::Allocate(TensorDesc(Shape(), DT_DOUBLE));
    *t.Data<double>() = 2.25;
    WriteNpy(dir.path / "scalar.npy", t);
    Tensor r = ReadNpy(dir.path / "scalar.npy");
    BOOST_CHECK(r.GetStorageShape().IsScalar());
    BOOST_CHECK_EQUAL(*r.Data<double>(), 2.25);
  }
  // bfloat16 is stored as 2-byte void and needs the expected dtype to read back.
  {
    Tensor t = Tensor::Allocate(TensorDesc(Shape{2, 2}, DT_BF16));
    const uint16_t v[4] = {0x3F80, 0xBF80, 0x4000, 0x0000};
    std::memcpy(t.GetAddr(), v, sizeof(v));
    WriteNpy(dir.path / "bf16.npy", t);
    Tensor r = ReadNpy(dir.path / "bf16.npy", DT_BF16);
    BOOST_CHECK_EQUAL(r.GetDataType(), DT_BF16);
    BOOST_CHECK(r.GetStorageShape() == Shape({2, 2}));
    BOOST_CHECK_EQUAL(std::memcmp(r.GetAddr(), v, sizeof(v)), 0);
    BOOST_CHECK_THROW(ReadNpy(dir.path / "bf16.npy"), NpyError);
  }
  // A tensor without host data cannot be written.
  BOOST_CHECK_THROW(WriteNpy(dir.path / "meta.npy", Tensor::MetaOnly(TensorDesc(Shape{2}, DT_FLOAT))), NpyError);
}

// Each error names the file and says what is wrong.
void CheckNpyError(const fs::path& p, const std::string& fragment, std::optional<DataType> expected = std::nullopt) {
  try {
    ReadNpy(p, expected);
    BOOST_ERROR("ReadNpy(" << p << ") did not throw");
  } catch (const NpyError& e) {
    const std::string what = e.what();
    BOOST_CHECK_MESSAGE(Contains(what, p.string()), "error does not name the file: " << what);
    BOOST_CHECK_MESSAGE(Contains(what, fragment), "error lacks '" << fragment << "': " << what);
  }
}

BOOST_AUTO_TEST_CASE(errors) {
  TempDir dir;
  const std::string f32x4 = Bytes(std::vector<float>{1, 2, 3, 4});
  const fs::path good = dir.path / "good.npy";
  WriteRawNpy(good, kMagic, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f32x4);
  BOOST_CHECK_EQUAL(ReadNpy(good).Data<float>()[3], 4.0f);  // the hand-written layout is valid

  const fs::path magic = dir.path / "magic.npy";
  WriteRawNpy(magic, std::string("\x93NUMPX", 6), "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f32x4);
  CheckNpyError(magic, "bad magic");

  const fs::path text = dir.path / "text.npy";
  std::ofstream(text) << "hello";
  CheckNpyError(text, "bad magic");

  const fs::path big = dir.path / "big.npy";
  WriteRawNpy(big, kMagic, "{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", f32x4);
  CheckNpyError(big, "big-endian");

  const fs::path fortran = dir.path / "fortran.npy";
  WriteRawNpy(fortran, kMagic, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", f32x4);
  CheckNpyError(fortran, "Fortran");

  const fs::path truncated = dir.path / "truncated.npy";
  WriteRawNpy(truncated, kMagic, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", f32x4);
  CheckNpyError(truncated, "truncated");

  const fs::path header_cut = dir.path / "header_cut.npy";
  {
    std::ofstream out(header_cut, std::ios::binary);
    out.write(kMagic.data(), 6);
    const char rest[4] = {1, 0, 100, 0};  // promises a 100-byte header
    out.write(rest, 4);
    out << "{'descr'";
  }
  CheckNpyError(header_cut, "truncated");

  CheckNpyError(good, "graph declares int32", DT_INT32);  // dtype mismatch
  CheckNpyError(good, "float32", DT_INT32);

  const fs::path unsupported = dir.path / "unicode.npy";
  WriteRawNpy(unsupported, kMagic, "{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }", std::string(16, 'a'));
  CheckNpyError(unsupported, "unsupported dtype");

  const fs::path version = dir.path / "version.npy";
  {
    std::ofstream out(version, std::ios::binary);
    out.write(kMagic.data(), 6);
    const char rest[2] = {9, 0};
    out.write(rest, 2);
  }
  CheckNpyError(version, "unsupported .npy version");

  CheckNpyError(dir.path / "absent.npy", "cannot open");
}

BOOST_AUTO_TEST_SUITE_END()

// libge_test_orphan.so: a C++ custom op without any prototype (test/oplib/README.md).
#include "test_ops.h"

namespace {
const bool registered = [] {
  auto schema = ge_test::UnarySchema("OrphanCpp");
  ge::AddRegisteredCustomOp({"OrphanCpp", [schema]() -> std::unique_ptr<ge::BaseCustomOp> {
                               return std::make_unique<ge_test::UnaryFloatOp>(schema, [](float v) { return v; });
                             }});
  return true;
}();
}  // namespace

// libge_test_ops.so: NegCpp, prototype and C++ custom op (test/oplib/README.md).
#include "test_ops.h"

namespace {
const bool registered = [] {
  auto schema = ge_test::UnarySchema("NegCpp");
  ge::AddRegisteredPrototype({"NegCpp", schema, ""});
  ge::AddRegisteredCustomOp({"NegCpp", [schema]() -> std::unique_ptr<ge::BaseCustomOp> {
                               return std::make_unique<ge_test::UnaryFloatOp>(schema, [](float v) { return -v; });
                             }});
  return true;
}();
}  // namespace

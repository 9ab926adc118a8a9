// libge_test_borrow.so: C++ custom op TwiceCpp; its prototype is registered by
// libge_test_borrow_proto.so (test/oplib/README.md).
#include "test_ops.h"

namespace {
const bool registered = [] {
  auto schema = ge_test::UnarySchema("TwiceCpp");  // what the op reports; the engine uses the registered prototype
  ge::AddRegisteredCustomOp({"TwiceCpp", [schema]() -> std::unique_ptr<ge::BaseCustomOp> {
                               return std::make_unique<ge_test::UnaryFloatOp>(schema, [](float v) { return 2 * v; });
                             }});
  return true;
}();
}  // namespace

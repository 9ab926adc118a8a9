// libge_test_borrow_proto.so: the prototype of TwiceCpp (test/oplib/README.md).
#include "test_ops.h"

namespace {
const bool registered = [] {
  ge::AddRegisteredPrototype({"TwiceCpp", ge_test::UnarySchema("TwiceCpp"), ""});
  return true;
}();
}  // namespace

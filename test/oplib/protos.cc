// libge_test_protos.so: prototypes only (test/oplib/README.md).
#include "test_ops.h"

namespace {
const bool registered = [] {
  auto scale = std::make_shared<ge::OpSchema>();
  scale->op_type = "ScaleLib";
  scale->inputs = {{"x", ge::IrInputKind::kRequired}};
  scale->outputs = {{"y", ge::IrOutputKind::kRequired}};
  scale->attrs = {{"factor", ge::AttrType::VT_FLOAT, ge::AttrValue(2.0f)}};
  ge::AddRegisteredPrototype({"ScaleLib", scale, ""});
  ge::AddRegisteredPrototype({"ReplacedLib", ge_test::UnarySchema("ReplacedLib"), ""});
  return true;
}();
}  // namespace

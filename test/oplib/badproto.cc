// libge_test_badproto.so: a prototype the host cannot use (test/oplib/README.md):
// attribute `cfg` has a kind (NamedAttrs) our IR does not have.
#include "test_ops.h"

namespace ge {
REG_OP(BadProtoLib).INPUT(x, TensorType::ALL()).OUTPUT(y, TensorType::ALL()).REQUIRED_ATTR(cfg, NamedAttrs)
    .OP_END_FACTORY_REG(BadProtoLib);
}  // namespace ge

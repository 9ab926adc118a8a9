// libge_test_multibad.so: two prototypes the host cannot use (attributes of
// kind NamedAttrs) among a good one, GoodA (test/oplib/README.md).
#include "test_ops.h"

namespace ge {
REG_OP(GoodA).INPUT(x, TensorType::ALL()).OUTPUT(y, TensorType::ALL()).OP_END_FACTORY_REG(GoodA);
REG_OP(BadA).INPUT(x, TensorType::ALL()).OUTPUT(y, TensorType::ALL()).REQUIRED_ATTR(cfg_a, NamedAttrs)
    .OP_END_FACTORY_REG(BadA);
REG_OP(BadB).INPUT(x, TensorType::ALL()).OUTPUT(y, TensorType::ALL()).REQUIRED_ATTR(cfg_b, NamedAttrs)
    .OP_END_FACTORY_REG(BadB);
}  // namespace ge

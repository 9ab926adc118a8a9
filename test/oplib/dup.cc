// libge_test_dup.so: prototype DupOp and the same C++ custom op class
// registered twice (test/oplib/README.md).
#include "test_ops.h"

namespace ge {
REG_OP(DupOp).INPUT(x, TensorType::ALL()).OUTPUT(y, TensorType::ALL()).OP_END_FACTORY_REG(DupOp);
}  // namespace ge

class DupOp : public ge_test::UnaryFloatOp<ge_test::Same> {};
REG_AUTO_MAPPING_OP(DupOp);
REG_AUTO_MAPPING_OP(DupOp);

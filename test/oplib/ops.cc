// libge_test_ops.so: NegCpp, prototype and C++ custom op (test/oplib/README.md).
#include "test_ops.h"

namespace ge {
REG_OP(NegCpp).INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(NegCpp);
}  // namespace ge

class NegCpp : public ge_test::UnaryFloatOp<ge_test::Neg> {};
REG_AUTO_MAPPING_OP(NegCpp);

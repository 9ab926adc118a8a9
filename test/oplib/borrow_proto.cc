// libge_test_borrow_proto.so: the prototype of TwiceCpp (test/oplib/README.md).
#include "test_ops.h"

namespace ge {
REG_OP(TwiceCpp).INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(TwiceCpp);
}  // namespace ge

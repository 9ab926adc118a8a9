// libge_test_dep_proto.so: prototypes DepTwice and DepOnly, which the
// libraries linking it (libge_test_dep_ops*.so) implement (test/oplib/README.md).
#include "test_ops.h"

namespace ge {
REG_OP(DepTwice).INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(DepTwice);
REG_OP(DepOnly).INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(DepOnly);
}  // namespace ge

extern "C" float ge_test_dep_factor() { return 2.0f; }

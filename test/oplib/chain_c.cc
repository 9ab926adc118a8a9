// libge_test_chain_c.so: prototype ChainBase, at the end of a chain of three (test/oplib/README.md).
#include "test_ops.h"

namespace ge {
REG_OP(ChainBase).INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(ChainBase);
}  // namespace ge

extern "C" int ge_test_chain_c() { return 1; }

// libge_test_chain_b.so: prototype ChainTop; links libge_test_chain_c.so (test/oplib/README.md).
#include "test_ops.h"

namespace ge {
REG_OP(ChainTop).INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(ChainTop);
}  // namespace ge

extern "C" int ge_test_chain_c();
extern "C" int ge_test_chain_b() { return ge_test_chain_c() + 1; }

// libge_test_protos.so: prototypes only (test/oplib/README.md).
#include "test_ops.h"

namespace ge {
REG_OP(ScaleLib).INPUT(x, "T").OUTPUT(y, "T").ATTR(factor, Float, 2.0).DATATYPE(T, TensorType({DT_FLOAT}))
    .OP_END_FACTORY_REG(ScaleLib);
REG_OP(ReplacedLib).INPUT(x, TensorType::ALL()).OUTPUT(y, TensorType::ALL()).OP_END_FACTORY_REG(ReplacedLib);
}  // namespace ge

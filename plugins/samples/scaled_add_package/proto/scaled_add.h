// Prototypes of the sample op package, in GE's REG_OP form: an upstream
// prototype header compiles unchanged against this host's graph/operator_reg.h.
#ifndef GE_SAMPLE_SCALED_ADD_PROTO_H_
#define GE_SAMPLE_SCALED_ADD_PROTO_H_

#include "graph/operator_reg.h"
#include "register/op_impl_registry.h"

namespace ge {
// y = alpha * x1 + x2, float32 only. Implemented in Python (python/scaled_add.py).
REG_OP(ScaledAddCustom)
    .INPUT(x1, "T")
    .INPUT(x2, "T")
    .OUTPUT(y, "T")
    .ATTR(alpha, Float, 1.0)
    .DATATYPE(T, TensorType({DT_FLOAT}))
    .OP_END_FACTORY_REG(ScaledAddCustom);

// y = x * x, float32 only. Implemented in C++ (op/square_cpp.cc).
REG_OP(SquareCppCustom)
    .INPUT(x, TensorType({DT_FLOAT}))
    .OUTPUT(y, TensorType({DT_FLOAT}))
    .OP_END_FACTORY_REG(SquareCppCustom);
}  // namespace ge

#endif  // GE_SAMPLE_SCALED_ADD_PROTO_H_

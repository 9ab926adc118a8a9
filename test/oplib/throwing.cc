// libge_test_throwing.so: prototypes ThrowA and ThrowB and two C++ custom ops
// of them whose constructors throw (test/oplib/README.md).
#include <stdexcept>

#include "test_ops.h"

namespace ge {
REG_OP(ThrowA).INPUT(x, TensorType::ALL()).OUTPUT(y, TensorType::ALL()).OP_END_FACTORY_REG(ThrowA);
REG_OP(ThrowB).INPUT(x, TensorType::ALL()).OUTPUT(y, TensorType::ALL()).OP_END_FACTORY_REG(ThrowB);
}  // namespace ge

class ThrowA : public ge_test::UnaryFloatOp<ge_test::Same> {
 public:
  ThrowA() { throw std::runtime_error("no ThrowA today"); }
};
class ThrowB : public ge_test::UnaryFloatOp<ge_test::Same> {
 public:
  ThrowB() { throw std::runtime_error("no ThrowB today"); }
};
REG_AUTO_MAPPING_OP(ThrowA);
REG_AUTO_MAPPING_OP(ThrowB);

// libge_test_glob_user.so: prototype and C++ custom op GlobUser (y = x +
// ge_test_glob_offset()), a symbol it does not link: loaded alone, dlopen
// refuses it (test/oplib/README.md).
#include "test_ops.h"

extern "C" float ge_test_glob_offset();

namespace ge {
REG_OP(GlobUser).INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(GlobUser);
}  // namespace ge

namespace {
float PlusOffset(float v) { return v + ge_test_glob_offset(); }
}  // namespace

class GlobUser : public ge_test::UnaryFloatOp<PlusOffset> {};
REG_AUTO_MAPPING_OP(GlobUser);

// libge_test_dep_ops.so: C++ custom op DepTwice (y = 2x through
// libge_test_dep_proto.so's ge_test_dep_factor), linked against
// libge_test_dep_proto.so (DT_NEEDED, RUNPATH $ORIGIN), which holds its
// prototype and loads inside this library's dlopen (test/oplib/README.md).
#include "test_ops.h"

extern "C" float ge_test_dep_factor();

namespace {
float ByFactor(float v) { return ge_test_dep_factor() * v; }
}  // namespace

class DepTwice : public ge_test::UnaryFloatOp<ByFactor> {};
REG_AUTO_MAPPING_OP(DepTwice);

// libge_test_dep_ops2.so: C++ custom op DepOnly (y = x), a second library
// linking libge_test_dep_proto.so (test/oplib/README.md).
#include "test_ops.h"

extern "C" float ge_test_dep_factor();

class DepOnly : public ge_test::UnaryFloatOp<ge_test::Same> {};
REG_AUTO_MAPPING_OP(DepOnly);

// Used, so that the link keeps the dependency.
extern "C" float ge_test_dep_ops2_factor() { return ge_test_dep_factor(); }

// libge_test_dep_bad.so: links libge_test_dep_proto.so (whose initializers
// its dlopen runs) and fails: C++ custom op DepBadOrphan has no prototype
// anywhere (test/oplib/README.md).
#include "test_ops.h"

extern "C" float ge_test_dep_factor();

class DepBadOrphan : public ge_test::UnaryFloatOp<ge_test::Same> {};
REG_AUTO_MAPPING_OP(DepBadOrphan);

extern "C" float ge_test_dep_bad_factor() { return ge_test_dep_factor(); }

// libge_test_orphan.so: a C++ custom op without any prototype (test/oplib/README.md).
#include "test_ops.h"

class OrphanCpp : public ge_test::UnaryFloatOp<ge_test::Same> {};
REG_AUTO_MAPPING_OP(OrphanCpp);

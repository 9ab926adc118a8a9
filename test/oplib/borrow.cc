// libge_test_borrow.so: C++ custom op TwiceCpp; its prototype is registered by
// libge_test_borrow_proto.so (test/oplib/README.md).
#include "test_ops.h"

class TwiceCpp : public ge_test::UnaryFloatOp<ge_test::Twice> {};
REG_AUTO_MAPPING_OP(TwiceCpp);

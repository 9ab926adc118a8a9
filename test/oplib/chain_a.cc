// libge_test_chain_a.so: C++ custom op ChainTop (y = 2x); links
// libge_test_chain_b.so, which links libge_test_chain_c.so: one dlopen of this
// library runs all three's static initializers (test/oplib/README.md).
#include "test_ops.h"

extern "C" int ge_test_chain_b();

class ChainTop : public ge_test::UnaryFloatOp<ge_test::Twice> {};
REG_AUTO_MAPPING_OP(ChainTop);

extern "C" int ge_test_chain_a() { return ge_test_chain_b() + 1; }

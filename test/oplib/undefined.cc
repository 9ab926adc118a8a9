// libge_test_undefined.so: needs a symbol nobody defines, so dlopen with
// RTLD_NOW fails (test/oplib/README.md).
extern "C" int ge_test_symbol_nobody_defines(int);

extern "C" int ge_test_uses_missing_symbol(int v) { return ge_test_symbol_nobody_defines(v); }

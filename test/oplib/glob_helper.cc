// libge_test_glob_helper.so: no op library (a test copies it to <root>/helpers/);
// the symbol libge_test_glob_user.so uses without linking it (test/oplib/README.md).
extern "C" float ge_test_glob_offset() { return 100.0f; }

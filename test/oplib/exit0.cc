// libge_test_exit0.so: calls exit(0) while loaded (test/oplib/README.md).
#include <cstdlib>

namespace {
__attribute__((constructor)) void ExitWhileLoaded() { std::exit(0); }
}  // namespace

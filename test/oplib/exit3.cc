// libge_test_exit3.so: calls exit(3) while loaded (test/oplib/README.md).
#include <cstdlib>

namespace {
__attribute__((constructor)) void ExitWhileLoaded() { std::exit(3); }
}  // namespace

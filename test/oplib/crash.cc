// libge_test_crash.so: segfaults while loaded (test/oplib/README.md).
#include <csignal>

namespace {
__attribute__((constructor)) void CrashWhileLoaded() { std::raise(SIGSEGV); }
}  // namespace

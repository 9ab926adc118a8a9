// libge_test_static_throw.so: a static constructor throws a C++ exception
// (test/oplib/README.md).
#include <stdexcept>

namespace {
struct Config {
  Config() { throw std::runtime_error("cannot read /etc/ge_test_static.conf"); }
};
const Config config;
}  // namespace

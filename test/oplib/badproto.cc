// libge_test_badproto.so: a prototype the host cannot use (test/oplib/README.md).
#include "test_ops.h"

namespace {
const bool registered = [] {
  ge::AddRegisteredPrototype({"BadProtoLib", nullptr, "attribute 'cfg': type NamedAttrs is not supported"});
  return true;
}();
}  // namespace

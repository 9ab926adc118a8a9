// libge_test_glob_loader.so: prototype GlobLoaderOp; its constructor dlopens
// <opp root>/helpers/libge_test_glob_helper.so with RTLD_GLOBAL, as vendor
// runtimes do, making ge_test_glob_offset visible to libraries loaded after
// it in the same process (test/oplib/README.md).
#include <dlfcn.h>

#include <string>

#include "test_ops.h"

namespace ge {
REG_OP(GlobLoaderOp).INPUT(x, TensorType({DT_FLOAT})).OUTPUT(y, TensorType({DT_FLOAT})).OP_END_FACTORY_REG(GlobLoaderOp);
}  // namespace ge

namespace {
__attribute__((constructor)) void LoadHelperGlobally() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&LoadHelperGlobally), &info) == 0 || info.dli_fname == nullptr) return;
  const std::string self = info.dli_fname;
  // <root>/op_graph/lib/linux/<arch>/lib.so -> <root>/helpers/
  const std::string helper = self.substr(0, self.rfind('/')) + "/../../../../helpers/libge_test_glob_helper.so";
  dlopen(helper.c_str(), RTLD_NOW | RTLD_GLOBAL);
}
}  // namespace

// exe_graph/runtime/op_compile_context.h: gert::OpCompileContext, compile of one node (ge/op/contexts.h).
//
// GE's header path; the class is this project's (one class per concept),
// named in namespace gert as GE code spells it. See share/docs/embedding.md.
#pragma once

#include "ge/op/contexts.h"
#include "exe_graph/runtime/extended_kernel_context.h"
#include "graph/ascend_string.h"

namespace gert {
using ge::OpCompileContext;
}  // namespace gert

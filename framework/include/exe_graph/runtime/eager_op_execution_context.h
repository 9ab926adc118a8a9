// exe_graph/runtime/eager_op_execution_context.h: gert::EagerOpExecutionContext, eager execution of one node (ge/op/contexts.h).
//
// GE's header path; the class is this project's (one class per concept),
// named in namespace gert as GE code spells it. See share/docs/embedding.md.
#pragma once

#include "ge/op/contexts.h"
#include "exe_graph/runtime/extended_kernel_context.h"

namespace gert {
using ge::EagerOpExecutionContext;
}  // namespace gert

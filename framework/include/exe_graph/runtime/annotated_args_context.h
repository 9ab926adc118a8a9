// exe_graph/runtime/annotated_args_context.h: gert::AnnotatedArgsContext and the launch declaration types (ge/op/launch.h).
//
// GE's header path; the class is this project's (one class per concept),
// named in namespace gert as GE code spells it. See share/docs/embedding.md.
#pragma once

#include "ge/op/launch.h"
#include "exe_graph/runtime/extended_kernel_context.h"

namespace gert {
using ge::AnnotatedArgsContext;
}  // namespace gert

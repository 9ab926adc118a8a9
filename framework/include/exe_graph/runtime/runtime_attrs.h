// exe_graph/runtime/runtime_attrs.h: gert::RuntimeAttrs, a node's attributes in IR order (ge/op/attrs.h).
//
// GE's header path; the class is this project's (one class per concept),
// named in namespace gert as GE code spells it. See share/docs/embedding.md.
#pragma once

#include "ge/op/attrs.h"
#include "exe_graph/runtime/continuous_vector.h"
#include "exe_graph/runtime/tensor.h"

namespace gert {
using ge::RuntimeAttrs;
}  // namespace gert

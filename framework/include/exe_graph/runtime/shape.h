// exe_graph/runtime/shape.h: gert::Shape (up to 8 int64 dims; ge/runtime/shape.h).
//
// GE's header path; the class is this project's (one class per concept),
// named in namespace gert as GE code spells it. See share/docs/embedding.md.
#pragma once

#include "ge/runtime/shape.h"

namespace gert {
using ge::Shape;
}  // namespace gert

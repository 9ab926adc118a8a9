// exe_graph/runtime/storage_shape.h: gert::StorageShape, origin and storage shapes (ge/runtime/shape.h).
//
// GE's header path; the class is this project's (one class per concept),
// named in namespace gert as GE code spells it. See share/docs/embedding.md.
#pragma once

#include "ge/runtime/shape.h"
#include "exe_graph/runtime/shape.h"

namespace gert {
using ge::StorageShape;
}  // namespace gert

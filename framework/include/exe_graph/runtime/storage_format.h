// exe_graph/runtime/storage_format.h: gert::StorageFormat and gert::ExpandDimsType (ge/runtime/shape.h).
//
// GE's header path; the class is this project's (one class per concept),
// named in namespace gert as GE code spells it. See share/docs/embedding.md.
#pragma once

#include "ge/runtime/shape.h"

namespace gert {
using ge::StorageFormat;
using ge::ExpandDimsType;
}  // namespace gert

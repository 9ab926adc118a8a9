// exe_graph/runtime/continuous_vector.h: gert::TypedContinuousVector, GE's view of a list attribute (ge/op/attrs.h).
//
// GE's header path; RuntimeAttrs::GetListInt / GetListFloat hand these out.
// See share/docs/embedding.md.
#pragma once

#include "ge/op/attrs.h"

// exe_graph/runtime/runtime_tensor.h: gert::Tensor under GE's newer header name.
//
// GE includes either path; both give the same declarations.
#pragma once

#include "exe_graph/runtime/tensor.h"

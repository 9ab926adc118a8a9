// exe_graph/runtime/infer_shape_context.h: gert::InferShapeContext, GE's shape inference (ge/op/infer_contexts.h).
//
// GE's header path over this project's header, which defines the class in
// namespace gert (one class per concept). See share/docs/embedding.md.
#pragma once

#include "ge/op/infer_contexts.h"
#include "exe_graph/runtime/extended_kernel_context.h"

// exe_graph/runtime/extended_kernel_context.h: gert::ExtendedKernelContext, the base of every op context (ge/op/kernel_context.h).
//
// GE's header path over this project's header, which defines the class in
// namespace gert (one class per concept). See share/docs/embedding.md.
#pragma once

#include "ge/op/kernel_context.h"
#include "exe_graph/runtime/runtime_attrs.h"
#include "exe_graph/runtime/tensor.h"

// exe_graph/runtime/tensor.h: gert::Tensor, metadata plus host memory (ge/runtime/tensor.h).
//
// GE's header path; the class is this project's (one class per concept),
// named in namespace gert as GE code spells it. See share/docs/embedding.md.
#pragma once

#include "ge/runtime/tensor.h"
#include "exe_graph/runtime/shape.h"
#include "exe_graph/runtime/storage_shape.h"
#include "exe_graph/runtime/storage_format.h"

namespace gert {
using ge::Tensor;
using ge::TensorPlacement;
using ge::kOnDeviceHbm;
using ge::kOnHost;
using ge::kFollowing;
using ge::kOnDeviceP2p;
using ge::kTensorPlacementEnd;
}  // namespace gert

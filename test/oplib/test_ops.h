// test_ops.h: the C++ custom op shared by the test op libraries
// (test/oplib/README.md), written as an upstream GE author writes one:
// graph/custom_op.h interfaces, gert:: contexts, graphStatus codes.
#pragma once

#include <cstddef>

#include "graph/custom_op.h"
#include "graph/operator_reg.h"

namespace ge_test {

// y = F(x), float32, same shape: eager execute and shape inference.
template <float (*F)(float)>
class UnaryFloatOp : public ge::EagerExecuteOp, public ge::ShapeInferOp {
 public:
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0U);
    if (x == nullptr || x->GetDataType() != ge::DT_FLOAT) return ge::GRAPH_PARAM_INVALID;
    gert::Tensor* y = ctx->MallocOutputTensor(0U, x->GetShape(), x->GetFormat(), x->GetDataType());
    if (y == nullptr) return ge::GRAPH_FAILED;
    const auto* in = static_cast<const float*>(x->GetAddr());
    auto* out = static_cast<float*>(y->GetAddr());
    for (int64_t i = 0; i < x->GetShapeSize(); ++i) out[i] = F(in[i]);
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus InferShape(gert::InferShapeContext* ctx) override {
    const gert::Shape* x = ctx->GetInputShape(0U);
    gert::Shape* y = ctx->GetOutputShape(0U);
    if (x == nullptr || y == nullptr) return ge::GRAPH_FAILED;
    *y = *x;
    return ge::GRAPH_SUCCESS;
  }
  ge::graphStatus InferDataType(gert::InferDataTypeContext* ctx) override {
    if (ctx->GetInputDataType(0U) != ge::DT_FLOAT) return ge::GRAPH_PARAM_INVALID;
    return ctx->SetOutputDataType(0U, ge::DT_FLOAT);
  }
};

inline float Neg(float v) { return -v; }
inline float Twice(float v) { return 2 * v; }
inline float Same(float v) { return v; }

}  // namespace ge_test

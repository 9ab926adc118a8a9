// SquareCppCustom: a C++ custom op written against GE's public C++ API
// (graph/custom_op.h): eager execute and shape inference, registered with
// REG_AUTO_MAPPING_OP. The host finds it in the package's library, binds it to
// the SquareCppCustom prototype and hands it to engines beside Python ops.
#include <cstddef>
#include <cstdint>

#include "graph/custom_op.h"

namespace {

class SquareCppCustom : public ge::EagerExecuteOp, public ge::ShapeInferOp {
 public:
  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0U);
    if (x == nullptr || x->GetDataType() != ge::DT_FLOAT) return ge::GRAPH_PARAM_INVALID;
    gert::Tensor* y = ctx->MallocOutputTensor(0U, x->GetShape(), x->GetFormat(), x->GetDataType());
    if (y == nullptr) return ge::GRAPH_FAILED;
    const auto* in = static_cast<const float*>(x->GetAddr());
    auto* out = static_cast<float*>(y->GetAddr());
    const int64_t n = x->GetShapeSize();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] * in[i];
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
    return ctx->SetOutputDataType(0U, ctx->GetInputDataType(0U));
  }
};

}  // namespace

REG_AUTO_MAPPING_OP(SquareCppCustom);

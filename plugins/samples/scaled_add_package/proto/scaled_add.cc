// Infer functions of ScaledAddCustom (IMPL_OP): y has x1's shape and dtype.
// The Python implementation has no infer_meta of its own; the host runs these.
#include "scaled_add.h"

namespace {

ge::graphStatus InferShapeScaledAdd(gert::InferShapeContext* ctx) {
  const gert::Shape* x1 = ctx->GetInputShape(0U);
  const gert::Shape* x2 = ctx->GetInputShape(1U);
  gert::Shape* y = ctx->GetOutputShape(0U);
  if (x1 == nullptr || x2 == nullptr || y == nullptr || *x1 != *x2) {
    return ge::GRAPH_FAILED;  // x1 and x2 must have one shape (no broadcasting)
  }
  *y = *x1;
  return ge::GRAPH_SUCCESS;
}

ge::graphStatus InferDataTypeScaledAdd(gert::InferDataTypeContext* ctx) {
  return ctx->SetOutputDataType(0U, ctx->GetInputDataType(0U));
}

IMPL_OP(ScaledAddCustom).InferShape(InferShapeScaledAdd).InferDataType(InferDataTypeScaledAdd);

}  // namespace

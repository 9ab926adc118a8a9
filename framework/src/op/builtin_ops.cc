// ReluCpp: a C++ op registered exactly like a Python adapter, to show that
// engines cannot tell them apart. y = max(x, 0), same shape and dtype. It is
// written against GE's interfaces only (graph/custom_op.h), as a GE custom op
// would be; its capabilities come from the interfaces it derives from.
#include <cmath>
#include <cstring>
#include <string>

#include "ge/op/op_registry.h"

namespace ge {
namespace {

class ReluCpp final : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(gert::InferShapeContext* ctx) override {
    const gert::Shape* x = ctx->GetInputShape(0);
    gert::Shape* y = ctx->GetOutputShape(0);
    if (x == nullptr || y == nullptr) return Fail(ctx, "ReluCpp needs one input and one output");
    *y = *x;
    return GRAPH_SUCCESS;
  }

  graphStatus InferDataType(gert::InferDataTypeContext* ctx) override {
    const DataType dt = ctx->GetInputDataType(0);
    if (!Supported(dt)) return Fail(ctx, "ReluCpp does not support dtype " + DataTypeName(dt));
    return ctx->SetOutputDataType(0, dt);
  }

  graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    if (x == nullptr || !x->HasData()) return Fail(ctx, "ReluCpp needs one input with data");
    if (!Supported(x->GetDataType())) return Fail(ctx, "ReluCpp does not support dtype " + DataTypeName(x->GetDataType()));
    gert::Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetFormat(), x->GetDataType());
    if (y == nullptr) return GRAPH_FAILED;  // the context stored why
    const auto n = static_cast<std::size_t>(x->GetShapeSize());
    switch (x->GetDataType()) {
      case DT_FLOAT: Apply<float>(x, y, n); break;
      case DT_DOUBLE: Apply<double>(x, y, n); break;
      case DT_INT32: Apply<int32_t>(x, y, n); break;
      case DT_INT64: Apply<int64_t>(x, y, n); break;
      case DT_FLOAT16:
      case DT_BF16: {
        // Sign-magnitude 16-bit floats: clear negatives (sign bit set), keep NaN.
        const auto* src = x->GetData<uint16_t>();
        auto* dst = y->GetData<uint16_t>();
        const uint16_t exp_mask = x->GetDataType() == DT_FLOAT16 ? 0x7C00 : 0x7F80;
        const uint16_t man_mask = x->GetDataType() == DT_FLOAT16 ? 0x03FF : 0x007F;
        for (std::size_t i = 0; i < n; ++i) {
          const uint16_t v = src[i];
          const bool nan = (v & exp_mask) == exp_mask && (v & man_mask) != 0;
          dst[i] = ((v & 0x8000) != 0 && !nan) ? 0 : v;
        }
        break;
      }
      default: break;
    }
    return GRAPH_SUCCESS;
  }

 private:
  static bool Supported(DataType dt) {
    return dt == DT_FLOAT || dt == DT_DOUBLE || dt == DT_INT32 || dt == DT_INT64 || dt == DT_FLOAT16 || dt == DT_BF16;
  }
  // The details go to the context's error slot (our addition) so that the
  // engine's message says more than the code.
  static graphStatus Fail(gert::ExtendedKernelContext* ctx, std::string message) {
    ctx->SetError(Status::Error(std::move(message)));
    return GRAPH_PARAM_INVALID;
  }
  template <typename T>
  static void Apply(const gert::Tensor* x, gert::Tensor* y, std::size_t n) {
    const T* src = x->GetData<T>();
    T* dst = y->GetData<T>();
    for (std::size_t i = 0; i < n; ++i) dst[i] = src[i] > T(0) ? src[i] : (src[i] != src[i] ? src[i] : T(0));
  }
};

}  // namespace

Status RegisterBuiltinOps(OpRegistry& registry) {
  auto schema = std::make_shared<OpSchema>();
  schema->op_type = "ReluCpp";
  schema->inputs = {{"x", IrInputKind::kRequired}};
  schema->outputs = {{"y", IrOutputKind::kRequired}};
  OpRegistration reg;
  reg.op_type = schema->op_type;
  reg.schema = schema;
  reg.source = "builtin";
  reg.capabilities = CustomOpCapability::kEagerExecute | CustomOpCapability::kInferMeta;
  reg.creator = []() { return std::make_shared<ReluCpp>(); };
  return registry.Register(std::move(reg));
}

}  // namespace ge

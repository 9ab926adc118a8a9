// ReluCpp: a C++ op registered exactly like a Python adapter, to show that
// engines cannot tell them apart. y = max(x, 0), same shape and dtype.
#include <cmath>
#include <cstring>

#include "ge/op/op_registry.h"

namespace ge {
namespace {

class ReluCpp final : public EagerExecuteOp, public InferMetaOp {
 public:
  explicit ReluCpp(std::shared_ptr<const OpSchema> schema) : schema_(std::move(schema)) {}

  uint32_t GetCapabilities() const noexcept override {
    return CustomOpCapability::kEagerExecute | CustomOpCapability::kInferMeta;
  }
  const OpSchema& GetSchema() const noexcept override { return *schema_; }

  Status InferMeta(InferMetaContext* ctx) override {
    const TensorDesc* x = ctx->GetInputDesc(0);
    if (x == nullptr) return Status::Error("ReluCpp needs one input");
    if (!Supported(x->data_type)) return Status::Error("ReluCpp does not support dtype " + DataTypeName(x->data_type));
    ctx->SetOutputs({*x}, InstanceLayout({1}));
    return Status::Ok();
  }

  Status Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (x == nullptr || !x->HasData()) return Status::Error("ReluCpp needs one input with data");
    if (!Supported(x->GetDataType())) return Status::Error("ReluCpp does not support dtype " + DataTypeName(x->GetDataType()));
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    const auto n = static_cast<std::size_t>(x->GetShapeSize());
    switch (x->GetDataType()) {
      case DT_FLOAT: Apply<float>(x, y, n); break;
      case DT_DOUBLE: Apply<double>(x, y, n); break;
      case DT_INT32: Apply<int32_t>(x, y, n); break;
      case DT_INT64: Apply<int64_t>(x, y, n); break;
      case DT_FLOAT16:
      case DT_BF16: {
        // Sign-magnitude 16-bit floats: clear negatives (sign bit set), keep NaN.
        const auto* src = x->Data<uint16_t>();
        auto* dst = y->Data<uint16_t>();
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
    return Status::Ok();
  }

 private:
  static bool Supported(DataType dt) {
    return dt == DT_FLOAT || dt == DT_DOUBLE || dt == DT_INT32 || dt == DT_INT64 || dt == DT_FLOAT16 || dt == DT_BF16;
  }
  template <typename T>
  static void Apply(const Tensor* x, Tensor* y, std::size_t n) {
    const T* src = x->Data<T>();
    T* dst = y->Data<T>();
    for (std::size_t i = 0; i < n; ++i) dst[i] = src[i] > T(0) ? src[i] : (src[i] != src[i] ? src[i] : T(0));
  }

  std::shared_ptr<const OpSchema> schema_;
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
  reg.creator = [schema]() { return std::make_shared<ReluCpp>(schema); };
  return registry.Register(std::move(reg));
}

}  // namespace ge

// test_ops.h: helpers of the test op libraries (test/oplib/README.md): a
// prototype builder and an elementwise float32 C++ custom op.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "ge/op/custom_op.h"
#include "ge/op/library_registrations.h"

namespace ge_test {

// The prototype `op_type(x) -> y` with no attribute.
inline std::shared_ptr<const ge::OpSchema> UnarySchema(const std::string& op_type) {
  auto s = std::make_shared<ge::OpSchema>();
  s->op_type = op_type;
  s->inputs = {{"x", ge::IrInputKind::kRequired}};
  s->outputs = {{"y", ge::IrOutputKind::kRequired}};
  return s;
}

// y = f(x), float32, same shape; execute and infer_meta.
class UnaryFloatOp final : public ge::EagerExecuteOp, public ge::InferMetaOp {
 public:
  UnaryFloatOp(std::shared_ptr<const ge::OpSchema> schema, std::function<float(float)> f)
      : schema_(std::move(schema)), f_(std::move(f)) {}
  uint32_t GetCapabilities() const noexcept override {
    return ge::CustomOpCapability::kEagerExecute | ge::CustomOpCapability::kInferMeta;
  }
  const ge::OpSchema& GetSchema() const noexcept override { return *schema_; }
  ge::Status InferMeta(ge::InferMetaContext* ctx) override {
    const ge::TensorDesc* x = ctx->GetInputDesc(0);
    if (x == nullptr || x->data_type != ge::DT_FLOAT) return ge::Status::Error(schema_->op_type + " takes float32");
    ctx->SetOutputs({*x}, ge::InstanceLayout({1}));
    return ge::Status::Ok();
  }
  ge::Status Execute(ge::EagerOpExecutionContext* ctx) override {
    const ge::Tensor* x = ctx->GetInputTensor(0);
    if (x == nullptr || x->GetDataType() != ge::DT_FLOAT) return ge::Status::Error(schema_->op_type + " takes float32");
    ge::Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    const auto n = static_cast<std::size_t>(x->GetShapeSize());
    for (std::size_t i = 0; i < n; ++i) y->Data<float>()[i] = f_(x->Data<float>()[i]);
    return ge::Status::Ok();
  }

 private:
  std::shared_ptr<const ge::OpSchema> schema_;
  std::function<float(float)> f_;
};

}  // namespace ge_test

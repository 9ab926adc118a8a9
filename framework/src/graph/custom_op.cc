// ge::CustomOpCreatorRegister (graph/custom_op.h) and ge::OpCapabilities (ge/op/custom_op.h).
#include "ge/op/custom_op.h"

#include <utility>

#include "ge/op/library_registrations.h"
#include "ge/registration_owner.h"

namespace ge {

namespace {

void RegisterCustomOp(const AscendString& operator_type, const BaseOpCreator& op_creator, const void* origin) {
  RegisteredCustomOp op;
  op.op_type = operator_type.ToStdString();
  if (op_creator) {
    op.creator = op_creator;
  } else {
    op.creator = []() { return std::unique_ptr<BaseCustomOp>(); };
  }
  AddRegisteredCustomOpFrom(std::move(op), origin);
}

}  // namespace

// The owner of the registration (ge/registration_owner.h): the static
// initializer that called, or REG_AUTO_MAPPING_OP's create function.
CustomOpCreatorRegister::CustomOpCreatorRegister(const AscendString& operator_type, const BaseOpCreator& op_creator) {
  RegisterCustomOp(operator_type, op_creator, __builtin_return_address(0));
}

CustomOpCreatorRegister::CustomOpCreatorRegister(const AscendString& operator_type, const CustomOpCreateFunc op_creator) {
  RegisterCustomOp(operator_type,
                   op_creator == nullptr ? BaseOpCreator()
                                         : BaseOpCreator([op_creator]() { return std::unique_ptr<BaseCustomOp>(op_creator()); }),
                   op_creator != nullptr ? reinterpret_cast<const void*>(op_creator) : __builtin_return_address(0));
}

uint32_t OpCapabilities(const BaseCustomOp& op) noexcept {
  const BaseCustomOp* base = &op;
  if (const auto* reporting = dynamic_cast<const CapabilityReportingOp*>(base)) return reporting->GetCapabilities();
  uint32_t mask = 0;
  if (dynamic_cast<const EagerExecuteOp*>(base) != nullptr) mask = mask | CustomOpCapability::kEagerExecute;
  if (dynamic_cast<const CompilableOp*>(base) != nullptr) mask = mask | CustomOpCapability::kCompilable;
  if (dynamic_cast<const AnnotatedArgsOp*>(base) != nullptr) mask = mask | CustomOpCapability::kAnnotatedArgs;
  if (dynamic_cast<const InferMetaOp*>(base) != nullptr || dynamic_cast<const ShapeInferOp*>(base) != nullptr) {
    mask = mask | CustomOpCapability::kInferMeta;
  }
  return mask;
}

}  // namespace ge

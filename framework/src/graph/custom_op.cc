// ge::CustomOpCreatorRegister (graph/custom_op.h) and ge::OpCapabilities (ge/op/custom_op.h).
#include "ge/op/custom_op.h"

#include <utility>

#include "ge/op/library_registrations.h"

namespace ge {

CustomOpCreatorRegister::CustomOpCreatorRegister(const AscendString& operator_type, const BaseOpCreator& op_creator) {
  RegisteredCustomOp op;
  op.op_type = operator_type.ToStdString();
  if (op_creator) {
    op.creator = op_creator;
  } else {
    op.creator = []() { return std::unique_ptr<BaseCustomOp>(); };
  }
  AddRegisteredCustomOp(std::move(op));
}

CustomOpCreatorRegister::CustomOpCreatorRegister(const AscendString& operator_type, const CustomOpCreateFunc op_creator)
    : CustomOpCreatorRegister(operator_type, op_creator == nullptr
                                                 ? BaseOpCreator()
                                                 : BaseOpCreator([op_creator]() {
                                                     return std::unique_ptr<BaseCustomOp>(op_creator());
                                                   })) {}

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

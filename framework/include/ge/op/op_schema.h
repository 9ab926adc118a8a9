// ge/op/op_schema.h: the canonical IR of an operator (OpSchema).
//
// The IR is what every implementation is bound to: inputs (required, optional,
// dynamic), outputs (required, dynamic) and typed attributes with defaults, in
// declaration order. Immutable once built; share it as shared_ptr<const OpSchema>.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ge/op/attrs.h"

namespace ge {

enum class IrInputKind { kRequired, kOptional, kDynamic };
enum class IrOutputKind { kRequired, kDynamic };

struct IrInput {
  std::string name;
  IrInputKind kind = IrInputKind::kRequired;
};

struct IrOutput {
  std::string name;
  IrOutputKind kind = IrOutputKind::kRequired;
};

struct IrAttr {
  std::string name;
  AttrType type = AttrType::VT_INT;
  std::optional<AttrValue> default_value;  // nullopt: the attribute is required
};

struct OpSchema {
  std::string op_type;
  std::vector<IrInput> inputs;
  std::vector<IrOutput> outputs;
  std::vector<IrAttr> attrs;
  // Outputs that alias an input: (input IR index, output IR index).
  std::vector<std::pair<std::size_t, std::size_t>> aliases;

  // Index of the attribute / input named `name`, or nullopt.
  std::optional<std::size_t> FindAttr(const std::string& name) const;
  std::optional<std::size_t> FindInput(const std::string& name) const;
  // Per IR input: does an output alias it (the op may change it in place)?
  std::vector<bool> MutatedInputs() const {
    std::vector<bool> mutated(inputs.size(), false);
    for (const auto& alias : aliases) {
      if (alias.first < mutated.size()) mutated[alias.first] = true;
    }
    return mutated;
  }
  // "AddCustom(x, y?, xs*) -> (z) {alpha: VT_INT = 1}" for messages and logs.
  std::string ToString() const;
};

std::string_view IrInputKindName(IrInputKind k) noexcept;    // "required"/"optional"/"dynamic"
std::string_view IrOutputKindName(IrOutputKind k) noexcept;  // "required"/"dynamic"

}  // namespace ge

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

// Element-type constraint of one IR input or output (from a C++ prototype's
// INPUT(x, "T") + DATATYPE(T, TensorType(...)), or INPUT(x, TensorType(...))).
// The engine checks it when it compiles a graph (share/docs/op-prototypes.md).
struct IrDataTypes {
  // Allowed element types, ascending by GE number, no repeats; empty: any type.
  std::vector<DataType> allowed{};
  // The DATATYPE symbol the set comes from ("T"), for messages; empty when the
  // set was declared directly on the input/output.
  std::string symbol{};
  // GE's rule for a TensorType symbol: every tensor of a node declared with
  // this symbol (all inputs and outputs, all their instances) has one dtype.
  // False for a ListTensorType symbol and for a direct set.
  bool uniform = false;

  // True when `dt` may be used here (always when `allowed` is empty).
  bool Allows(DataType dt) const noexcept;
  bool operator==(const IrDataTypes& o) const noexcept {
    return allowed == o.allowed && symbol == o.symbol && uniform == o.uniform;
  }
};

struct IrInput {
  std::string name;
  IrInputKind kind = IrInputKind::kRequired;
  IrDataTypes dtypes{};
};

struct IrOutput {
  std::string name;
  IrOutputKind kind = IrOutputKind::kRequired;
  IrDataTypes dtypes{};
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
  // "AddCustom(x, y?, xs*) -> (z) {alpha: VT_INT = 3}" (defaults by AttrValueText) for messages
  // and logs; with dtype constraints "Add(x1: T, x2: T, k: int32|int64) -> (y: T)
  // [T: float32|float16]" (a symbol's set once, in the trailing brackets).
  std::string ToString() const;
};

std::string_view IrInputKindName(IrInputKind k) noexcept;    // "required"/"optional"/"dynamic"
std::string_view IrOutputKindName(IrOutputKind k) noexcept;  // "required"/"dynamic"

// "float32|float16|DT_QINT8" (numpy names where this project has one, GE's
// enumerator name otherwise); "any" for an empty set.
std::string DataTypeSetString(const std::vector<DataType>& types);

}  // namespace ge

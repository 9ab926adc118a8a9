// register/op_impl_registry.h: GE's IMPL_OP, registering an op's infer-shape and infer-datatype functions.
//
// A GE prototype source file compiles unchanged against this file:
//
//   ge::graphStatus InferShape(gert::InferShapeContext* ctx) { ... }
//   ge::graphStatus InferDataType(gert::InferDataTypeContext* ctx) { ... }
//   IMPL_OP(AddCustom).InferShape(InferShape).InferDataType(InferDataType);
//
// The class name, the chain members and their signatures are GE's
// (gert::OpImplRegisterV2); the behaviour is ours:
// - InferShape / InferDataType keep the function pointers (plain functions,
//   no ownership; they must stay valid while the library is loaded).
// - The object IMPL_OP defines is copied from the chain's result; that copy
//   (made during the library's static initialization) calls
//   ge::AddRegisteredInferFuncs (ge/op/library_registrations.h) once, when at
//   least one of the two functions was given. The chain's temporaries register
//   nothing. Registration never throws into the caller (std::bad_alloc while
//   registering is swallowed: the op then has no infer functions and the host
//   reports that, like any op without them).
// - The other members GE offers that a prototype file commonly chains
//   (InferShapeRange, Tiling, TilingParse, PrivateAttr, InputsDataDependency,
//   HostInputs, TilingInputsDataDependency, OutputShapeDependOnCompute,
//   NullableOutputs, InferFormat) are accepted and ignored: this host has no
//   tiling, no shape ranges, no format inference and no private attributes.
// Like GE's header, this one brings in the definitions of
// gert::InferShapeContext and gert::InferDataTypeContext
// (exe_graph/runtime/infer_shape_context.h, infer_datatype_context.h) so that
// an infer function can call into its context; where those headers are not
// installed the two classes are only forward declared
// (ge/op/library_registrations.h).
// One object per IMPL_OP; not meant to be shared between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <utility>
#include <vector>

#include "ge/op/library_registrations.h"
#include "graph/ascend_string.h"
#include "graph/error_codes.h"
#include "graph/types.h"
#if __has_include("exe_graph/runtime/infer_shape_context.h")
#include "exe_graph/runtime/infer_shape_context.h"
#endif
#if __has_include("exe_graph/runtime/infer_datatype_context.h")
#include "exe_graph/runtime/infer_datatype_context.h"
#endif

namespace gert {

class InferShapeRangeContext;
class TilingContext;
class TilingParseContext;
class KernelContext;
class InferFormatContext;

// GE's placement of tiling work (accepted by TilingInputsDataDependency).
enum TilingPlacement {
  TILING_ON_HOST = 0,
  TILING_ON_AICPU = 1,
};

class OpImplRegisterV2 {
 public:
  using InferShapeKernelFunc = ge::InferShapeKernelFunc;
  using InferDataTypeKernelFunc = ge::InferDataTypeKernelFunc;
  using InferShapeRangeKernelFunc = ge::graphStatus (*)(InferShapeRangeContext*);
  using TilingKernelFunc = ge::graphStatus (*)(TilingContext*);
  using KernelFunc = ge::graphStatus (*)(KernelContext*);
  using TilingParseFunc = ge::graphStatus (*)(TilingParseContext*);
  using InferFormatFunc = ge::graphStatus (*)(InferFormatContext*);
  using OpType = ge::AscendString;

  // `op_type` (the op's name, as in its REG_OP) is copied; null means "".
  explicit OpImplRegisterV2(const ge::char_t* op_type) { funcs_.op_type = op_type != nullptr ? op_type : ""; }
  // The copy (and move) that IMPL_OP stores registers what the chain gathered.
  OpImplRegisterV2(const OpImplRegisterV2& other) : funcs_(other.funcs_) { Register(); }
  OpImplRegisterV2(OpImplRegisterV2&& other) noexcept : funcs_(std::move(other.funcs_)) { Register(); }
  OpImplRegisterV2& operator=(const OpImplRegisterV2&) = delete;
  OpImplRegisterV2& operator=(OpImplRegisterV2&&) = delete;
  ~OpImplRegisterV2() = default;

  OpImplRegisterV2& InferShape(InferShapeKernelFunc infer_shape_func) {
    funcs_.infer_shape = infer_shape_func;
    return *this;
  }
  OpImplRegisterV2& InferDataType(InferDataTypeKernelFunc infer_datatype_func) {
    funcs_.infer_datatype = infer_datatype_func;
    return *this;
  }

  // Accepted and ignored (see the banner).
  OpImplRegisterV2& InferShapeRange(InferShapeRangeKernelFunc) { return *this; }
  OpImplRegisterV2& Tiling(TilingKernelFunc, std::size_t /*max_tiling_data_size*/ = 2048) { return *this; }
  template <typename T>
  OpImplRegisterV2& TilingParse(KernelFunc) {
    return *this;
  }
  template <typename T>
  OpImplRegisterV2& TilingParse(TilingParseFunc) {
    return *this;
  }
  OpImplRegisterV2& PrivateAttr(const ge::char_t*) { return *this; }
  OpImplRegisterV2& PrivateAttr(const ge::char_t*, int64_t) { return *this; }
  OpImplRegisterV2& PrivateAttr(const ge::char_t*, const std::vector<int64_t>&) { return *this; }
  OpImplRegisterV2& PrivateAttr(const ge::char_t*, const ge::char_t*) { return *this; }
  OpImplRegisterV2& PrivateAttr(const ge::char_t*, ge::float32_t) { return *this; }
  OpImplRegisterV2& PrivateAttr(const ge::char_t*, bool) { return *this; }
  OpImplRegisterV2& PrivateAttr(const ge::char_t*, const std::vector<ge::float32_t>&) { return *this; }
  OpImplRegisterV2& InputsDataDependency(std::initializer_list<int32_t>) { return *this; }
  OpImplRegisterV2& HostInputs(std::initializer_list<int32_t>) { return *this; }
  OpImplRegisterV2& TilingInputsDataDependency(std::initializer_list<int32_t>) { return *this; }
  OpImplRegisterV2& TilingInputsDataDependency(std::initializer_list<int32_t>, std::initializer_list<TilingPlacement>) {
    return *this;
  }
  OpImplRegisterV2& OutputShapeDependOnCompute(std::initializer_list<int32_t>) { return *this; }
  OpImplRegisterV2& NullableOutputs(std::initializer_list<int32_t>) { return *this; }
  OpImplRegisterV2& InferFormat(InferFormatFunc) { return *this; }

 private:
  void Register() noexcept {
    if (funcs_.infer_shape == nullptr && funcs_.infer_datatype == nullptr) return;
    try {
      ge::AddRegisteredInferFuncs(funcs_);
    } catch (const std::bad_alloc&) {
      // See the banner: the op is left without infer functions.
    }
  }

  ge::RegisteredInferFuncs funcs_;
};

}  // namespace gert

#define GE_IMPL_OP_CONCAT_(a, b) a##b
#define GE_IMPL_OP_NAME_(a, b) GE_IMPL_OP_CONCAT_(a, b)
// IMPL_OP(Name).InferShape(f).InferDataType(g); at namespace scope (GE's macro).
#define IMPL_OP(op_type)                                                                         \
  [[maybe_unused]] static gert::OpImplRegisterV2 GE_IMPL_OP_NAME_(op_impl_register_##op_type, \
                                                                  __COUNTER__) = gert::OpImplRegisterV2(#op_type)
#define IMPL_OP_DEFAULT() IMPL_OP(DefaultImpl)
#define IMPL_OP_INFERSHAPE(op_type) \
  [[maybe_unused]] gert::OpImplRegisterV2 op_impl_register_infershape_##op_type = gert::OpImplRegisterV2(#op_type)

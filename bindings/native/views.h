// views.h: the native Python classes of ge.runtime / ge.custom_op and the
// factories the host uses to hand borrowed objects to Python.
//
// Defined in: views_tensor.cc (Shape, StorageShape, ExpandDimsType,
// StorageFormat, TensorDesc, Tensor, and the argument readers),
// views_context.cc (EagerOpExecutionContext), tensor_buffer.cc (the zero-copy
// buffer behind Tensor.data), native_class.cc (RefuseInit, FreezeClass) and
// log_sink.cc (captured plugin stdout/stderr).
//
// Every Python-visible object wraps a View: a pointer to C++ data, an optional
// shared owner that keeps that data (and any tensor buffer) alive, and the
// Lease of the callback that lent it. Owned values (built by a plugin) use
// Lease::Owned(). All functions here need the GIL and the right interpreter.
#pragma once

#include <boost/python.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ge/op/contexts.h"
#include "ge/runtime/tensor.h"
#include "errors.h"
#include "lease.h"

namespace ge::py {

namespace bp = boost::python;

template <typename T>
struct View {
  T* ptr = nullptr;
  std::shared_ptr<void> keep;  // owner of *ptr and/or of the tensor buffer; may be null
  LeasePtr lease;
  bool read_only = false;  // a read-only view on writable data (tensor attributes)

  T& Get() const {
    CheckAlive(*lease);
    return *ptr;
  }
  T& Mut() const {
    CheckWritable(*lease);
    if (read_only) RaiseRuntimeError("borrowed object is read-only");
    return *ptr;
  }
  bool alive() const noexcept { return lease && lease->alive(); }
};

using ShapeView = View<ge::Shape>;
using StorageShapeView = View<ge::StorageShape>;
using StorageFormatView = View<ge::StorageFormat>;
using TensorDescView = View<ge::TensorDesc>;
using TensorView = View<ge::Tensor>;
using ExecCtxView = View<ge::EagerOpExecutionContext>;
using ExpandDimsView = View<ge::ExpandDimsType>;

// Module init, in this order, once, in the main interpreter: each registers its
// classes (functions) in the current scope.
void RegisterTensorBuffer();  // readies the buffer type behind Tensor.data
void RegisterTensorViews();   // Shape, StorageShape, ExpandDimsType, StorageFormat, TensorDesc, Tensor
void RegisterContextViews();  // EagerOpExecutionContext
void RegisterLogLine();       // _log_line (the native end of the stdout/stderr capture)

// The __init__ of native classes only the host creates: raises TypeError.
bp::object RefuseInit(bp::tuple args, bp::dict kwargs);

// Factories (new references wrapped in bp::object).
bp::object MakeTensor(ge::Tensor* t, std::shared_ptr<void> keep, const LeasePtr& lease, bool read_only = false);
bp::object MakeExecCtx(ge::EagerOpExecutionContext* ctx, const LeasePtr& lease);
// An owned TensorDesc (copy of `desc`).
bp::object MakeOwnedTensorDesc(const ge::TensorDesc& desc);
// The ge::TensorDesc behind a Python TensorDesc; raises TypeError naming
// `what` when `obj` is not one.
ge::TensorDesc ExtractTensorDesc(bp::object obj, const std::string& what);
// Python enum member for a value (ge.graph.DataType / Format, ge.runtime.TensorPlacement).
bp::object DataTypeEnum(int value);
bp::object FormatEnum(int value);
// Reads a DataType argument: a DataType member (TypeError otherwise; ValueError
// at or past DT_MAX). `strict_enum`=false also accepts a plain int.
ge::DataType DataTypeArg(bp::object obj, const std::string& what, bool strict_enum = true);
// list[int] / tuple[int] / StorageShape / Shape -> Shape (ValueError past max rank).
ge::Shape ShapeFromPython(bp::object obj, const std::string& what);
// An int argument (operator.index rules, see IndexValue): TypeError naming
// `what` otherwise, ValueError past int64.
int64_t IntArg(bp::object obj, const std::string& what);
// The same, non-negative (TypeError for a negative value).
std::size_t IndexArg(bp::object obj, const std::string& what);

// A memoryview over `buf` (C-contiguous `shape` of `itemsize`-byte `fmt`
// elements) that keeps `keep` alive; registered with `lease` (released when it
// expires) unless the lease is Lease::Owned(). RuntimeError when `len` does not
// match the shape.
bp::object MakeBufferView(void* buf, std::size_t len, bool readonly, char fmt, Py_ssize_t itemsize,
                          const std::vector<Py_ssize_t>& shape, std::shared_ptr<void> keep, const LeasePtr& lease);

// Destination of captured plugin stdout/stderr (set by the host; null in a plain
// python3, where the writer falls back to the real stream).
using LogSink = std::function<void(const std::string& plugin, bool is_stderr, const std::string& line)>;
void SetLogSink(LogSink sink);

// Makes a native class safe to share between interpreters: its properties
// become read-only descriptors and the type is marked immutable.
void FreezeClass(bp::object cls);

}  // namespace ge::py

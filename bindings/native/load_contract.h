// load_contract.h: what ge._entry hands the host when a plugin loads, as
// native classes (_ge_native.CollectedImpl, CollectedPlugin, AdapterObjects).
//
// The one versioned struct at the Python-to-C++ boundary
// (share/docs/host-design.md, "The load contract"): ge._entry builds these
// objects, each field typed (a wrong type is a TypeError where the object is
// made, in Python, naming the field), and the host reads them by field, never
// by position or string key. kLoadContractVersion is the version both sides
// declare (ge._entry.LOAD_CONTRACT_VERSION, _ge_native.LOAD_CONTRACT_VERSION);
// the host refuses another one before its first call.
//
// Lifetime: the bp::object fields are owned references of the interpreter
// that made the object; read them with that interpreter's lock held.
// Thread-safety: none beyond the interpreter lock.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <boost/python.hpp>

namespace ge::py {

// 2: CollectedImpl and AdapterObjects replace the dict per implementation and
// the positional tuple of adapter objects;
// CollectedPlugin the dict of collect.
inline constexpr int kLoadContractVersion = 2;

// One implementation a plugin registered, validated and bound (ge._entry.collect).
struct CollectedImpl {
  std::string op_type;
  std::string descriptor_key;
  boost::python::object cls;         // the implementation class
  boost::python::object ir;          // its canonical IR as a dict; None: a legacy execute without a prototype
  boost::python::object proto;       // the OpProto; None when bound to an op library's C++ prototype
  bool library = false;              // bound to an op library's C++ prototype
  std::vector<std::string> interfaces;  // among "eager_execute", "compilable", "annotated_args"
  boost::python::object revalidate;  // callable checking compile again before each call
  std::string rules;                 // "9.2.0-beta.1", "9.2.0-beta.2" or "newest"
  std::string call;                  // "schema", "schema_any_result" or "context" (ParseExecuteCall)
  std::vector<std::string> warnings; // what the release rules say while it loads
  std::string newest_refusal;        // what the newest GE's rules refuse, "" when nothing
};

// What a plugin's collect hands over: its implementations, sorted by
// op_type, and the op_types of the prototypes it registered itself.
struct CollectedPlugin {
  std::vector<std::shared_ptr<CollectedImpl>> impls;
  std::vector<std::string> protos;
};

// The objects every adapter of an interpreter calls (ge._entry.adapter_objects).
struct AdapterObjects {
  boost::python::object call_infer_meta;  // ge.custom_op._proto.call_infer_meta
  boost::python::object execute_ctx;      // the execute context variable
  boost::python::object compile_vars;     // (compile context variable, platform variable)
  boost::python::object launch_ctx;       // the launch context variable
};

// Adds CollectedImpl, CollectedPlugin, AdapterObjects and LOAD_CONTRACT_VERSION to the current module scope.
void RegisterLoadContract();

}  // namespace ge::py

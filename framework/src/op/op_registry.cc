// OpRegistry: a shared_mutex-guarded map; creators run outside the lock.
#include "ge/op/op_registry.h"

#include <algorithm>
#include <iterator>
#include <mutex>

#include "ge/plugin/resolve.h"

namespace ge {

std::vector<std::string> CapabilityNames(uint32_t mask) {
  std::vector<std::string> out;
  for (const auto& [c, name] : {std::pair{CustomOpCapability::kEagerExecute, "eager_execute"},
                                std::pair{CustomOpCapability::kCompilable, "compilable"},
                                std::pair{CustomOpCapability::kAnnotatedArgs, "annotated_args"},
                                std::pair{CustomOpCapability::kInferMeta, "infer_meta"}}) {
    if (HasCapability(mask, c)) out.emplace_back(name);
  }
  return out;
}

std::string CapabilityString(uint32_t mask) {
  std::string s;
  for (const auto& name : CapabilityNames(mask)) s += (s.empty() ? "" : ",") + name;
  return s;
}

Status OpRegistry::Register(OpRegistration reg) {
  if (reg.op_type.empty()) return Status::Error("op registration has an empty op_type");
  if (!reg.schema) return Status::Error("op_type '" + reg.op_type + "' is registered without a schema");
  if (!reg.creator) return Status::Error("op_type '" + reg.op_type + "' is registered without a creator");
  if (reg.schema->op_type != reg.op_type) {
    return Status::Error("op_type '" + reg.op_type + "' is registered with the schema of '" + reg.schema->op_type + "'");
  }
  if (reg.infer_shape != nullptr) reg.capabilities = reg.capabilities | CustomOpCapability::kInferMeta;
  std::unique_lock lock(mu_);
  auto it = ops_.find(reg.op_type);
  if (it != ops_.end()) {
    return Status::Error(plugin::ConflictMessage(reg.op_type, reg.source, it->second.source, plugin::ConflictRule::kPathOrder));
  }
  std::string key = reg.op_type;
  ops_.emplace(std::move(key), std::move(reg));
  return Status::Ok();
}

std::size_t OpRegistry::UnregisterSource(const std::string& source) {
  std::unique_lock lock(mu_);
  std::size_t n = 0;
  for (auto it = ops_.begin(); it != ops_.end();) {
    if (it->second.source == source) {
      it = ops_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  for (auto it = unimplemented_.begin(); it != unimplemented_.end();) {
    it = it->second.source == source ? unimplemented_.erase(it) : std::next(it);
  }
  return n;
}

bool OpRegistry::Unregister(const std::string& op_type) {
  std::unique_lock lock(mu_);
  return ops_.erase(op_type) > 0;
}

std::optional<OpRegistration> OpRegistry::Find(const std::string& op_type) const {
  std::shared_lock lock(mu_);
  auto it = ops_.find(op_type);
  if (it == ops_.end()) return std::nullopt;
  return it->second;
}

std::shared_ptr<BaseCustomOp> OpRegistry::Create(const std::string& op_type) const { return Create(op_type, nullptr); }

std::shared_ptr<BaseCustomOp> OpRegistry::Create(const std::string& op_type, std::string* error) const {
  OpCreator creator;
  {
    std::shared_lock lock(mu_);
    auto it = ops_.find(op_type);
    if (it == ops_.end()) {
      if (error) *error = "op_type '" + op_type + "' is not registered";
      return nullptr;
    }
    creator = it->second.creator;
  }
  try {
    std::shared_ptr<BaseCustomOp> op = creator();
    if (!op && error) *error = "the creator returned no op";
    return op;
  } catch (const std::exception& e) {
    if (error) *error = std::string("C++ exception: ") + e.what();
  } catch (...) {
    if (error) *error = "C++ exception of an unknown type";
  }
  return nullptr;
}

std::vector<std::string> OpRegistry::ListOpTypes() const {
  std::vector<std::string> names;
  {
    std::shared_lock lock(mu_);
    names.reserve(ops_.size());
    for (const auto& kv : ops_) names.push_back(kv.first);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void OpRegistry::NoteUnimplemented(const std::string& op_type, std::string why, const std::string& source,
                                   bool overrides) {
  std::unique_lock lock(mu_);
  auto it = unimplemented_.find(op_type);
  if (it == unimplemented_.end()) {
    unimplemented_.emplace(op_type, Note{std::move(why), source, overrides});
  } else if (overrides && !it->second.overrides) {
    it->second = Note{std::move(why), source, overrides};
  }
}

std::string OpRegistry::UnimplementedNote(const std::string& op_type) const {
  std::shared_lock lock(mu_);
  auto it = unimplemented_.find(op_type);
  return it == unimplemented_.end() ? std::string() : it->second.why;
}

std::size_t OpRegistry::Size() const {
  std::shared_lock lock(mu_);
  return ops_.size();
}

}  // namespace ge

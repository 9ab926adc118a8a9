// lease.h: the lifetime token behind every borrowed native object.
//
// A callback scope (one execute, one infer_meta, ...) creates one Lease and
// hands Python views that share it. When the scope ends the host calls
// Expire(): from then on every view raises RuntimeError("Borrowed native object
// has expired") instead of touching C++ memory that may be gone. Owned values
// built in Python (a TensorDesc, StorageShape or StorageFormat made by a
// plugin) have an owner lease: it expires when that Python object is freed,
// so a view taken from it (desc.shape) never outlives its owner (GE's rule).
// Values the host hands out as owned copies use Owned(), which never expires.
//
// Threading: a Lease is only touched with the interpreter lock held, so plain
// fields suffice. Memoryviews registered here are released on Expire() inside
// the interpreter that created them (the caller's thread state must be current).
#pragma once

#include <Python.h>

#include <memory>
#include <vector>

namespace ge::py {

class Lease {
 public:
  explicit Lease(bool read_only = false) : read_only_(read_only) {}
  // An owner lease: `owner` names the owning class in the expiry message.
  static std::shared_ptr<Lease> ForOwner(const char* owner);
  ~Lease();
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  bool alive() const noexcept { return alive_; }
  bool read_only() const noexcept { return read_only_; }
  // The owning class of an owner lease, or nullptr for a callback's lease.
  const char* owner() const noexcept { return owner_; }
  // Takes a new reference to `memoryview`, released (memoryview.release()) and
  // dropped at Expire(). Precondition: the GIL is held.
  void AdoptMemoryView(PyObject* memoryview);
  // Ends the scope. Precondition: the owning interpreter's thread state is current.
  void Expire() noexcept;

  // The shared never-expiring, writable lease of owned values.
  static const std::shared_ptr<Lease>& Owned();
  // A shared lease that is always expired (what a view kept for re-use holds
  // between two callbacks; bindings/native/dispatch.h, ExecuteFrame).
  static const std::shared_ptr<Lease>& Expired();
  // Makes `lease`, an expired callback lease, serve the next callback (alive
  // again, no memoryviews) when nothing else shares it (use_count() == 1): no
  // object that saw it expire can see it alive again. Returns false and
  // changes nothing otherwise (or when it is alive or an owner lease).
  static bool Renew(const std::shared_ptr<Lease>& lease) noexcept;

 private:
  bool alive_ = true;
  bool read_only_;
  const char* owner_ = nullptr;
  std::vector<PyObject*> views_;
};

using LeasePtr = std::shared_ptr<Lease>;

// Raises RuntimeError("Borrowed native object has expired") when !lease->alive()
// (for an owner lease: "... has expired: its owning <Class> handle has expired").
void CheckAlive(const Lease& lease);
// Raises RuntimeError("borrowed object is read-only") when lease is read-only
// (after the alive check).
void CheckWritable(const Lease& lease);

// RAII: expires a lease when the scope ends, even on error paths.
class LeaseScope {
 public:
  explicit LeaseScope(LeasePtr lease) : lease_(std::move(lease)) {}
  ~LeaseScope() { lease_->Expire(); }
  LeaseScope(const LeaseScope&) = delete;
  LeaseScope& operator=(const LeaseScope&) = delete;
  const LeasePtr& get() const noexcept { return lease_; }

 private:
  LeasePtr lease_;
};

}  // namespace ge::py

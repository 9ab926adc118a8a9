// ge/hash.h: FNV-1a 64, the one non-cryptographic hash of the project.
//
// Used for the plugin stamps' content and inode hashes (ge/plugin/discovery.h),
// the registry's listing index checksum and the name of a listing's own cache
// (share/docs/registry.md). FNV-1a as its authors specify it (offset basis
// 14695981039346656037, prime 1099511628211; the IETF draft
// draft-eastlake-fnv): a stamp that changes when the bytes change, not a
// defence against someone choosing colliding inputs. Header-only value type;
// not thread-safe per object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace ge {

class Fnv1a64 {
 public:
  static constexpr uint64_t kOffsetBasis = 14695981039346656037ULL;
  static constexpr uint64_t kPrime = 1099511628211ULL;

  // Adds `n` bytes at `data` (borrowed for the call), in order.
  Fnv1a64& Add(const void* data, std::size_t n) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * kPrime;
    return *this;
  }
  Fnv1a64& Add(std::string_view bytes) noexcept { return Add(bytes.data(), bytes.size()); }

  uint64_t Value() const noexcept { return h_; }
  // The value as 16 lower-case hex digits.
  std::string Hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  uint64_t h_ = kOffsetBasis;
};

}  // namespace ge

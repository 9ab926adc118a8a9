// call_page.cc: futex doorbells and the tensor records of the call page.
#include "call_page.h"

#include <climits>
#include <ctime>
#include <sched.h>
#include <linux/futex.h>
#include <stdexcept>
#include <sys/syscall.h>
#include <unistd.h>

namespace ge::host::page {

void SpinPause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

void YieldCpu() noexcept { ::sched_yield(); }

// The futex is FUTEX_WAIT/FUTEX_WAKE without FUTEX_PRIVATE_FLAG: the word
// is in a memfd both processes map, so the kernel must key it by the page.
void FutexWait(std::atomic<uint32_t>& addr, uint32_t expected, std::chrono::nanoseconds timeout) noexcept {
  const auto ns = std::max<std::chrono::nanoseconds::rep>(timeout.count(), 0);
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&addr), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

int SpinPolicy::UsableCpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return CPU_COUNT(&set);
}

void Ring(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& waiting, uint32_t seq) noexcept {
  bell.store(seq, std::memory_order_seq_cst);
  if (waiting.load(std::memory_order_seq_cst) != 0) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&bell), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
}

void DescToRecord(const TensorDesc& d, TensorRecord* r) noexcept {
  const Shape& o = d.shape.GetOriginShape();
  const Shape& s = d.shape.GetStorageShape();
  r->origin_rank = static_cast<uint32_t>(o.GetDimNum());
  r->storage_rank = static_cast<uint32_t>(s.GetDimNum());
  for (uint32_t i = 0; i < r->origin_rank; ++i) r->origin_dims[i] = o.GetDim(i);
  for (uint32_t i = 0; i < r->storage_rank; ++i) r->storage_dims[i] = s.GetDim(i);
  r->origin_format = static_cast<int32_t>(d.format.GetOriginFormat());
  r->storage_format = static_cast<int32_t>(d.format.GetStorageFormat());
  r->expand_size = static_cast<uint32_t>(d.format.GetExpandDimsType().GetRuleSize());
  r->expand_mask = d.format.GetExpandDimsType().GetMask();
  r->data_type = static_cast<int32_t>(d.data_type);
  r->placement = static_cast<int32_t>(d.placement);
}

TensorDesc DescFromRecord(const TensorRecord& r) {
  if (r.origin_rank > kMaxRank || r.storage_rank > kMaxRank || r.expand_size > kMaxRank) {
    throw std::out_of_range("a tensor record of rank " + std::to_string(r.origin_rank) + "/" +
                            std::to_string(r.storage_rank) + " (supported: at most " + std::to_string(kMaxRank) + ")");
  }
  TensorDesc d;
  Shape& o = d.shape.MutableOriginShape();
  Shape& s = d.shape.MutableStorageShape();
  o.SetDimNum(r.origin_rank);
  s.SetDimNum(r.storage_rank);
  for (uint32_t i = 0; i < r.origin_rank; ++i) o.SetDim(i, r.origin_dims[i]);
  for (uint32_t i = 0; i < r.storage_rank; ++i) s.SetDim(i, r.storage_dims[i]);
  ExpandDimsType expand;
  if (r.expand_size > 0) {
    std::string rule(r.expand_size, '0');
    for (uint32_t i = 0; i < r.expand_size; ++i) {
      if ((r.expand_mask >> i) & 1U) rule[i] = '1';
    }
    expand = ExpandDimsType(rule);
  }
  d.format = StorageFormat(static_cast<Format>(r.origin_format), static_cast<Format>(r.storage_format), expand);
  d.data_type = static_cast<DataType>(r.data_type);
  d.placement = static_cast<TensorPlacement>(r.placement);
  return d;
}

std::string ReplyProblem(const ExecuteReply& reply, uint32_t n_inputs) {
  if (reply.rc != 0) return "status " + std::to_string(reply.rc) + " in the page (a failure travels as a socket frame)";
  if (reply.n_outputs > kMaxTensors) {
    return "a reply of " + std::to_string(reply.n_outputs) + " outputs (supported: at most " +
           std::to_string(kMaxTensors) + ")";
  }
  for (uint32_t k = 0; k < reply.n_outputs; ++k) {
    const OutputRecord& o = reply.outputs[k];
    if (o.kind > 2) return "output " + std::to_string(k) + " of kind " + std::to_string(o.kind) + " (supported: 0, 1, 2)";
    if (o.kind == 1 && o.ref >= n_inputs) {
      return "output " + std::to_string(k) + " aliasing input " + std::to_string(o.ref) + " of " + std::to_string(n_inputs);
    }
    if (o.kind == 2 && (o.tensor.origin_rank > kMaxRank || o.tensor.storage_rank > kMaxRank ||
                        o.tensor.expand_size > kMaxRank)) {
      return "output " + std::to_string(k) + " of rank over " + std::to_string(kMaxRank);
    }
  }
  return {};
}

}  // namespace ge::host::page

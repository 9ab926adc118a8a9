// call_page.h: the shared page an engine and its plugin worker hand calls over: a doorbell pair and fixed-layout execute records.
//
// Every request of the engine to a worker rings the page's request doorbell
// (a sequence number the worker waits on: a short spin, then a futex); the
// worker answers by setting the reply doorbell to the same number. An eager
// execute whose inputs, layout and attributes fit the fixed-layout records
// below travels in the page itself: no socket write, no parse, no
// allocation on either side. Every other request, and every answer the
// records cannot express (an error, inline output bytes), is a MessagePack
// frame on the worker's socket (worker_wire.h) and the page only says so.
// share/docs/host-design.md, "Process isolation", "The call page".
//
// Why our own layout: the records are plain C structs read in place (the
// way io_uring's submission entries are), bounds-checked field by field on
// the reading side; there is nothing to frame or parse, so no serialization
// library fits (MessagePack through nlohmann's DOM cost 20-50 us per
// message, more than the whole goal of a call; measured with ge-bench-process).
//
// Both sides are the same build on the same machine: native layout and
// byte order. The worker is not trusted: the engine checks every field of a
// reply before using it (ReplyProblem).
//
// Thread-safety: one call at a time per page (the engine's ProcessPlugin
// lock); the doorbells are lock-free atomics in shared memory and the futex
// is the process-shared kind.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "ge/runtime/tensor.h"

namespace ge::host::page {

using Clock = std::chrono::steady_clock;

inline constexpr uint32_t kMaxRank = kMaxDimNum;  // dims per shape: every shape fits
inline constexpr uint32_t kMaxTensors = 32;  // inputs of a request, outputs of a reply
inline constexpr uint32_t kMaxCounts = 32;   // IR inputs/outputs of an instance layout
inline constexpr uint32_t kMaxFrees = 64;    // worker blocks the engine let go of, per request
inline constexpr uint32_t kMaxNode = 240;    // bytes of a node name

// What a rung doorbell means.
enum class Kind : uint32_t {
  kSocket = 1,   // the message is a frame on the socket
  kExecute = 2,  // an ExecuteRequest / ExecuteReply in the page
  kBye = 3,      // request only: the engine is done with this worker; exit
};

// A tensor in an arena, by offset: its description and where its bytes are.
struct TensorRecord {
  int32_t arena;  // -1: no memory; 0: the engine's arena; 1: the worker's
  uint32_t read_only;
  uint64_t offset;
  uint64_t size;  // bytes
  int32_t data_type, origin_format, storage_format, placement;
  uint32_t origin_rank, storage_rank;
  uint32_t expand_size;  // the expand-dims rule: its length and its '1' positions
  uint64_t expand_mask;
  int64_t origin_dims[kMaxRank];
  int64_t storage_dims[kMaxRank];
};

struct ExecuteRequest {
  uint32_t op_index;  // the op's position in the worker's "loaded" answer
  uint32_t attrs_id;  // runtime attributes sent once before (ExecuteRequest never carries them)
  uint32_t n_inputs, n_in_counts, n_out_counts, n_frees, node_len;
  uint32_t in_counts[kMaxCounts];
  uint32_t out_counts[kMaxCounts];
  uint64_t frees[kMaxFrees];
  char node[kMaxNode];
  TensorRecord inputs[kMaxTensors];
};

// One output of a reply.
struct OutputRecord {
  uint32_t kind;  // 0: not set; 1: aliases input `ref`; 2: a block of the worker's arena (tensor)
  uint32_t ref;
  TensorRecord tensor;
};

struct ExecuteReply {
  int32_t rc;  // always GRAPH_SUCCESS in the page: a failure is a socket frame
  uint32_t n_outputs;
  OutputRecord outputs[kMaxTensors];
};

// The page: two doorbells on their own cache lines, then the two records.
struct Page {
  alignas(64) std::atomic<uint32_t> request_seq;
  std::atomic<uint32_t> worker_waiting;  // 1 while the worker may sleep on request_seq
  Kind request_kind;
  alignas(64) std::atomic<uint32_t> reply_seq;
  std::atomic<uint32_t> engine_waiting;  // 1 while the engine may sleep on reply_seq
  // The request the worker has taken up (set before it reads it): a worker
  // found gone with taken_seq short of the request never saw it, so the call
  // can go to a new worker.
  std::atomic<uint32_t> taken_seq;
  Kind reply_kind;
  // Log records the worker has written on its log socket (worker_log.h),
  // counted after each is sent: an engine that sees it changed when an
  // answer comes drains the socket before it goes on.
  std::atomic<uint32_t> log_records;
  // The engine's log level in effect (a ge::LogLevel), written with each
  // request: the worker's lines are filtered at it, as the engine's are.
  std::atomic<int32_t> log_level;
  alignas(64) ExecuteRequest request;
  alignas(64) ExecuteReply reply;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free, "the doorbells must be lock-free to be shared between processes");

inline constexpr std::size_t kPageBytes = (sizeof(Page) + 4095) / 4096 * 4096;

// Rings `bell` with `seq` (after the record it announces was written) and
// wakes the other side if it said it may sleep (`waiting`).
void Ring(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& waiting, uint32_t seq) noexcept;

// How long one side spins for the other before it sleeps on the futex: the
// whole budget while the other side lately answered within it (the spin
// then saves a futex wake-up, 5-200 us on a shared 2-core machine, against
// about 3 us for the whole call; ge-bench-process), a token spin after a
// longer wait (spinning would only burn a core), none when this process may
// use a single CPU (the other side could not run meanwhile).
class SpinPolicy {
 public:
  static constexpr std::chrono::microseconds kMaxSpin{500};
  static constexpr std::chrono::microseconds kMinSpin{20};
  std::chrono::nanoseconds Next() const noexcept { return spin_; }
  // The last wait took `waited` (from ringing or answering to the other
  // side's answer or next request).
  void Observe(std::chrono::nanoseconds waited) noexcept {
    if (spin_.count() != 0) spin_ = waited <= kMaxSpin ? std::chrono::nanoseconds(kMaxSpin) : std::chrono::nanoseconds(kMinSpin);
  }

 private:
  std::chrono::nanoseconds spin_ = UsableCpus() > 1 ? std::chrono::nanoseconds(kMaxSpin) : std::chrono::nanoseconds(0);
  static int UsableCpus() noexcept;
};

enum class Wait { kRung, kPeerGone, kTimeout };
// Waits until `bell` holds `seq`: spins for at most `spin`, then sleeps on
// the futex in slices of at most `slice`, and between slices asks `gone`
// (a cheap liveness check of the other side: true ends the wait with
// kPeerGone) and checks `deadline` (Clock::time_point::max(): none).
template <typename Gone>
Wait WaitFor(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& waiting, uint32_t seq,
             std::chrono::nanoseconds spin, std::chrono::nanoseconds slice, Clock::time_point deadline,
             Gone&& gone);

// Writes `d` into the description fields of `r` (every description fits).
void DescToRecord(const TensorDesc& d, TensorRecord* r) noexcept;
// The description in `r`. Throws std::out_of_range for a rank over kMaxRank
// or an expand-dims rule that is not one (a record the other side cannot
// have written).
TensorDesc DescFromRecord(const TensorRecord& r);
// Why `reply` (as the worker wrote it) cannot be believed for a request with
// `n_inputs` inputs, "" when it can. Offsets are checked by the caller,
// which knows the arena.
std::string ReplyProblem(const ExecuteReply& reply, uint32_t n_inputs);

// ---- futex primitives (the rest of WaitFor) ----
// Pauses WaitFor spins before it starts yielding its CPU every 16 (a few
// microseconds: ge-bench-process, "The call page" in share/docs/host-design.md).
inline constexpr unsigned kPureSpins = 64;
void SpinPause() noexcept;
void YieldCpu() noexcept;  // sched_yield
// Sleeps while *addr == expected, at most `timeout`; spurious returns are fine.
void FutexWait(std::atomic<uint32_t>& addr, uint32_t expected, std::chrono::nanoseconds timeout) noexcept;

template <typename Gone>
Wait WaitFor(std::atomic<uint32_t>& bell, std::atomic<uint32_t>& waiting, uint32_t seq,
             std::chrono::nanoseconds spin, std::chrono::nanoseconds slice, Clock::time_point deadline,
             Gone&& gone) {
  const auto spin_end = Clock::now() + spin;
  for (unsigned i = 0;; ++i) {
    if (bell.load(std::memory_order_acquire) == seq) return Wait::kRung;
    if ((i & 15) == 15) {
      if (Clock::now() >= spin_end) break;
      // The other side may be waiting for this very CPU (the scheduler
      // often wakes it next to its waker): let it run, but not during the
      // first kPureSpins pauses, within which an answer from another CPU
      // usually comes (a sched_yield costs as much as a quick call).
      if (i >= kPureSpins) YieldCpu();
    } else {
      SpinPause();
    }
  }
  for (;;) {
    // Said before looking again, so a ring after the look finds it (both
    // sides store, then load, sequentially consistent: one of them sees the other).
    waiting.store(1, std::memory_order_seq_cst);
    const uint32_t seen = bell.load(std::memory_order_seq_cst);
    if (seen == seq) {
      waiting.store(0, std::memory_order_relaxed);
      return Wait::kRung;
    }
    auto left = slice;
    if (deadline != Clock::time_point::max()) {
      const auto now = Clock::now();
      if (now >= deadline) {
        waiting.store(0, std::memory_order_relaxed);
        return Wait::kTimeout;
      }
      left = std::min<std::chrono::nanoseconds>(slice, deadline - now);
    }
    FutexWait(bell, seen, left);
    waiting.store(0, std::memory_order_relaxed);
    if (bell.load(std::memory_order_acquire) == seq) return Wait::kRung;
    if (gone()) {
      // It may have answered just before it went.
      return bell.load(std::memory_order_acquire) == seq ? Wait::kRung : Wait::kPeerGone;
    }
  }
}

}  // namespace ge::host::page

// worker_log.h: a process worker's log lines, carried to the engine's log (and so to its LogSink).
//
// A worker (isolation "process") logs like the engine: its host's lines, its
// plugin's prints (component "plugin"). Written to the worker's stderr they
// would bypass the LogSink an embedding engine installed (ge/log.h), and an
// engine could tell a process plugin from an in-process one by where its
// lines go. So the engine gives each worker one end of a stream socket at
// init, the worker's log sink writes each line on it as a record, and the
// engine re-emits every record through its own logger of the same component:
// its level, its sink (or its stderr, formatted as its own lines).
// share/docs/host-design.md, "Process isolation" (Log lines).
//
// Record: an 8-byte header (level: 1 byte, 0 = trace .. 5 = critical; 1
// reserved byte; component length: 2 bytes; message length: 4 bytes; host
// byte order, the two ends are one machine), then the component and the
// message (UTF-8, already TerminalSafe with newlines kept). Our own framing:
// a fixed header read in place; no serialization library is worth it here.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ge/log.h"

namespace ge::host {

// Bounds of one record: a longer message is cut by the writer (with a note),
// a longer field makes the reader stop (the channel is not ours any more).
constexpr std::size_t kMaxLogComponent = 64;
constexpr std::size_t kMaxLogMessage = 1u << 20;

// Worker side: a LogSink writing records on `fd` (owned: closed when the sink
// is destroyed) and counting them in `*written` (borrowed, may be null; the
// call page's log_records, valid while the worker runs). Write blocks while
// the socket is full (the engine's reader drains it concurrently); once a
// write fails (the engine closed its end) the sink drops every later line.
// Thread-safe; never throws, never logs.
std::shared_ptr<LogSink> MakeWorkerLogSink(int fd, std::atomic<uint32_t>* written);

// Engine side: the reader of one worker's log socket (`fd`, owned). A thread
// of its own re-emits each record as it arrives; Drain() re-emits, on the
// calling thread, what has arrived so far (a call's answer comes after the
// lines the worker logged during the call, so draining after the answer puts
// them before whatever the engine logs next). Stop() drains what is left and
// ends the thread; the destructor stops. A malformed record (a plugin writing
// on the descriptor) stops the reading with one warning naming `who`.
// Thread-safe; never takes a lock while holding the GIL, and is never called
// with one held by its caller (process_plugin.cc).
class WorkerLogReader {
 public:
  WorkerLogReader(int fd, std::string who);
  ~WorkerLogReader();
  WorkerLogReader(const WorkerLogReader&) = delete;
  WorkerLogReader& operator=(const WorkerLogReader&) = delete;

  void Drain();
  void Stop();

 private:
  void Run();
  // Reads what is there (non-blocking) and emits the whole records; false at
  // the end of the stream or when reading stopped. Under mu_.
  bool ReadAvailable();

  std::mutex mu_;  // leaf lock: guards fd_, buf_, ended_ (the sink it emits into must not log)
  int fd_;
  int wake_[2] = {-1, -1};  // a pipe: Stop() writes, the thread wakes
  std::string who_;
  std::string buf_;
  bool ended_ = false;
  std::thread thread_;
};

}  // namespace ge::host

// worker_log.h: a process worker's log lines, carried to the engine's log (and so to its LogSink).
//
// A worker (isolation "process") logs like the engine: its host's lines, its
// plugin's prints (component "plugin"). Written to the worker's stderr they
// would bypass the LogSink an embedding engine installed (ge/log.h), and an
// engine could tell a process plugin from an in-process one by where its
// lines go. So the engine gives each worker one end of a stream socket at
// init, the worker's log sink writes each line on it as a record, and the
// engine re-emits every record through its own logger: its level, its sink
// (or its stderr, formatted as its own lines). The engine's level in effect
// travels to the worker with every request (the call page's log_level).
// share/docs/host-design.md, "Process isolation" (Log lines).
//
// Record: one frame of the engine <-> worker wire (worker_wire.h: a uint32
// length, then MessagePack through nlohmann-json) holding {"level": 0..5
// (trace .. critical), "component": "host" or "plugin", "message": text}.
// The engine trusts nothing in it: the plugin shares the worker's process and
// can write on the descriptor. A component other than the worker's own two is
// filed under "plugin" with the plugin's name; the text is made valid UTF-8
// and terminal-safe again; a frame that is not a record ends the reading with
// one warning naming the plugin.
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

// A line longer than this is cut by the worker's sink, with a note (16 MiB).
constexpr std::size_t kMaxLogMessage = 16u << 20;
// Where the worker keeps its end of the log socket: a high descriptor number
// of its own, so that a plugin that closes and reopens low numbers does not
// get it (and the sink does not write into a file of the plugin's).
constexpr int kWorkerLogFd = 1000;

// Worker side: a LogSink writing records on `fd` (owned: closed when the sink
// is destroyed, unless it was found no longer ours) and counting them in
// `*written` (borrowed, may be null; the call page's log_records, valid while
// the worker runs). Write blocks while the socket is full (the engine's
// reader drains it concurrently); once a write fails (the engine closed its
// end, or a plugin closed the descriptor) the sink drops every later line.
// Thread-safe; never throws, never logs.
std::shared_ptr<LogSink> MakeWorkerLogSink(int fd, std::atomic<uint32_t>* written);

// Engine side: the reader of one worker's log socket (`fd`, owned). A thread
// of its own re-emits each record as it arrives; Drain() re-emits, on the
// calling thread, what has arrived so far (a call's answer comes after the
// lines the worker logged during the call, so draining after the answer puts
// them before whatever the engine logs next). Stop() drains what is left and
// ends the thread (a record left incomplete is reported once); the destructor
// stops. `plugin` is the plugin's name (the tag of a record filed under
// "plugin"), `who` names the plugin and worker in the reader's own warnings.
// Thread-safe; its lock is a leaf (the sink it emits into must not log), and
// it is never called with the GIL held (process_plugin.cc).
class WorkerLogReader {
 public:
  WorkerLogReader(int fd, std::string plugin, std::string who);
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
  // Ends the reading with one warning. Under mu_.
  void Refuse(const std::string& why);

  std::mutex mu_;
  int fd_;
  int wake_[2] = {-1, -1};  // a pipe: Stop() writes, the thread wakes
  std::string plugin_;
  std::string who_;
  std::string buf_;
  bool ended_ = false;
  std::thread thread_;
};

}  // namespace ge::host

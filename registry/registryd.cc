// ge-plugin-registryd: scans the opp folders out of process, caches the
// result, watches the folders with inotify and serves the registry over a
// Unix socket (line-delimited JSON). See share/docs/registry.md.
#include "registryd.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <ctime>
#include <boost/asio.hpp>
#include <boost/filesystem.hpp>
#include <boost/program_options.hpp>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "ge/log_spdlog.h"
#include "cache_write.h"
#include "ge/file.h"
#include "metrics.h"
#include "ge/plugin/cache.h"
#include "paths.h"
#include "refresh.h"
#include "ge/text.h"
#include "ge_version.h"
#include "systemd.h"

namespace asio = boost::asio;
namespace po = boost::program_options;
namespace stdfs = std::filesystem;
using asio::local::stream_protocol;

namespace ge::registry {

namespace {

const char* FileTypeName(std::filesystem::file_type t) {
  switch (t) {
    case std::filesystem::file_type::regular: return "a regular file";
    case std::filesystem::file_type::directory: return "a directory";
    case std::filesystem::file_type::symlink: return "a symbolic link";
    case std::filesystem::file_type::fifo: return "a FIFO";
    case std::filesystem::file_type::block: return "a block device";
    case std::filesystem::file_type::character: return "a character device";
    default: return "not a socket";
  }
}

constexpr const char* kUsage =
    "usage: ge-plugin-registryd [--opp-path P] [--socket PATH] [--cache PATH] [--foreground] [--log-level L]\n"
    "                           [--timeout S] [--jobs N] [--socket-group G] [--allow-insecure]\n"
    "                           [--max-connections N] [--idle-timeout S] [--metrics-textfile PATH]";

// --help: usage, what the daemon does, then (after the options) exit status,
// environment and files; help2man makes ge-plugin-registryd(8) of it
// (share/cmake/GePluginMan.cmake): keep the paragraph titles.
constexpr const char* kHelpHead =
    "Usage: ge-plugin-registryd [OPTION]...\n"
    "The machine-wide registry of GE plugins: scans the plugins of the opp path in ge-plugin-scan children\n"
    "(a plugin that crashes, hangs or exits is marked, never fatal), keeps the result in a cache, watches the\n"
    "opp folders with inotify (changes are rescanned within a second) and serves the listing to ge-plugin-ls\n"
    "over a Unix socket (line-delimited JSON: list, show, rescan, status). Without --foreground it detaches once\n"
    "the socket is served. Under systemd (share/systemd/) it takes the socket from socket activation and says\n"
    "READY=1 once serving (Type=notify). SIGTERM and SIGINT stop it (its socket removed; one systemd made is\n"
    "left to systemd); SIGHUP rescans every plugin. See share/docs/registry.md.\n";
constexpr const char* kHelpTail =
    "\n"
    "Exit status:\n"
    "  0   stopped by a signal (or, detaching, the daemon is serving)\n"
    "  1   cannot start: another daemon serves the socket, the socket path is unusable, cannot bind\n"
    "  2   usage error (bad option, no opp path)\n"
    "\n"
    "Environment:\n"
    "  ASCEND_CUSTOM_OPP_PATH  the opp path when --opp-path is not given (':'-separated files and folders)\n"
    "  GE_PLUGIN_REGISTRY_SOCKET  the socket when --socket is not given\n"
    "  GE_PLUGIN_REGISTRY_CACHE   the cache file when --cache is not given\n"
    "  RUNTIME_DIRECTORY, CACHE_DIRECTORY\n"
    "                          systemd's folders (RuntimeDirectory=, CacheDirectory=): the socket is\n"
    "                          RUNTIME_DIRECTORY/registry.sock, the cache CACHE_DIRECTORY/registry.json\n"
    "  XDG_RUNTIME_DIR, XDG_CACHE_HOME\n"
    "                          where a user's own daemon puts its socket and cache (see Files)\n"
    "  LISTEN_FDS, LISTEN_PID  socket activation: the socket to serve (the .socket unit)\n"
    "  NOTIFY_SOCKET           systemd's notification socket (Type=notify)\n"
    "  GE_PLUGIN_SCAN          the scanner child to run (default: ge-plugin-scan of the installation)\n"
    "  GE_LOG_LEVEL            log level when --log-level is not given (default warn)\n"
    "\n"
    "Files:\n"
    "  /run/ge-plugin-registry/registry.sock\n"
    "                          the system daemon's socket (root's default; the .socket unit's)\n"
    "  /var/cache/ge-plugin-registry/registry.json\n"
    "                          the system daemon's cache (root's default; the unit's CacheDirectory=), with\n"
    "                          its listing index registry.json.list beside it\n"
    "  $XDG_RUNTIME_DIR/ge-plugin-registry.sock\n"
    "                          a user's daemon's socket (/tmp/ge-plugin-registry-UID/registry.sock without\n"
    "                          XDG_RUNTIME_DIR)\n"
    "  $XDG_CACHE_HOME/ge-plugin/registry.json\n"
    "                          a user's daemon's cache (~/.cache/ge-plugin/registry.json)\n"
    "  " GE_INSTALL_FULL_UNITDIR "/ge-plugin-registryd.service, ge-plugin-registryd.socket\n"
    "                          the systemd units\n"
    "  " GE_INSTALL_FULL_LIBEXECDIR "/ge-plugin-scan\n"
    "                          the scanner child (internal)\n"
    "\n"
    "Documentation: " GE_INSTALL_FULL_DATADIR "/docs/registry.md (share/docs/registry.md of the source).\n";

// Logs a warning at most once per interval for each key, counting the ones
// suppressed in between: a client that makes accept fail cannot flood the log.
class RateLimitedWarnings {
 public:
  static constexpr std::chrono::seconds kInterval{10};
  void Warn(spdlog::logger& log, const std::string& key, const std::string& message) {
    auto& e = entries_[key];
    const auto now = std::chrono::steady_clock::now();
    if (e.logged && now - e.last < kInterval) {
      ++e.suppressed;
      return;
    }
    if (e.suppressed > 0) {
      log.warn("{} ({} similar message(s) suppressed in the last {} s)", message, e.suppressed, kInterval.count());
    } else {
      log.warn("{}", message);
    }
    e = Entry{true, now, 0};
  }

 private:
  struct Entry {
    bool logged = false;
    std::chrono::steady_clock::time_point last{};
    uint64_t suppressed = 0;
  };
  std::map<std::string, Entry> entries_;
};

// The registry state shared by the scan worker and the network thread.
class State {
 public:
  // Pre-serialized replies: `list` costs one write, whatever the size.
  struct Snapshot {
    std::string list_line;
    std::map<std::string, plugin::PluginRecord> by_path;  // effective records (conflicts resolved)
    std::vector<std::string> order;       // paths in path order
    std::map<std::string, int> counts;
    uint64_t generation = 0;
    double last_scan_ms = 0;
    json scan = json::object();  // {"in_progress", "pending"}
    std::size_t last_scanned = 0;  // plugins the last refresh scanned
  };
  std::shared_ptr<const Snapshot> Get() const {
    std::lock_guard<std::mutex> l(mu_);
    return snap_;
  }
  void Set(std::shared_ptr<const Snapshot> s) {
    std::lock_guard<std::mutex> l(mu_);
    snap_ = std::move(s);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Snapshot> snap_ = std::make_shared<Snapshot>();
};

// What one client may hold: share/docs/registry.md, "Limits".
struct ServeLimits {
  std::size_t max_connections = 256;
  double idle_timeout_s = 60;
};

struct Task {
  bool force = false;
  std::vector<std::string> paths;           // forced paths (rescan of one plugin)
  std::function<void(json)> done;           // called on the worker thread
};

class Daemon {
 public:
  Daemon(asio::io_context& io, std::vector<std::string> entries, std::string socket_path, std::string cache_path,
         RefreshOptions ropts, int socket_gid, ServeLimits limits)
      : io_(io),
        limits_(limits),
        accept_backoff_(io),
        entries_(std::move(entries)),
        socket_path_(std::move(socket_path)),
        cache_path_(std::move(cache_path)),
        ropts_(std::move(ropts)),
        socket_gid_(socket_gid),
        acceptor_(io),
        inotify_(io),
        debounce_(io),
        signals_(io, SIGTERM, SIGINT, SIGHUP),
        log_(Logger("registryd")),
        start_(std::chrono::steady_clock::now()) {}

  // --metrics-textfile: the Prometheus text (metrics.h) written there after
  // every refresh. Call before Start.
  void SetMetricsTextfile(std::string path) { metrics_textfile_ = std::move(path); }

  // Loads the cache, scans, binds. Returns false (with `why`) on fatal errors.
  bool Start(std::string* why) {
    std::string reason;
    if (auto cache = plugin::LoadCache(cache_path_, &reason)) {
      records_ = std::move(cache->records);
      log_->info("loaded {} cached record(s) from {}", records_.size(), cache_path_);
    } else if (stdfs::exists(cache_path_)) {
      log_->warn("{}; rebuilding it", reason);
    }
    // Watches first, then the first scan: a change made while it runs, or
    // between its end and the first client, is queued by the kernel and
    // rescanned once the loop runs (set up after the scan, it was lost).
    SetupInotify();
    RunTask(Task{});  // the first scan, before clients are served
    if (!Bind(why)) return false;
    serving_ = true;
    worker_ = std::thread([this] { WorkerLoop(); });
    signals_.async_wait([this](const boost::system::error_code& ec, int sig) { OnSignal(ec, sig); });
    Accept();
    return true;
  }

  void Stop() {
    if (stopping_.exchange(true)) return;
    log_->info("stopping");
    boost::system::error_code ec;
    acceptor_.close(ec);
    inotify_.close(ec);
    debounce_.cancel();
    accept_backoff_.cancel();
    signals_.cancel(ec);
    {
      std::lock_guard<std::mutex> l(qmu_);
      qcv_.notify_all();
    }
    NotifyStopping();
    // A socket passed by systemd is the socket unit's to remove.
    if (inherited_fd < 0) ::unlink(socket_path_.c_str());
    io_.stop();
  }

  void Join() {
    if (worker_.joinable()) worker_.join();
  }

  State state;
  // A listening socket passed by socket activation (systemd.h), served instead
  // of binding socket_path; -1: none. Set before Start().
  int inherited_fd = -1;

 private:
  // ---- scanning -----------------------------------------------------------------------------
  // Serves `ordered` to clients; `pending` (paths still being scanned, in
  // path order) says a scan is in progress (share/docs/registry.md, "Scan progress").
  std::shared_ptr<State::Snapshot> Publish(std::vector<plugin::PluginRecord> ordered,
                                           const std::vector<std::string>& pending, double last_scan_ms,
                                           std::size_t last_scanned) {
    auto snap = std::make_shared<State::Snapshot>();
    json plugins = json::array();
    for (auto& r : ordered) {
      plugins.push_back(plugin::ToJson(r, /*with_detail=*/false));
      snap->counts[std::string(plugin::StatusName(r.status))]++;
      const std::string p = r.path;
      snap->order.push_back(p);
      snap->by_path[p] = std::move(r);
    }
    snap->generation = ++generation_;
    snap->last_scan_ms = last_scan_ms;
    snap->last_scanned = last_scanned;
    snap->scan = {{"in_progress", !pending.empty()}, {"pending", PathsJson(pending)}};
    json head = {{"ok", true}, {"source", "daemon"}, {"generation", snap->generation}, {"opp_path", PathsJson(entries_)},
                 {"allow_insecure", ropts_.allow_insecure}, {"scan", snap->scan}};
    // `plugins` goes last, so that ge-plugin-ls can pass it through as sent
    // (listing_json.h: ParseListReply).
    std::string line = head.dump(-1, ' ', false, json::error_handler_t::replace);
    line.pop_back();  // the closing brace
    line += ",\"plugins\":" + plugins.dump(-1, ' ', false, json::error_handler_t::replace) + "}\n";
    snap->list_line = std::move(line);
    state.Set(snap);
    return snap;
  }

  json RunTask(const Task& t) {
    const auto t0 = std::chrono::steady_clock::now();
    RefreshStats stats;
    RefreshOptions ropts = ropts_;
    const double previous_ms = state.Get()->last_scan_ms;
    // Before the socket is served (the first scan) no one could see progress.
    if (serving_) {
      ropts.partial = [&](const std::vector<plugin::PluginRecord>& so_far, const std::vector<std::string>& pending) {
        Publish(so_far, pending, previous_ms, state.Get()->last_scanned);
      };
    }
    std::vector<plugin::PluginRecord> ordered = Refresh(entries_, records_, ropts, &stats, t.force, t.paths);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto snap = Publish(std::move(ordered), {}, ms, stats.scanned);
    if (stats.scanned > 0 || stats.removed > 0 || !cache_written_) {
      std::string why;
      if (SaveCache(cache_path_, entries_, records_, &why)) {
        cache_written_ = true;
        std::vector<plugin::PluginRecord> listed;
        for (const auto& p : snap->order) listed.push_back(snap->by_path.at(p));
        if (!SaveListIndex(cache_path_, entries_, listed, &why)) log_->info("listing index: {}", why);
        SetCacheError("");
      } else {
        // Kept for `status` (a full disk must not be visible only in this log);
        // cache_written_ stays false, so the next refresh tries again.
        log_->warn("{}", why);
        SetCacheError(why);
      }
    }
    WriteMetrics(*snap);
    log_->info("refresh: {} plugin(s), {} scanned, {} reused, {} removed in {:.1f} ms", stats.discovered, stats.scanned,
               stats.reused, stats.removed, ms);
    return {{"ok", true}, {"plugins", stats.discovered}, {"scanned", stats.scanned}, {"reused", stats.reused},
            {"removed", stats.removed}, {"generation", snap->generation}, {"ms", ms}};
  }

  // The textfile for node-exporter, after each refresh: written atomically
  // (a temporary file in its folder, renamed over it), so the collector never
  // reads a part. A failed write is logged and tried again at the next refresh.
  void WriteMetrics(const State::Snapshot& snap) {
    if (metrics_textfile_.empty()) return;
    json plugins = json::array();
    for (const auto& p : snap.order) plugins.push_back(plugin::ToJson(snap.by_path.at(p), /*with_detail=*/false));
    MetricsInfo info;
    info.source = "daemon";
    info.last_refresh_s = snap.last_scan_ms / 1000;
    info.last_refresh_scanned = snap.last_scanned;
    info.cache_written_unix = FileMtimeUnix(cache_path_);
    info.now_unix = static_cast<int64_t>(::time(nullptr));
    std::string why;
    if (!WriteFileDurably(metrics_textfile_, PrometheusText(plugins, info), &why)) {
      log_->warn("metrics textfile: {}", why);
    }
  }

  void Enqueue(Task t) {
    std::lock_guard<std::mutex> l(qmu_);
    queue_.push_back(std::move(t));
    qcv_.notify_all();
  }

  void WorkerLoop() {
    for (;;) {
      std::vector<Task> batch;
      {
        std::unique_lock<std::mutex> l(qmu_);
        qcv_.wait(l, [this] { return stopping_ || !queue_.empty(); });
        if (stopping_) break;
        batch.assign(queue_.begin(), queue_.end());
        queue_.clear();
      }
      // Coalesce: one refresh serves every queued task.
      Task merged;
      for (const auto& t : batch) {
        merged.force = merged.force || t.force;
        merged.paths.insert(merged.paths.end(), t.paths.begin(), t.paths.end());
      }
      json result;
      try {
        result = RunTask(merged);
      } catch (const std::exception& e) {
        log_->error("refresh failed: {}", e.what());
        result = {{"ok", false}, {"error", std::string("refresh failed: ") + e.what()}};
      }
      asio::post(io_, [this] { UpdateWatches(); });
      for (auto& t : batch) {
        if (t.done) t.done(result);
      }
    }
  }

  // ---- inotify --------------------------------------------------------------------------------
  void SetupInotify() {
    const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd < 0) {
      log_->warn("inotify unavailable ({}): changes are seen on SIGHUP or rescan only", std::strerror(errno));
      return;
    }
    inotify_.assign(fd);
    UpdateWatches();
    ReadInotify();
  }

  // Returns true when the folder was not watched yet.
  bool Watch(const std::string& dir) {
    if (!inotify_.is_open()) return false;
    constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |
                               IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
    const int wd = ::inotify_add_watch(inotify_.native_handle(), dir.c_str(), kMask);
    if (wd < 0) return false;
    const bool fresh = watched_.find(wd) == watched_.end();
    watched_[wd] = dir;
    return fresh;
  }

  // Watches each opp folder (the folder of a file entry, the parent of a
  // missing one) and every folder inside each package plugin.
  void UpdateWatches() {
    if (!inotify_.is_open() || stopping_) return;
    const bool first = watched_.empty();
    bool added = false;
    for (const auto& e : entries_) {
      std::error_code ec;
      if (stdfs::is_directory(e, ec)) {
        added |= Watch(e);
        for (stdfs::directory_iterator it(e, ec), end; !ec && it != end; it.increment(ec)) {
          if (it->path().filename() == "__pycache__" || !it->is_directory(ec)) continue;
          added |= Watch(it->path().string());
          stdfs::recursive_directory_iterator rit(it->path(), ec), rend;
          for (int n = 0; !ec && rit != rend && n < 2000; rit.increment(ec), ++n) {
            if (!rit->is_directory(ec)) continue;
            if (rit->path().filename() == "__pycache__") {
              rit.disable_recursion_pending();
              continue;
            }
            added |= Watch(rit->path().string());
          }
        }
      } else {
        const auto parent = stdfs::path(e).parent_path();
        added |= Watch(parent.empty() ? "." : parent.string());
      }
    }
    // A folder watched only now may have changed before its watch existed.
    if (added && !first) ScheduleRefresh();
  }

  void ScheduleRefresh() {
    // Debounce: an editor's or installer's burst of events is one refresh.
    debounce_.expires_after(std::chrono::milliseconds(60));
    debounce_.async_wait([this](const boost::system::error_code& e) {
      if (!e && !stopping_) Enqueue(Task{});
    });
  }

  void ReadInotify() {
    inotify_.async_read_some(asio::buffer(ibuf_), [this](const boost::system::error_code& ec, std::size_t n) {
      if (ec || stopping_) return;
      bool relevant = false;
      for (std::size_t off = 0; off + sizeof(inotify_event) <= n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(ibuf_.data() + off);
        const std::string name = ev->len ? std::string(ev->name) : std::string();
        if (ev->mask & IN_IGNORED) watched_.erase(ev->wd);
        const bool noise = name == "__pycache__" || (name.size() > 4 && name.substr(name.size() - 4) == ".pyc") ||
                           name.rfind(".registry.json.tmp", 0) == 0;
        if (!noise && !(ev->mask & IN_IGNORED)) relevant = true;
        off += sizeof(inotify_event) + ev->len;
      }
      if (relevant) ScheduleRefresh();
      ReadInotify();
    });
  }

  // ---- socket ---------------------------------------------------------------------------------
  bool Bind(std::string* why) {
    if (inherited_fd >= 0) {
      boost::system::error_code aec;
      acceptor_.assign(stream_protocol(), inherited_fd, aec);
      if (aec) {
        *why = "cannot serve the socket passed by systemd (" + socket_path_ + "): " + aec.message();
        return false;
      }
      log_->info("serving {} (socket activation; {} plugin(s))", socket_path_, state.Get()->order.size());
      return true;
    }
    const stdfs::path sp(socket_path_);
    std::error_code ec;
    if (sp.has_parent_path() && !stdfs::exists(sp.parent_path(), ec)) {
      stdfs::create_directories(sp.parent_path(), ec);
      ::chmod(sp.parent_path().c_str(), socket_gid_ >= 0 ? 0750 : 0700);
      if (socket_gid_ >= 0) (void)::chown(sp.parent_path().c_str(), static_cast<uid_t>(-1), socket_gid_);
    }
    const stdfs::file_status present = stdfs::symlink_status(sp, ec);
    if (stdfs::exists(present) && present.type() != stdfs::file_type::socket) {
      // Only a stale socket is ever removed: a file given as --socket by
      // mistake (the cache, say) is not ours to delete.
      *why = "cannot serve " + socket_path_ + ": it exists and is not a socket (" + FileTypeName(present.type()) +
             "); remove it or choose another --socket";
      return false;
    }
    if (stdfs::exists(present)) {
      // A live daemon keeps its socket; a stale one (crash) is replaced.
      stream_protocol::socket probe(io_);
      boost::system::error_code cec;
      probe.connect(stream_protocol::endpoint(socket_path_), cec);
      if (!cec) {
        *why = "another registry daemon is serving " + socket_path_;
        return false;
      }
      ::unlink(socket_path_.c_str());
    }
    boost::system::error_code bec;
    acceptor_.open(stream_protocol(), bec);
    const mode_t old = ::umask(0177);  // never world-accessible, not even for a moment
    if (!bec) acceptor_.bind(stream_protocol::endpoint(socket_path_), bec);
    ::umask(old);
    if (!bec) acceptor_.listen(asio::socket_base::max_listen_connections, bec);
    if (bec) {
      *why = "cannot listen on " + socket_path_ + ": " + bec.message();
      return false;
    }
    if (socket_gid_ >= 0) {
      (void)::chown(socket_path_.c_str(), static_cast<uid_t>(-1), socket_gid_);
      ::chmod(socket_path_.c_str(), 0660);
    } else {
      ::chmod(socket_path_.c_str(), 0600);
    }
    log_->info("serving {} ({} plugin(s))", socket_path_, state.Get()->order.size());
    return true;
  }

  // One client connection. `live` counts the open ones (for the cap); it is
  // decremented when the last handler holding the connection lets go, on
  // whichever thread that is.
  struct Conn : std::enable_shared_from_this<Conn> {
    Conn(stream_protocol::socket s, std::atomic<std::size_t>& live)
        : sock(std::move(s)), idle(sock.get_executor()), buf(kMaxMessageBytes + 1), live_count(live) {
      live_count.fetch_add(1);
    }
    ~Conn() { live_count.fetch_sub(1); }
    stream_protocol::socket sock;
    asio::steady_timer idle;  // closes a connection that sends nothing for idle_timeout_s
    asio::streambuf buf;
    uid_t uid = static_cast<uid_t>(-1);
    bool hello = false;
    std::string out;
    std::atomic<std::size_t>& live_count;
  };

  void Accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, stream_protocol::socket s) {
      if (stopping_) return;
      if (ec) {
        // EMFILE/ENFILE (out of descriptors) and the like: accepting again at
        // once would fail again at once, spinning the CPU and the log. Back
        // off (50 ms doubling to 1 s) and say so once per interval.
        accept_delay_ms_ = std::min(1000, accept_delay_ms_ == 0 ? 50 : accept_delay_ms_ * 2);
        warn_limiter_.Warn(*log_, "accept", "accept failed: " + ec.message() + "; retrying in " +
                                                std::to_string(accept_delay_ms_) + " ms");
        accept_backoff_.expires_after(std::chrono::milliseconds(accept_delay_ms_));
        accept_backoff_.async_wait([this](const boost::system::error_code& e) {
          if (!e && !stopping_) Accept();
        });
        return;
      }
      accept_delay_ms_ = 0;
      auto c = std::make_shared<Conn>(std::move(s), live_);
      if (live_.load() > limits_.max_connections) {
        warn_limiter_.Warn(*log_, "cap", "connection refused: " + std::to_string(limits_.max_connections) +
                                             " connections are open (--max-connections)");
        Reply(c, {{"ok", false}, {"error", "too many connections (limit " + std::to_string(limits_.max_connections) +
                                               "); try again later"}},
              true);
      } else {
        ucred cred{};
        socklen_t len = sizeof(cred);
        if (::getsockopt(c->sock.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) c->uid = cred.uid;
        ReadRequest(c);
      }
      Accept();
    });
  }

  void ReadRequest(std::shared_ptr<Conn> c) {
    c->idle.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(limits_.idle_timeout_s)));
    std::weak_ptr<Conn> weak = c;
    c->idle.async_wait([weak](const boost::system::error_code& ec) {
      auto conn = weak.lock();
      if (ec || !conn) return;  // re-armed, or already gone
      boost::system::error_code e;
      conn->sock.close(e);  // the pending read ends with an error and drops the connection
    });
    asio::async_read_until(c->sock, c->buf, '\n', [this, c](const boost::system::error_code& ec, std::size_t n) {
      c->idle.cancel();  // a request is being served: no idle timeout while it runs
      if (stopping_) return;
      if (ec == asio::error::not_found) {
        // Oversized: answer, then close (the rest of the line cannot be resynchronised).
        Reply(c, {{"ok", false}, {"error", "request exceeds " + std::to_string(kMaxMessageBytes) + " bytes"}}, true);
        return;
      }
      if (ec) return;  // the client went away
      std::string line(asio::buffers_begin(c->buf.data()), asio::buffers_begin(c->buf.data()) + static_cast<long>(n));
      c->buf.consume(n);
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      Handle(c, line);
    });
  }

  void Reply(const std::shared_ptr<Conn>& c, const json& j, bool close = false) {
    WriteLine(c, std::make_shared<const std::string>(j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"),
              close);
  }

  void WriteLine(const std::shared_ptr<Conn>& c, std::shared_ptr<const std::string> line, bool close) {
    asio::async_write(c->sock, asio::buffer(*line), [this, c, line, close](const boost::system::error_code& ec, std::size_t) {
      if (ec || close || stopping_) {
        boost::system::error_code e;
        c->sock.shutdown(asio::socket_base::shutdown_both, e);
        c->sock.close(e);
        return;
      }
      ReadRequest(c);
    });
  }

  void Handle(const std::shared_ptr<Conn>& c, const std::string& line) {
    if (line.empty()) {
      Reply(c, {{"ok", false}, {"error", "malformed request: an empty line (expected one JSON object per line)"}});
      return;
    }
    json req = json::parse(line, nullptr, false);
    if (req.is_discarded() || !req.is_object()) {
      Reply(c, {{"ok", false}, {"error", "malformed request: expected one JSON object per line"}});
      return;
    }
    if (!req.contains("cmd") || !req["cmd"].is_string()) {
      Reply(c, {{"ok", false}, {"error", "malformed request: missing string field \"cmd\""}});
      return;
    }
    const std::string cmd = req["cmd"].get<std::string>();
    if (cmd == "hello") {
      const auto& p = req.contains("protocol") ? req["protocol"] : json();
      if (!p.is_number_integer() || p.get<int64_t>() != kProtocolVersion) {
        Reply(c, {{"ok", false}, {"protocol", kProtocolVersion},
                  {"error", "unsupported protocol version " + p.dump() + " (this daemon speaks " +
                                std::to_string(kProtocolVersion) + ")"}},
              true);
        return;
      }
      c->hello = true;
      Reply(c, {{"ok", true}, {"protocol", kProtocolVersion}, {"server", "ge-plugin-registryd"}, {"version", kVersion},
                {"max_message_bytes", kMaxMessageBytes}});
      return;
    }
    if (!c->hello) {
      Reply(c, {{"ok", false}, {"error", "handshake required: send {\"cmd\": \"hello\", \"protocol\": " +
                                             std::to_string(kProtocolVersion) + "} first"}});
      return;
    }
    auto snap = state.Get();
    if (cmd == "list") {
      WriteLine(c, std::shared_ptr<const std::string>(snap, &snap->list_line), false);
    } else if (cmd == "show") {
      std::string key;
      for (const char* k : {"path", "name", "op_type"}) {
        if (req.contains(k) && req[k].is_string()) key = k;
      }
      if (key.empty()) {
        Reply(c, {{"ok", false}, {"error", "show needs a string \"name\", \"path\" or \"op_type\""}});
        return;
      }
      const std::string want = req[key].get<std::string>();
      // A path is given in the spelling the listing shows (PathText: a
      // non-UTF-8 byte as \xNN); the literal text is tried too.
      const std::optional<std::string> want_path = key == "path" ? ParsePathText(want) : std::nullopt;
      for (const auto& p : snap->order) {
        const plugin::PluginRecord& r = snap->by_path.at(p);
        bool match = false;
        if (key == "path") match = r.path == want || (want_path && r.path == *want_path);
        if (key == "name") match = r.name == want;
        if (key == "op_type") {
          for (const auto& op : r.ops) match = match || op.op_type == want;
        }
        if (match) {
          Reply(c, {{"ok", true}, {"plugin", plugin::ToJson(r, /*with_detail=*/true)}});
          return;
        }
      }
      Reply(c, {{"ok", false}, {"error", "no plugin with " + key + " '" + want + "'"}});
    } else if (cmd == "status") {
      Reply(c, {{"ok", true},
                {"pid", ::getpid()},
                {"uid", ::geteuid()},
                {"protocol", kProtocolVersion},
                {"uptime_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count()},
                {"plugins", snap->order.size()},
                {"counts", snap->counts},
                {"generation", snap->generation},
                {"last_scan_ms", snap->last_scan_ms},
                {"scan", snap->scan},
                {"last_scanned", snap->last_scanned},
                {"opp_path", PathsJson(entries_)},
                {"allow_insecure", ropts_.allow_insecure},
                {"socket", socket_path_},
                {"cache", cache_path_},
                {"cache_error", CacheError().empty() ? json(nullptr) : json(CacheError())},
                {"connections", live_.load()},
                {"max_connections", limits_.max_connections},
                {"idle_timeout_s", limits_.idle_timeout_s},
                {"watches", watched_.size()}});
    } else if (cmd == "rescan") {
      if (!MayChangeState(c->uid, ::geteuid())) {
        log_->warn("rescan refused to uid {}", c->uid);
        Reply(c, {{"ok", false}, {"code", "forbidden"},
                  {"error", "rescan refused: uid " + std::to_string(c->uid) +
                                " is neither root nor the daemon's user (uid " + std::to_string(::geteuid()) + ")"}});
        return;
      }
      Task t;
      if (req.contains("path")) {
        // One plugin: it must be one this daemon lists (by its path).
        if (!req["path"].is_string()) {
          Reply(c, {{"ok", false}, {"error", "malformed request: \"path\" must be a string"}});
          return;
        }
        std::string want = req["path"].get<std::string>();
        if (!snap->by_path.count(want)) {
          if (auto parsed = ParsePathText(want); parsed && snap->by_path.count(*parsed)) want = *parsed;
        }
        if (!snap->by_path.count(want)) {
          Reply(c, {{"ok", false}, {"error", "no plugin with path '" + Printable(Abbreviate(want)) + "' in this registry"}});
          return;
        }
        t.paths.push_back(want);
      } else {
        t.force = true;
      }
      t.done = [this, c](json result) { asio::post(io_, [this, c, result] { Reply(c, result); }); };
      Enqueue(std::move(t));
    } else {
      Reply(c, {{"ok", false}, {"error", "unknown cmd '" + Printable(cmd).substr(0, 64) +
                                             "' (known: hello, list, show, rescan, status)"}});
    }
  }

  void OnSignal(const boost::system::error_code& ec, int sig) {
    if (ec || stopping_) return;
    if (sig == SIGHUP) {
      log_->info("SIGHUP: rescanning");
      Enqueue(Task{true, {}, nullptr});
      signals_.async_wait([this](const boost::system::error_code& e, int s) { OnSignal(e, s); });
      return;
    }
    Stop();
  }

  void SetCacheError(std::string why) {
    std::lock_guard<std::mutex> l(cache_error_mu_);
    cache_error_ = std::move(why);
  }
  std::string CacheError() const {
    std::lock_guard<std::mutex> l(cache_error_mu_);
    return cache_error_;
  }

  asio::io_context& io_;
  ServeLimits limits_;
  asio::steady_timer accept_backoff_;
  int accept_delay_ms_ = 0;                 // io thread only
  RateLimitedWarnings warn_limiter_;        // io thread only
  std::atomic<std::size_t> live_{0};        // open connections
  mutable std::mutex cache_error_mu_;       // leaf lock
  std::string cache_error_;                 // the last failed cache write ("" when the last one worked)
  std::vector<std::string> entries_;
  std::string socket_path_, cache_path_;
  std::string metrics_textfile_;            // --metrics-textfile ("" when not asked)
  RefreshOptions ropts_;
  int socket_gid_;
  stream_protocol::acceptor acceptor_;
  asio::posix::stream_descriptor inotify_;
  asio::steady_timer debounce_;
  asio::signal_set signals_;
  std::shared_ptr<spdlog::logger> log_;
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, plugin::PluginRecord> records_;  // worker thread only (after Start)
  uint64_t generation_ = 0;
  bool cache_written_ = false;
  bool serving_ = false;  // set before the worker thread starts; read by it
  std::map<int, std::string> watched_;  // io thread only
  std::array<char, 64 * 1024> ibuf_{};
  std::atomic<bool> stopping_{false};
  std::mutex qmu_;
  std::condition_variable qcv_;
  std::deque<Task> queue_;
  std::thread worker_;
};

}  // namespace

namespace {

int Registryd(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  std::string opp_path, socket_path, cache_path, log_level, socket_group, metrics_textfile;
  bool foreground = false, allow_insecure = false, vm_socket_given = false;
  ServeLimits limits;
  double timeout_s = kDefaultScanTimeoutS;
  int jobs = 2;
  po::options_description desc("Options", 110);  // as wide as the --help text around it
  desc.add_options()("help,h", "show this help and exit")("version", "print the version and exit")(
      "opp-path", po::value<std::string>(&opp_path), "':'-separated plugin files/folders (default: ASCEND_CUSTOM_OPP_PATH)")(
      "socket", po::value<std::string>(&socket_path), "Unix socket (default: $GE_PLUGIN_REGISTRY_SOCKET, $RUNTIME_DIRECTORY; as root "
      "/run/ge-plugin-registry/registry.sock, else $XDG_RUNTIME_DIR or /tmp; see Files)")(
      "cache", po::value<std::string>(&cache_path), "cache file (default: $GE_PLUGIN_REGISTRY_CACHE, $CACHE_DIRECTORY; as root "
      "/var/cache/ge-plugin-registry/registry.json, else $XDG_CACHE_HOME or ~/.cache; see Files)")(
      "foreground", po::bool_switch(&foreground), "do not detach (systemd, tests)")(
      "log-level", po::value<std::string>(&log_level), "trace, debug, info, warn, error, off (default: GE_LOG_LEVEL or warn)")(
      "timeout", po::value<double>(&timeout_s), "seconds a plugin may take to load (default 10)")(
      "jobs", po::value<int>(&jobs), "scanner processes in parallel (default 2)")(
      "socket-group", po::value<std::string>(&socket_group),
      "group that may connect (socket mode 0660; default: owner only, 0600)")(
      "allow-insecure", po::bool_switch(&allow_insecure),
      "load plugins writable by others or owned by another non-root user")(
      "max-connections", po::value<std::size_t>(&limits.max_connections),
      "client connections served at once; more are refused with an error (default 256)")(
      "idle-timeout", po::value<double>(&limits.idle_timeout_s),
      "seconds a connection may stay silent before it is closed (default 60)")(
      "metrics-textfile", po::value<std::string>(&metrics_textfile),
      "write the registry's Prometheus metrics to this file after every refresh (node-exporter textfile "
      "collector; name it *.prom)");
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv)
                  .options(desc)
                  .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
    vm_socket_given = vm.count("socket") > 0;
    if (vm.count("help")) {
      out << kHelpHead << "\n" << desc << kHelpTail;
      return 0;
    }
    if (vm.count("version")) {
      out << VersionLine("ge-plugin-registryd") << "\n";
      return 0;
    }
    if (limits.max_connections < 1 || limits.max_connections > 65536 || !(limits.idle_timeout_s > 0) ||
        !(limits.idle_timeout_s <= 86400)) {
      err << "ge-plugin-registryd: --max-connections must be in 1..65536 and --idle-timeout in (0, 86400]\n"
          << kUsage << "\n";
      return 2;
    }
    if (!(timeout_s > 0 && timeout_s <= kMaxScanTimeoutS) || jobs < 1 || jobs > 64) {
      err << "ge-plugin-registryd: --timeout must be in (0, 86400] seconds and --jobs in 1..64\n" << kUsage << "\n";
      return 2;
    }
    if (!ApplyLogLevelOption(log_level, "ge-plugin-registryd", err)) return 2;
  } catch (const po::error& e) {
    err << "ge-plugin-registryd: " << e.what() << "\n" << kUsage << "\n";
    return 2;
  }
  int gid = -1;
  if (!socket_group.empty()) {
    const group* g = ::getgrnam(socket_group.c_str());
    if (g == nullptr) {
      err << "ge-plugin-registryd: unknown --socket-group '" << socket_group << "'\n";
      return 2;
    }
    gid = static_cast<int>(g->gr_gid);
  }
  std::vector<std::string> entries;
  try {
    entries = OppEntries(opp_path);
  } catch (const std::runtime_error& e) {
    err << "ge-plugin-registryd: " << e.what() << "\n";
    return 2;
  }
  if (entries.empty()) {
    err << "ge-plugin-registryd: no opp path: give --opp-path or set ASCEND_CUSTOM_OPP_PATH\n" << kUsage << "\n";
    return 2;
  }
  if (vm_socket_given && socket_path.empty()) {
    err << "ge-plugin-registryd: --socket must not be empty\n" << kUsage << "\n";
    return 2;
  }
  // Socket activation (the systemd .socket unit) gives the socket: it wins
  // over --socket and the defaults.
  std::string activation_problem;
  const int inherited_fd = InheritedListenSocket(&socket_path, &activation_problem);
  if (!activation_problem.empty()) {
    err << "ge-plugin-registryd: " << activation_problem << "\n";
    return 1;
  }
  if (socket_path.empty()) socket_path = DaemonSocketPath();
  if (cache_path.empty()) {
    cache_path = DaemonCachePath();
    // Not fatal: the daemon serves from memory and says why in `status`.
    if (std::string why; cache_path == UserCachePath() && !EnsureUserCacheFolder(&why)) {
      Logger("registryd")->warn("{}", why);
    }
  }
  if (auto problem = SocketPathProblem(socket_path); problem && inherited_fd < 0) {
    err << "ge-plugin-registryd: " << *problem << "\n";
    return 1;
  }
  if (socket_path == UserSocketPath()) {
    // The per-user runtime folder: created 0700; one another user made (or
    // opened to others) is refused, so no one else can put a socket where
    // this user's clients look.
    const std::string folder = stdfs::path(socket_path).parent_path().string();
    std::string why;
    if (!EnsureFolder(folder, 0700, &why)) {
      err << "ge-plugin-registryd: " << why << "\n";
      return 1;
    }
    if (auto problem = PrivateFolderProblem(folder)) {
      err << "ge-plugin-registryd: cannot serve " << Printable(socket_path) << ": " << *problem << "\n";
      return 1;
    }
  }
  if (!metrics_textfile.empty()) {
    // The textfile is replaced on every refresh: naming one of the daemon's
    // own files would destroy it (the cache and its verdicts, or the socket).
    const auto same = [](const std::string& a, const std::string& b) {
      boost::system::error_code ec1, ec2;
      const auto ca = boost::filesystem::weakly_canonical(a, ec1);
      const auto cb = boost::filesystem::weakly_canonical(b, ec2);
      return !ec1 && !ec2 ? ca == cb : a == b;
    };
    for (const auto& [what, p] : {std::pair<std::string, std::string>{"the cache", cache_path},
                                  {"the cache's listing index", cache_path + ".list"},
                                  {"the socket", socket_path}}) {
      if (same(metrics_textfile, p)) {
        err << "ge-plugin-registryd: --metrics-textfile " << Printable(metrics_textfile) << " is " << what
            << " of this daemon; give the textfile a path of its own\n";
        return 2;
      }
    }
  }
  ::signal(SIGPIPE, SIG_IGN);

  int ready_pipe[2] = {-1, -1};
  if (!foreground) {
    // Detach; the parent exits once the socket is served (or reports failure).
    if (::pipe(ready_pipe) != 0) {
      err << "ge-plugin-registryd: pipe: " << std::strerror(errno) << "\n";
      return 1;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      err << "ge-plugin-registryd: fork: " << std::strerror(errno) << "\n";
      return 1;
    }
    if (pid > 0) {
      ::close(ready_pipe[1]);
      char c = 1;
      const ssize_t n = ::read(ready_pipe[0], &c, 1);
      return n == 1 && c == 0 ? 0 : 1;
    }
    ::close(ready_pipe[0]);
    ::setsid();
    const int nul = ::open("/dev/null", O_RDWR);
    if (nul >= 0) ::dup2(nul, STDIN_FILENO), ::dup2(nul, STDOUT_FILENO), ::close(nul);
  }
  // Block the handled signals before any thread starts: only asio sees them.
  sigset_t set;
  sigemptyset(&set);
  int rc = 0;
  {
    asio::io_context io;
    RefreshOptions ropts;
    ropts.allow_insecure = allow_insecure;
    ropts.scan.timeout_s = timeout_s;
    ropts.scan.jobs = jobs;
    ropts.scan.log_level = log_level;
    // One zygote for every refresh (registry/scan.h: restarted once if it dies).
    ropts.scan.zygote = std::make_shared<ScanZygote>();
    Daemon d(io, entries, socket_path, cache_path, ropts, gid, limits);
    d.inherited_fd = inherited_fd;
    if (!metrics_textfile.empty()) d.SetMetricsTextfile(metrics_textfile);
    std::string why;
    if (!d.Start(&why)) {
      err << "ge-plugin-registryd: " << why << "\n";
      rc = 1;
    } else {
      if (ready_pipe[1] >= 0) {
        const char ok = 0;
        (void)::write(ready_pipe[1], &ok, 1);
        ::close(ready_pipe[1]);
        ready_pipe[1] = -1;
      }
      NotifyReady("serving " + socket_path + ", " + std::to_string(d.state.Get()->order.size()) + " plugin(s)");
      io.run();
      d.Stop();
      d.Join();
    }
  }
  if (ready_pipe[1] >= 0) ::close(ready_pipe[1]);
  return rc;
}

}  // namespace

// No exception escapes the daemon: it logs and exits 1 (systemd restarts it),
// never aborts.
int RunRegistryd(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  int rc = 1;
  try {
    rc = Registryd(argc, argv, out, err);
  } catch (const std::exception& e) {
    err << "ge-plugin-registryd: error: " << Printable(e.what()) << "\n";
  }
  return FinishOutput("ge-plugin-registryd", out, err, rc);
}

}  // namespace ge::registry

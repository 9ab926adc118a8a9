// test_util.h: helpers shared by the Boost.Test suites (header only).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef GE_PYTHON_DIR
#include "ge/host/plugin_host.h"
#endif

namespace ge_test {

inline bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// What a test op returns to fail with details: `message` in the context's
// error slot, GRAPH_FAILED as the code.
inline ge::graphStatus FailWith(gert::ExtendedKernelContext& ctx, std::string message) {
  ctx.SetError(ge::Status::Error(std::move(message)));
  return ge::GRAPH_FAILED;
}

// A temporary folder, removed with everything in it when the object dies.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ge_test_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Writes `text` to `name` in the folder; returns the file's path.
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
  std::vector<std::string> List() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path)) names.push_back(e.path().filename().string());
    return names;
  }
};

#ifdef GE_PYTHON_DIR
// Host options for tests: exactly `paths` (no ASCEND_CUSTOM_OPP_PATH), the
// build tree's ge package, a short join timeout for leftover plugin threads.
inline ge::host::HostOptions HostTestOptions(std::vector<std::string> paths) {
  ge::host::HostOptions o;
  o.opp_paths = std::move(paths);
  o.use_env_opp_path = false;
  o.python_dir = GE_PYTHON_DIR;
  o.thread_join_timeout_s = 0.2;
  return o;
}

// True when the plugin report lists `op_type` among its ops.
inline bool HasOp(const ge::host::PluginReport& r, const std::string& op_type) {
  for (const auto& op : r.ops) {
    if (op.op_type == op_type) return true;
  }
  return false;
}
#endif

}  // namespace ge_test

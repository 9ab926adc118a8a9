// ge-plugin-scan: the out-of-process scanner child (internal tool).
//
// Reads plugin paths (each ending with a NUL byte) on stdin, loads each with
// a fresh ge::host::PluginHost in its declared isolation (an op library with
// dlopen; `--prototype-library PATH`, repeated: libraries whose prototypes
// the plugins may bind to) and streams, per
// plugin, a line {"begin": PATH} before loading it and its record
// (ge::plugin::ToJson) after; paths in the PathText spelling (scan.h). The
// parent (ge-plugin-registryd / ge-plugin-ls) enforces the time limit and turns
// a crash, hang or early exit into a verdict for the plugin being scanned.
// Results go to a private duplicate of stdout; fd 1 is pointed at stderr so
// that plugin output cannot forge result lines by printing.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem.hpp>
#include <nlohmann/json.hpp>

#include "ge/host/plugin_host.h"
#include "ge/log.h"
#include "ge/op/op_registry.h"
#include "ge/runtime/types.h"
#include "ge/plugin/record.h"
#include "ge/text.h"

using nlohmann::json;

namespace {

json AttrValueJson(const ge::AttrValue& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, ge::DataType>) {
          return ge::DataTypeName(x);
        } else if constexpr (std::is_same_v<T, std::vector<ge::DataType>>) {
          json a = json::array();
          for (auto d : x) a.push_back(ge::DataTypeName(d));
          return a;
        } else if constexpr (std::is_same_v<T, ge::TensorAttr>) {
          return nullptr;  // tensor attributes have no default (share/docs/plugin-authors.md, "The prototype")
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          json a = json::array();
          for (bool b : x) a.push_back(b);
          return a;
        } else {
          return json(x);
        }
      },
      v);
}

json SchemaJson(const ge::OpSchema& s) {
  json in = json::array(), out = json::array(), attrs = json::array();
  for (const auto& i : s.inputs) in.push_back({{"name", i.name}, {"kind", std::string(ge::IrInputKindName(i.kind))}});
  for (const auto& o : s.outputs) out.push_back({{"name", o.name}, {"kind", std::string(ge::IrOutputKindName(o.kind))}});
  for (const auto& a : s.attrs) {
    json j = {{"name", a.name}, {"type", std::string(ge::AttrTypeName(a.type))}, {"required", !a.default_value}};
    if (a.default_value) j["default"] = AttrValueJson(*a.default_value);
    attrs.push_back(j);
  }
  return {{"inputs", in}, {"outputs", out}, {"attrs", attrs}, {"signature", s.ToString()}};
}

// Version and description from the module source when pyproject.toml gives
// none: `__version__ = "..."` and the first line of the module docstring.
// Read statically (no code runs for it).
void SourceMetadata(const std::string& path, bool is_package, std::string& version, std::string& description) {
  const std::string file = is_package ? path + "/__init__.py" : path;
  boost::system::error_code ec;
  if (!boost::filesystem::is_regular_file(file, ec)) return;
  std::ifstream f(file);
  if (!f) return;
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.size() > (1u << 20)) text.resize(1u << 20);
  if (version.empty()) {
    static const std::regex kVer(R"((?:^|\n)__version__\s*(?::\s*str\s*)?=\s*['"]([^'"\n]{1,64})['"])");
    std::smatch m;
    if (std::regex_search(text, m, kVer)) version = m[1];
  }
  if (description.empty()) {
    std::size_t i = 0;
    while (i < text.size()) {  // skip blank and comment lines
      if (text[i] == '#') {
        while (i < text.size() && text[i] != '\n') ++i;
      } else if (std::isspace(static_cast<unsigned char>(text[i]))) {
        ++i;
      } else {
        break;
      }
    }
    if (i < text.size() && (text[i] == 'r' || text[i] == 'R')) ++i;
    for (const char* q : {"\"\"\"", "'''", "\"", "'"}) {
      const std::string qs(q);
      if (text.compare(i, qs.size(), qs) != 0) continue;
      std::size_t start = i + qs.size();
      std::size_t end = text.find(qs, start);
      if (end == std::string::npos) break;
      std::stringstream ss(text.substr(start, end - start));
      std::string line;
      while (std::getline(ss, line)) {
        const auto b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos) continue;
        description = line.substr(b);
        while (!description.empty() && std::isspace(static_cast<unsigned char>(description.back()))) description.pop_back();
        break;
      }
      break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Results on a private, high-numbered duplicate of stdout; fd 1 -> stderr.
  int res_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 200);
  if (res_fd < 0) res_fd = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  FILE* res = ::fdopen(res_fd, "w");
  if (res == nullptr) return 3;
  std::string log_level = "error";
  bool allow_insecure = false;
  std::vector<std::string> prototype_libraries;  // ScanOptions::prototype_libraries
  std::vector<std::pair<std::string, std::string>> failed_libraries;  // ScanOptions::failed_libraries
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--log-level" && i + 1 < argc) log_level = argv[i + 1];
    if (std::string(argv[i]) == "--allow-insecure") allow_insecure = true;
    if (std::string(argv[i]) == "--prototype-library" && i + 1 < argc) prototype_libraries.push_back(argv[++i]);
    if (std::string(argv[i]) == "--failed-library" && i + 2 < argc) {
      failed_libraries.emplace_back(argv[i + 1], argv[i + 2]);
      i += 2;
    }
  }
  if (auto lvl = ge::ParseLogLevel(log_level)) ge::SetLogLevel(*lvl);

  std::vector<std::string> paths;
  // Each path is loaded as an absolute path fixed before any plugin runs: a
  // plugin calling os.chdir must not change which file the next path names.
  // The paths the scanner is given are absolute; a relative one needs the
  // current directory, which may be gone (then it is kept as given, and its
  // load reports that it cannot be found).
  boost::system::error_code cwd_ec;
  const boost::filesystem::path start_dir = boost::filesystem::current_path(cwd_ec);
  // Python cannot start in a folder that is gone (the listing was run from a
  // deleted folder): the scan runs from / then; every path it loads is absolute.
  if (cwd_ec && ::chdir("/") != 0) std::cerr << "ge-plugin-scan: cannot change to /: " << std::strerror(errno) << "\n";
  auto absolute = [&](const std::string& p) {
    if (!p.empty() && p[0] == '/') return p;
    return cwd_ec ? p : boost::filesystem::absolute(p, start_dir).string();
  };
  for (std::string line; std::getline(std::cin, line, '\0');) {
    if (!line.empty()) paths.push_back(line);
  }
  // Main-interpreter plugins first (numpy must be loaded by the main
  // interpreter before any sub-interpreter exists; share/docs/host-design.md).
  // The isolation is read as the load reads it (PluginHost::DeclaredIsolation:
  // the pyproject.toml parsed with tomllib); a plugin whose pyproject.toml is
  // bad keeps its place, and its load reports the error.
  {
    std::vector<char> wants_main(paths.size(), 0);
    try {
      ge::OpRegistry ordering_registry;
      ge::host::HostOptions opts;
      opts.use_env_opp_path = false;
      opts.allow_insecure = allow_insecure;
      ge::host::PluginHost ordering(opts, ordering_registry);
      for (std::size_t i = 0; i < paths.size(); ++i) {
        try {
          wants_main[i] = ordering.DeclaredIsolation(absolute(paths[i])) == "main";
        } catch (const std::exception&) {
        }
      }
    } catch (const std::exception&) {
      // No Python runtime: every load below reports it.
    }
    std::vector<std::string> ordered;
    ordered.reserve(paths.size());
    for (int main_pass = 1; main_pass >= 0; --main_pass) {
      for (std::size_t i = 0; i < paths.size(); ++i) {
        if (wants_main[i] == main_pass) ordered.push_back(paths[i]);
      }
    }
    paths.swap(ordered);
  }

  auto emit = [&](const json& j) {
    const std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::fwrite(s.data(), 1, s.size(), res);
    std::fflush(res);
  };

  // Each plugin gets its own host and registry: conflicts are resolved by the
  // parent, in path order, over every plugin (also across scanner children).
  for (const auto& path : paths) {
    emit({{"begin", ge::PathText(path)}});
    ge::plugin::PluginRecord r;
    try {
      // The engine's built-in ops are there too, so that a plugin redefining
      // one is a conflict here as in ge-run.
      auto registry = std::make_unique<ge::OpRegistry>();
      if (ge::Status st = ge::RegisterBuiltinOps(*registry); !st.ok()) throw std::runtime_error(st.message());
      ge::host::HostOptions opts;
      opts.use_env_opp_path = false;
      opts.allow_insecure = allow_insecure;
      opts.prototype_libraries = prototype_libraries;
      opts.failed_libraries = failed_libraries;
      auto host = std::make_unique<ge::host::PluginHost>(opts, *registry);
      r = host->LoadPlugin(absolute(path));
      if (!r.op_library) {
        if (r.isolation.empty()) r.isolation = "subinterpreter";
        SourceMetadata(r.path, boost::filesystem::is_directory(r.path), r.version, r.description);
      }
      for (auto& op : r.ops) {
        if (auto reg = registry->Find(op.op_type)) op.prototype = SchemaJson(*reg->schema);
      }
      // Unloading ends the sub-interpreter (cheap, and memory stays flat) and
      // makes a main-interpreter plugin forget its modules before the next.
      host.reset();
    } catch (const std::exception& e) {
      r.status = ge::plugin::PluginStatus::kError;
      r.error.kind = "scan";
      r.error.message = std::string("scanner: ") + e.what();
    }
    r.path = path;  // answered as asked
    emit(ge::plugin::ToJson(r, /*with_detail=*/true));
  }
  std::fflush(res);
  std::fflush(stderr);
  ::_exit(0);  // no interpreter tear-down: the process ends here
}

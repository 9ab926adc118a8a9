// PlatformInfos: ini files through Boost.PropertyTree, and the measured host.
#include "ge/platform/platform_info.h"

#include <boost/property_tree/ini_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <dlfcn.h>
#include <fstream>
#include <sched.h>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#ifndef GE_LIB_TO_DATA
#define GE_LIB_TO_DATA "../share/ge-plugin"
#endif

namespace ge {

PlatformInfos PlatformInfos::LoadIni(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw PlatformError("platform config " + path + " does not exist");
  if (!S_ISREG(st.st_mode)) throw PlatformError("platform config " + path + " is not a regular file");
  boost::property_tree::ptree tree;
  try {
    boost::property_tree::ini_parser::read_ini(path, tree);
  } catch (const boost::property_tree::ini_parser_error& e) {
    throw PlatformError("platform config " + path + " is malformed: " + e.message() + " (line " +
                        std::to_string(e.line()) + ")");
  }
  PlatformInfos p;
  p.source_ = path;
  for (const auto& [section, body] : tree) {
    if (body.empty() && !body.data().empty()) {
      throw PlatformError("platform config " + path + ": key '" + section + "' is outside any [section]");
    }
    Group g;
    for (const auto& [key, value] : body) g[key] = value.get_value<std::string>();
    p.groups_[section] = std::move(g);
  }
  if (!p.Get("version", "SoC_version")) {
    throw PlatformError("platform config " + path + " has no [version] SoC_version");
  }
  return p;
}

PlatformInfos PlatformInfos::Host() {
  PlatformInfos p;
  p.source_ = "measured from this machine";
  cpu_set_t set;
  long cores = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  if (cores <= 0) cores = static_cast<long>(std::thread::hardware_concurrency());
  if (cores <= 0) cores = 1;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  std::string model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  const std::string n = std::to_string(cores);
  p.groups_["version"] = {{"SoC_version", "host"}, {"Short_SoC_version", "host"}, {"cpu_model", model}};
  p.groups_["SoCInfo"] = {{"ai_core_cnt", n},          {"vector_core_cnt", n},
                          {"cube_core_cnt", "0"},      {"ai_cpu_cnt", n},
                          {"core_type_list", "AiCore,VectorCore"},
                          {"memory_type", "DRAM"},
                          {"memory_size", std::to_string(static_cast<long long>(pages) * page)}};
  return p;
}

PlatformInfos PlatformInfos::ForSoc(const std::string& soc, const std::string& platform_dir) {
  if (soc == "host") return Host();
  if (soc.empty() || soc.find('/') != std::string::npos || soc.find("..") != std::string::npos) {
    throw PlatformError("bad SoC name '" + soc + "'");
  }
  return LoadIni(platform_dir + "/" + soc + ".ini");
}

std::optional<std::string> PlatformInfos::Get(const std::string& group, const std::string& key) const {
  auto g = groups_.find(group);
  if (g == groups_.end()) return std::nullopt;
  auto k = g->second.find(key);
  if (k == g->second.end()) return std::nullopt;
  return k->second;
}

std::optional<PlatformInfos::Group> PlatformInfos::GetGroup(const std::string& group) const {
  auto g = groups_.find(group);
  if (g == groups_.end()) return std::nullopt;
  return g->second;
}

std::string PlatformInfos::SocVersion() const { return Get("version", "SoC_version").value_or(""); }

std::optional<int64_t> PlatformInfos::CoreNum(const std::string& core_type) const {
  static const std::map<std::string, std::string> kKeys{
      {"AiCore", "ai_core_cnt"}, {"VectorCore", "vector_core_cnt"}, {"CubeCore", "cube_core_cnt"}, {"AiCpu", "ai_cpu_cnt"}};
  auto k = kKeys.find(core_type);
  if (k == kKeys.end()) return std::nullopt;
  auto v = Get("SoCInfo", k->second);
  if (!v) return std::nullopt;
  try {
    std::size_t used = 0;
    const long long n = std::stoll(*v, &used);
    if (used != v->size() || n < 0) return std::nullopt;
    return n;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string PlatformInfos::DefaultCoreType() const {
  auto list = Get("SoCInfo", "core_type_list");
  if (!list || list->empty()) return "AiCore";
  return list->substr(0, list->find(','));
}

std::string DefaultPlatformDir() {
  if (const char* env = std::getenv("GE_PLATFORM_DIR")) return env;
  // Installed: relative to this library (<libdir>/<GE_LIB_TO_DATA>/platform).
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&DefaultPlatformDir), &info) != 0 && info.dli_fname != nullptr) {
    std::string lib(info.dli_fname);
    const std::string libdir = lib.substr(0, lib.rfind('/'));
    for (const std::string& rel : {std::string(GE_LIB_TO_DATA) + "/platform", std::string("../share/platform")}) {
      struct stat st {};
      const std::string cand = libdir + "/" + rel;
      if (::stat(cand.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return cand;
    }
  }
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    buf[n] = '\0';
    std::string exe(buf);
    const std::string dir = exe.substr(0, exe.rfind('/'));
    for (const char* rel : {"/../share/platform", "/../share/ge-plugin/platform"}) {
      struct stat st {};
      if (::stat((dir + rel).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return dir + rel;
    }
  }
  return "share/platform";
}

}  // namespace ge

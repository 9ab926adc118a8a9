// ge/platform/platform_info.h: PlatformInfos, the description of a target SoC.
//
// Read from share/platform/<SoC>.ini (sections such as [version], [SoCInfo],
// [AICoreSpec]; keys such as SoC_version, ai_core_cnt, vector_core_cnt) with
// Boost.PropertyTree, or measured from this machine for the `host` platform.
// Immutable value; safe to share between threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

namespace ge {

class PlatformError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class PlatformInfos {
 public:
  using Group = std::map<std::string, std::string>;

  // Parses an ini file. Throws PlatformError naming the file (and line) when it
  // is missing, unreadable, malformed, or lacks [version] SoC_version.
  static PlatformInfos LoadIni(const std::string& path);
  // `host`: measured from this machine (cores from the scheduler affinity mask,
  // memory from sysconf, the CPU model from /proc/cpuinfo); any other name is
  // `<platform_dir>/<soc>.ini`. Throws PlatformError.
  static PlatformInfos ForSoc(const std::string& soc, const std::string& platform_dir);
  static PlatformInfos Host();

  std::optional<std::string> Get(const std::string& group, const std::string& key) const;
  // Copy of one section; nullopt when absent.
  std::optional<Group> GetGroup(const std::string& group) const;
  const std::map<std::string, Group>& Groups() const noexcept { return groups_; }

  std::string SocVersion() const;  // [version] SoC_version
  // Core count of a core type: "AiCore" -> [SoCInfo] ai_core_cnt, "VectorCore"
  // -> vector_core_cnt, "CubeCore" -> cube_core_cnt, "AiCpu" -> ai_cpu_cnt.
  // nullopt when the type or key is unknown or not a number.
  std::optional<int64_t> CoreNum(const std::string& core_type) const;
  // The default core type: the first of [SoCInfo] core_type_list ("AiCore").
  std::string DefaultCoreType() const;
  const std::string& Source() const noexcept { return source_; }

 private:
  std::map<std::string, Group> groups_;
  std::string source_;
};

// Where the platform configs live: GE_PLATFORM_DIR, else relative to
// libge_plugin_framework.so (<datadir>/ge-plugin/platform when installed,
// ../share/platform in a build tree), else next to the running executable.
std::string DefaultPlatformDir();

}  // namespace ge

// ge-plugin-worker: the process a plugin of isolation "process" runs in (internal; started by the engine's host).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "library_probe.h"
#include "process_worker.h"

int main(int argc, char** argv) {
  // An op library loaded alone before the host loads it (library_probe.h):
  // the result goes to descriptor 3.
  if (argc == 3 && std::string(argv[1]) == "--probe-op-library") return ge::host::RunLibraryProbe(argv[2], 3);
  const std::string prefix = "--channel-fd=";
  if (argc < 2 || std::string(argv[1]).rfind(prefix, 0) != 0) {
    std::fprintf(stderr, "ge-plugin-worker: internal tool of the plugin host; usage: ge-plugin-worker --channel-fd=N | --probe-op-library PATH\n");
    return 2;
  }
  char* end = nullptr;
  const long fd = std::strtol(argv[1] + prefix.size(), &end, 10);
  if (end == nullptr || *end != '\0' || fd < 0) {
    std::fprintf(stderr, "ge-plugin-worker: --channel-fd takes a descriptor number, got '%s'\n", argv[1] + prefix.size());
    return 2;
  }
  return ge::host::RunWorker(static_cast<int>(fd), std::vector<std::string>(argv + 2, argv + argc));
}

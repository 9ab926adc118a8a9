// ge-plugin-ls: list installed plugins, their ops, capabilities and status.
#include <unistd.h>

#include <iostream>

#include "plugin_ls.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  return ge::registry::RunPluginLs(argc, argv, std::cout, std::cerr, ::isatty(STDOUT_FILENO) != 0,
                                   ::isatty(STDERR_FILENO) != 0);
}

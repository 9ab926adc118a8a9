// plugin_ls.h: ge-plugin-ls as a library function.
#pragma once

#include <ostream>

namespace ge::registry {

// Lists installed plugins (daemon, else a fresh cache, else a scan of its
// own). Exit codes: 0 success; 1 problems found where asked (--check found
// problems, --rescan refused or failed, --op/--status matched nothing) or a
// runtime error; 2 usage error. `out_is_tty` enables colour and progress.
int RunPluginLs(int argc, const char* const* argv, std::ostream& out, std::ostream& err, bool out_is_tty,
                bool err_is_tty);

}  // namespace ge::registry

// cache_write.h: the registry cache and its listing index, write side, and
// the warm-listing fast path. The read side (format, validation) is the
// core's: ge/plugin/cache.h.
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ge/plugin/record.h"

namespace ge::registry {

// Writes the cache atomically (WriteFileDurably): every record with its detail.
bool SaveCache(const std::string& path, const std::vector<std::string>& entries,
               const std::map<std::string, plugin::PluginRecord>& records, std::string* why);

// ---- the listing index (<cache>.list) ------------------------------------------------------
// A line-oriented companion of the cache for the warm `ge-plugin-ls --json`
// path: a header, the cache file's identity, the opp path, then per plugin
// its path and stamp, then the `plugins` JSON array as ge-plugin-ls prints it
// (one line), then a checksum line (share/docs/registry.md, "The listing index"). Written
// atomically after each refresh (by ge-plugin-ls and by the daemon); never
// trusted when stale, edited, cut or reordered.
bool SaveListIndex(const std::string& cache_path, const std::vector<std::string>& entries,
                   const std::vector<plugin::PluginRecord>& ordered, std::string* why);
// A fresh listing index: the index text as read and where its `plugins`
// array (checked) is in it. The array is written from the text read, with
// one write, never copied first (1000 plugins: a third of a megabyte).
struct FreshListing {
  std::string text;              // the index file's bytes (owned)
  std::size_t array_offset = 0;  // the `plugins` JSON array: text[array_offset, +array_size)
  std::size_t array_size = 0;
  // Writes the `plugins` JSON array as written in the index. Errors are the
  // stream's (its state), as for any output.
  void WriteArray(std::ostream& out) const;
};
// The listing when the index is fresh for `entries`: the same plugins are
// discovered, each with the same stamp, none is insecure (unless
// allow_insecure), and discovery finds no problem. nullopt otherwise.
std::optional<FreshListing> FreshListJson(const std::string& cache_path, const std::vector<std::string>& entries,
                                          bool allow_insecure);

// Writes `text` to `path` as durably as a file can be: a temporary file in the
// same folder, fsync, rename over `path`, fsync of the folder. Readers see the
// old file or the new one, never a part.
bool WriteFileDurably(const std::string& path, const std::string& text, std::string* why);

}  // namespace ge::registry

// ge/engine/npy.h: reading and writing NumPy .npy files (format versions 1-3).
//
// Our own small codec: the format is a fixed magic, a Python-literal header dict
// and raw C-order data (numpy's NEP 1 / format.py documentation); no Debian
// package offers a C++ reader. Little-endian, C order only; anything else is a
// clear error naming the file.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "ge/runtime/tensor.h"

namespace ge {

class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads `path` into an owned tensor. `expected` (when known) resolves the dtype
// of byte-typed files (bfloat16 is stored as 2-byte void). Throws NpyError.
Tensor ReadNpy(const std::filesystem::path& path, std::optional<DataType> expected = std::nullopt);

// Writes `t` (must have host data) to `path` directly (callers wanting
// atomicity write to a temporary name and rename). Throws NpyError.
void WriteNpy(const std::filesystem::path& path, const Tensor& t);

}  // namespace ge

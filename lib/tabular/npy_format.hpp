// NumPy .npy v1.0 headers (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
// written for the outputs and the vocabularies, read back for --vocab-from; and .npz archives.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/file_io.hpp"

namespace dlprep::tabular {

/// The .npy header (magic, version 1.0, dict, padding) for a C-order array of dtype `descr`
/// (e.g. "<f4") with `rows` rows and `cols` columns (cols 0: a 1-D array). Its length is a
/// multiple of 64, so the data that follows is 64-byte aligned.
std::string npy_header(const char* descr, uint64_t rows, uint32_t cols);
/// The same for an array of any shape (an image: height, width, channels).
std::string npy_header(const char* descr, const std::vector<uint64_t>& shape);

/// An .npz file (numpy.load's format: a zip archive of .npy files) holding `arrays`, each a name
/// (without ".npy") and a whole .npy file, stored uncompressed, as numpy.savez writes them.
/// Throws Error(limit_exceeded) beyond the 4 GiB of a zip without its 64-bit extension.
std::string npz_archive(const std::vector<std::pair<std::string, std::string>>& arrays);

/// A 1-D or 2-D array read from a .npy file: its dtype string, shape and raw little-endian data.
struct NpyArray {
  std::string descr;
  uint64_t rows = 0;
  uint32_t cols = 0;  ///< 0 for a 1-D array
  std::vector<uint8_t> data;
};

/// Parses the bytes of a .npy v1/v2/v3 file written in C order. Throws Error(corrupt_data) whose
/// message starts with `name`.
NpyArray parse_npy(ByteSpan bytes, const std::string& name);
/// Reads a .npy file. Throws Error(io|corrupt_data) naming the file.
NpyArray read_npy(const std::filesystem::path& path);

}  // namespace dlprep::tabular

// Sizes as shell users already write them for dd, split -b, sort -S and truncate (GNU's SIZE),
// with which Slurm's --mem and Docker's --memory agree for the bare letters: K, M, G, T are
// powers of 1024; kB, MB, GB, TB powers of 1000; KiB .. TiB (or Ki .. Ti) powers of 1024; B is
// bytes. Letters in any case. One rule for every size dlprep takes (--shards, --max-memory,
// --storage-bw), so that the same text never means two sizes.
#pragma once

#include <optional>
#include <string_view>

namespace dlprep {

struct ByteSize {
  double number = 0;                              ///< as written: 1.5 for "1.5G"
  double unit = 1;                                ///< bytes per unit: 1 for a bare number and for B
  bool unit_given = false;                        ///< false for a bare number
  double bytes() const { return number * unit; }  ///< not rounded
};

/// Parses "1.5G", "500MB", "64KiB", "4096B", "65536", "2e8". Returns nullopt for anything else:
/// no number, an unknown unit, a negative, NaN or infinite value. Callers word their own errors
/// (which option, what a valid size looks like there).
std::optional<ByteSize> parse_byte_size(std::string_view text);

}  // namespace dlprep

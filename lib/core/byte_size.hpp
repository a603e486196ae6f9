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
  double bytes = 0;         ///< the number times its unit, not rounded (1.0005kB: 1000.5)
  bool unit_given = false;  ///< false for a bare number
};

/// Parses "1.5G", "500MB", "64KiB", "4096B", "65536", "2e8". Returns nullopt for anything else:
/// no number, an unknown unit, a negative (-0 too), NaN or infinite value, a fraction of a byte
/// ("1.5", "1.5B": a unit left out, rather than bytes to round). Callers word their own errors
/// (which option, what a valid size looks like there).
std::optional<ByteSize> parse_byte_size(std::string_view text);

}  // namespace dlprep

// The CRC-32 that a dataset's index records for every stored file (the gzip/zlib polynomial, so
// `python3 -c "import zlib; print(hex(zlib.crc32(open(f,'rb').read())))"` checks it). One
// implementation file is built: crc32_isal.cpp (ISA-L's carry-less-multiply CRC, ~10x zlib's on a
// 6 MB BMP, where zlib's cost 4% of a PNG -> BMP conversion) or crc32_zlib.cpp.
#pragma once

#include <cstdint>

#include "core/file_io.hpp"

namespace dlprep::dataset {

/// CRC-32 (gzip/zlib) of bytes; 0 for none.
uint32_t crc32_of(ByteSpan bytes);

}  // namespace dlprep::dataset

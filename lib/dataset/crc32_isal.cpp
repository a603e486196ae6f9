// crc32_of through ISA-L (libisal), which picks its fastest kernel (PCLMUL, VPCLMUL) at run time.
#include <isa-l/crc.h>

#include "dataset/crc32.hpp"

namespace dlprep::dataset {

uint32_t crc32_of(ByteSpan bytes) { return crc32_gzip_refl(0, bytes.data(), bytes.size()); }

}  // namespace dlprep::dataset

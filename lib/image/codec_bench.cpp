// Placeholder until the benchmark lands: fails loudly rather than reporting anything.
#include "image/codec_bench.hpp"

#include "core/error.hpp"

namespace dlprep::image {

CodecBenchReport run_codec_bench(const std::vector<Image>&, const CodecBenchParams&) {
  throw Error(Errc::internal, "codec benchmark not implemented yet");
}

}  // namespace dlprep::image

// The probes of profile-mix: a deterministic sample of a dataset, and what one image of each
// candidate format costs on disk and in decode CPU time, measured on that sample.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "core/file_io.hpp"
#include "core/image.hpp"
#include "core/timing.hpp"
#include "dataset/sample_source.hpp"
#include "dataset/target_spec.hpp"
#include "image/transform.hpp"
#include "profile/mix_optimizer.hpp"

namespace dlprep::profile {

/// One image of the sample, decoded once.
struct SampleImage {
  std::filesystem::path path;  ///< the source file, or SHARD(MEMBER) for a tar member
  std::string source_format;   ///< codec name of the source file
  Bytes source_bytes;          ///< the file as stored (reused when the target is its format)
  Image image;
  bool converted = false;  ///< its channels were changed (--channels rgb): never reused as is
};

/// Up to `count` source samples (files, or tar members of a tar-layout dataset) of a dlprep
/// dataset or image directory (anything SampleSource takes), evenly spaced over its
/// enumeration order: the same on every run. Throws Error(io), or Error(invalid_argument) when
/// there is no image. With `recorded`, a dlprep dataset's samples that stand for all of them as
/// its index records them: the first of each channel count, and the one with the largest side
/// (what a format may not store; empty for other sources).
std::vector<dataset::SourceEntry> select_sample(
    const std::filesystem::path& dataset, size_t count,
    std::vector<dataset::SourceEntry>* recorded = nullptr);

/// Reads and decodes the samples on `threads` threads, into the channels convert-dataset would
/// give them (image::Channels). Throws Error naming the file.
std::vector<SampleImage> load_sample(const std::vector<dataset::SourceEntry>& files,
                                     unsigned threads, image::Channels channels);

/// One candidate format measured on the sample.
struct ProbedFormat {
  FormatCost cost;
  std::string extension;      ///< file extension its files get
  std::vector<Bytes> files;   ///< the sample encoded in this format, in sample order
};

/// Encodes the sample in `target` (on `threads` threads; a source already in the format without
/// explicit options is used as is, as convert-dataset does), checks that lossless formats decode
/// back to the same pixels, and measures the decode CPU time of each file on one thread: CPU
/// seconds of the calling thread (robust to neighbours on a shared machine), after the untimed
/// check decode `timing.warmup` more untimed runs, then the median of `timing.repeats`. Throws Error(unsupported) for a codec not
/// built in, Error(internal) when a lossless round trip differs.
ProbedFormat probe_format(const std::vector<SampleImage>& sample, const dataset::TargetSpec& target,
                          unsigned threads, const TimingParams& timing);

}  // namespace dlprep::profile

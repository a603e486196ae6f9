// Per-format cost probes: bytes per image and decode CPU-seconds per image on a sample.
#include "profile/probe.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "dataset/sample_source.hpp"
#include "image/codec.hpp"

namespace dlprep::profile {

std::vector<dataset::SourceEntry> select_sample(const std::filesystem::path& dataset, size_t count,
                                                std::vector<dataset::SourceEntry>* recorded) {
  if (count == 0) throw Error(Errc::invalid_argument, "the sample needs at least one image");
  dataset::SampleSource source(dataset);
  // Paths only (tens of bytes each; the key and label are dropped): a listing of even millions
  // of samples fits, and it is what the evenly spaced choice needs.
  std::vector<dataset::SourceEntry> all;
  std::map<uint32_t, dataset::SourceEntry> by_channels;
  std::optional<dataset::SourceEntry> largest;
  source.for_each([&](dataset::SourceEntry&& e) {
    if (!e.named && !dataset::is_image_candidate(e.path)) return;
    if (recorded && e.shape.channels != 0) {
      by_channels.try_emplace(e.shape.channels, e);
      const auto side = [](const dataset::SourceEntry& s) {
        return std::max(s.shape.width, s.shape.height);
      };
      if (!largest || side(e) > side(*largest)) largest = e;
    }
    e.key.clear();
    e.label.clear();
    all.push_back(std::move(e));
  });
  if (all.empty()) throw Error(Errc::invalid_argument, dataset.string() + ": no image files found");
  if (recorded) {
    recorded->clear();
    for (auto& [channels, e] : by_channels) recorded->push_back(std::move(e));
    if (largest) recorded->push_back(std::move(*largest));
  }
  if (all.size() <= count) return all;
  std::vector<dataset::SourceEntry> picked;
  picked.reserve(count);
  // The middle of each of `count` equal stretches: spread over classes in ImageFolder order.
  for (size_t k = 0; k < count; ++k) picked.push_back(all[(2 * k + 1) * all.size() / (2 * count)]);
  return picked;
}

std::vector<SampleImage> load_sample(const std::vector<dataset::SourceEntry>& files,
                                     unsigned threads, image::Channels channels) {
  image::Transform transform;
  transform.channels = channels;
  std::vector<SampleImage> sample(files.size());
  parallel_for(files.size(), threads, [&](size_t i) {
    SampleImage& s = sample[i];
    std::string name = dataset::source_name(files[i]);
    s.path = name;
    Bytes buffer;
    dataset::SourceBytes source(files[i], buffer);
    s.source_bytes.assign(source.bytes().begin(), source.bytes().end());
    try {
      const image::Codec* codec = &image::sniff_codec_or_throw(s.source_bytes);
      s.source_format = std::string(codec->name());
      s.image = codec->decode(s.source_bytes);
      s.converted = image::apply_transform(transform, s.image);
    } catch (const Error& e) {
      throw e.with_context(name);
    }
  });
  return sample;
}

ProbedFormat probe_format(const std::vector<SampleImage>& sample, const dataset::TargetSpec& target,
                          unsigned threads, const TimingParams& timing) {
  const image::Codec* codec = image::find_codec(target.format);
  if (!codec) throw Error(Errc::unsupported, target.format + ": codec not built into dlprep");
  ProbedFormat out;
  out.cost.format = std::string(codec->name());
  out.cost.spec = target.text;
  out.extension = codec->extension(sample.empty() ? 3 : sample.front().image.channels());
  out.files.resize(sample.size());
  parallel_for(sample.size(), threads, [&](size_t i) {
    const SampleImage& s = sample[i];
    // What convert-dataset refuses (webp and gray images) is no candidate for this dataset.
    if (!codec->round_trips(s.image.channels()))
      throw Error(Errc::unsupported, s.path.string() + " as " + target.text + ": " +
                                         dataset::cannot_store(*codec, s.image.channels()));
    if (s.source_format == out.cost.format && !target.has_options && !s.converted) {
      out.files[i] = s.source_bytes;  // convert-dataset copies such a file byte for byte
    } else {
      try {
        out.files[i] = codec->encode(s.image, target.options);
      } catch (const Error& e) {
        throw e.with_context(s.path.string() + " as " + target.text);
      }
    }
  });

  double bytes = 0, cpu = 0;
  for (size_t i = 0; i < sample.size(); ++i) {
    const Bytes& file = out.files[i];
    bytes += static_cast<double>(file.size());
    // Untimed check first: a figure is only reported for output that is right.
    Image decoded = codec->decode(file);
    const Image& ref = sample[i].image;
    // Lossy settings (jpeg, webp:QUALITY) are not expected to give the pixels back.
    if (dataset::is_lossless(target) &&
        (!(decoded.shape() == ref.shape()) ||
         std::memcmp(decoded.data(), ref.data(), ref.size_bytes()) != 0))
      throw Error(Errc::internal, sample[i].path.string() + ": " + target.text +
                                      " did not decode back to the same pixels");
    TimingStats stats = measure_self_timed(timing, [&](bool) {
      double start = thread_cpu_seconds();
      Image img = codec->decode(file);
      double used = thread_cpu_seconds() - start;
      if (img.empty()) throw Error(Errc::internal, "decoder returned an empty image");
      return used;
    });
    cpu += stats.median_s;
  }
  double n = static_cast<double>(std::max<size_t>(sample.size(), 1));
  out.cost.bytes_per_image = bytes / n;
  out.cost.decode_cpu_s_per_image = cpu / n;
  return out;
}

}  // namespace dlprep::profile

// The codec benchmark (method in codec_bench.hpp and tests/bench/RESULTS.md). Outline:
//   for each codec spec: encode passes (warm-up + timed), keeping the first pass's files;
//   decode passes of those files (warm-up + timed), each output checked before its time counts;
//   then the size and speed ratios against png:6 of the same run.
#include "image/codec_bench.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "core/error.hpp"
#include "core/timing.hpp"
#include "image/codec.hpp"
#include "l3/l3.hpp"

namespace dlprep::image {
namespace {

constexpr double kMB = 1e6;  // MB/s are 10^6 raw pixel bytes per second

/// A parsed codec spec.
struct Spec {
  std::string canonical;  ///< the row's codec name, e.g. "png:6" (without "@patches")
  std::string key;        ///< canonical + "@patches" for the patch-parallel mode: unique per row
  const Codec* codec = nullptr;  ///< nullptr for memcpy and source
  EncodeOptions options;
  bool lossless = true;
  bool patches = false;  ///< l3@patches: one image at a time, threads over its patches
  bool is_png6 = false;
  bool source = false;  ///< the input files as they are: decoded by their own codec, never encoded
  bool is_memcpy() const { return !codec && !source; }
};

std::string built_codec_names(const std::vector<const Codec*>& extra) {
  std::string s;
  for (const Codec* c : extra) s += std::string(c->name()) + " ";
  for (const Codec* c : all_codecs()) s += std::string(c->name()) + " ";
  if (find_codec("webp")) s += "webp-lossless webp-lossy ";
  return s + "memcpy source";
}

Spec parse_spec(const std::string& text, const std::vector<const Codec*>& extra) {
  auto bad = [&](const std::string& why) {
    return Error(Errc::invalid_argument, "codec spec '" + text + "': " + why);
  };
  std::string s = text;
  Spec spec;
  constexpr std::string_view kPatches = "@patches";
  if (s.size() > kPatches.size() && s.ends_with(kPatches)) {
    spec.patches = true;
    s.resize(s.size() - kPatches.size());
  }
  std::string name = s;
  std::optional<int> arg;
  if (auto colon = s.find(':'); colon != std::string::npos) {
    name = s.substr(0, colon);
    const std::string num = s.substr(colon + 1);
    int v = 0;
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (num.empty() || ec != std::errc() || ptr != num.data() + num.size())
      throw bad("'" + num + "' is not a number");
    arg = v;
  }
  if (name.empty()) throw bad("no codec name");

  if (name == "memcpy") {
    if (arg || spec.patches) throw bad("memcpy takes no options");
    spec.canonical = spec.key = "memcpy";
    return spec;
  }
  if (name == "source") {
    if (arg || spec.patches) throw bad("source takes no options");
    spec.canonical = spec.key = "source";
    spec.source = true;
    return spec;
  }
  const bool webp_lossy = name == "webp-lossy", webp_lossless = name == "webp-lossless";
  if (name == "webp" && arg)
    throw bad("ambiguous: write webp-lossless:" + std::to_string(*arg) + " for lossless effort " +
              std::to_string(*arg) + ", or webp-lossy:" + std::to_string(*arg) + " for quality " +
              std::to_string(*arg) + " (what convert-dataset's webp:" + std::to_string(*arg) +
              " is)");
  const Codec* codec = nullptr;
  for (const Codec* c : extra)
    if (c->name() == name) codec = c;
  if (!codec) codec = find_codec(webp_lossy || webp_lossless ? "webp" : name);
  if (!codec)
    throw Error(Errc::invalid_argument, "unknown codec '" + name + "' in '" + text +
                                            "' (this build has: " + built_codec_names(extra) + ")");
  spec.codec = codec;
  const std::string cname(codec->name());
  auto in_range = [&](int lo, int hi, const char* what) {
    if (*arg < lo || *arg > hi)
      throw bad(std::string(what) + " must be " + std::to_string(lo) + " to " + std::to_string(hi));
  };
  if (spec.patches && cname != "l3") throw bad("@patches applies to l3 only");
  if (webp_lossy) {
    spec.options.lossless = false;
    if (arg) in_range(1, 100, "webp quality");
    spec.options.quality = arg.value_or(90);
    spec.canonical = "webp-lossy:" + std::to_string(spec.options.quality);
  } else if (cname == "png") {
    if (arg) in_range(0, 9, "png level");
    spec.options.level = arg.value_or(6);
    spec.canonical = "png:" + std::to_string(spec.options.level);
    spec.is_png6 = spec.options.level == 6 && std::find(extra.begin(), extra.end(), codec) == extra.end();
  } else if (cname == "jpeg") {
    if (arg) in_range(1, 100, "jpeg quality");
    spec.options.quality = arg.value_or(90);
    spec.canonical = "jpeg:" + std::to_string(spec.options.quality);
  } else if (cname == "webp") {
    if (arg) in_range(0, 9, "webp effort");
    spec.options.level = arg.value_or(-1);
    spec.canonical = arg ? "webp-lossless:" + std::to_string(*arg) : "webp";
  } else if (cname == "l3") {
    // Checked here, not by the first image's encode as if that image were at fault.
    if (arg && (*arg < 8 || *arg > 256 || (*arg & (*arg - 1)) != 0))
      throw bad("l3 patch size must be a power of two from 8 to 256");
    spec.options.patch = arg.value_or(0);
    spec.canonical = arg ? "l3:" + std::to_string(*arg) : "l3";
  } else {
    // Other registry codecs (bmp, ppm) and extra codecs: an optional level, passed through.
    if (arg) spec.options.level = *arg;
    spec.canonical = arg ? cname + ":" + std::to_string(*arg) : cname;
  }
  spec.key = spec.canonical + (spec.patches ? "@patches" : "");
  spec.lossless = codec->lossless() && spec.options.lossless;
  return spec;
}

/// The time of one encode or decode: on the monotonic clock, and in CPU seconds.
struct ItemTime {
  double wall = 0;
  double cpu = 0;
};

/// Times one call both ways: the CPU time of this thread, or of the whole process when the codec
/// spreads the work over its own threads (l3@patches; only one image is in flight then).
template <class F>
ItemTime time_item(bool process_cpu, F&& f) {
  const double cpu0 = process_cpu ? process_cpu_seconds() : thread_cpu_seconds();
  Stopwatch sw;
  f();
  const double wall = sw.seconds();
  const double cpu1 = process_cpu ? process_cpu_seconds() : thread_cpu_seconds();
  return {wall, std::max(0.0, cpu1 - cpu0)};
}

/// What a pass over the set took.
struct PassTime {
  double wall = 0;  ///< the busiest thread's summed item wall seconds
  double cpu = 0;   ///< CPU seconds of all items, summed over the threads
};

/// The threads of one benchmark row, started once so that the warm-up warms the very threads that
/// are timed (their malloc arenas, thread_local codec handles). pass() runs item(i) for every image,
/// each thread taking the next image when free, and returns the busiest thread's summed item wall
/// seconds and the CPU seconds of all items (item() returns what it timed; what it does after its
/// timer stops, such as checking the output, is not counted). The first exception stops the pass
/// and is rethrown by pass().
class Workers {
 public:
  Workers(unsigned threads, size_t count) : count_(count) {
    const size_t n = std::min<size_t>(std::max(1u, threads), std::max<size_t>(1, count));
    busy_.resize(n);
    cpu_.resize(n);
    try {
      for (size_t w = 1; w < n; ++w) pool_.emplace_back([this, w] { loop(w); });
    } catch (...) {  // no thread left behind joinable (std::terminate) if one cannot start
      stop_all();
      throw;
    }
  }
  ~Workers() { stop_all(); }
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  PassTime pass(const std::function<ItemTime(size_t)>& item) {
    {
      std::lock_guard lock(mutex_);
      item_ = &item;
      next_ = 0;
      failed_ = false;
      first_error_ = nullptr;
      std::fill(busy_.begin(), busy_.end(), 0.0);
      std::fill(cpu_.begin(), cpu_.end(), 0.0);
      running_ = pool_.size();
      ++generation_;
    }
    start_.notify_all();
    work(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
    item_ = nullptr;
    if (first_error_) std::rethrow_exception(first_error_);
    PassTime t;
    t.wall = *std::max_element(busy_.begin(), busy_.end());
    for (double c : cpu_) t.cpu += c;
    return t;
  }

 private:
  void stop_all() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    for (auto& t : pool_) t.join();
  }
  void loop(size_t w) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        start_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      work(w);
      {
        std::lock_guard lock(mutex_);
        --running_;
      }
      done_.notify_one();
    }
  }
  void work(size_t w) {
    for (;;) {
      const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= count_ || failed_.load(std::memory_order_relaxed)) return;
      try {
        const ItemTime t = (*item_)(i);
        busy_[w] += t.wall;
        cpu_[w] += t.cpu;
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!first_error_) first_error_ = std::current_exception();
        failed_ = true;
      }
    }
  }

  const size_t count_;
  std::vector<std::thread> pool_;
  std::vector<double> busy_;  // per thread, summed item seconds of the current pass
  std::vector<double> cpu_;   // per thread, summed item CPU seconds of the current pass
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<ItemTime(size_t)>* item_ = nullptr;
  std::atomic<size_t> next_{0};
  std::atomic<bool> failed_{false};
  std::exception_ptr first_error_;
  size_t running_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

/// Fairness between the codecs: glibc serves big blocks with mmap (a fresh, page-faulting mapping
/// each time) until a mapped block is freed, and then raises that threshold to the freed size (up
/// to 32 MB). Without this, whichever codec runs first pays first-touch page faults on its output
/// buffers that the codecs after it do not. Freeing one block as big as the largest image up front
/// puts every codec in the same steady state. No effect with other allocators or above 32 MB.
void settle_allocator_for(size_t bytes) {
  constexpr size_t kGlibcMaxThreshold = size_t{32} << 20;
  bytes = std::min(bytes + (bytes >> 3), kGlibcMaxThreshold);
  auto* p = static_cast<volatile uint8_t*>(std::malloc(bytes));
  if (!p) return;
  p[0] = 1;  // a use, so that the compiler cannot drop the malloc/free pair
  p[bytes - 1] = p[0];
  std::free(const_cast<uint8_t*>(p));
}

class Bench {
 public:
  Bench(const std::vector<Image>& images, const CodecBenchParams& params)
      : images_(images), params_(params) {
    if (images.empty()) throw Error(Errc::invalid_argument, "no images to benchmark");
    if (!params.image_names.empty() && params.image_names.size() != images.size())
      throw Error(Errc::invalid_argument, "codec benchmark: " +
                                              std::to_string(params.image_names.size()) +
                                              " image names for " + std::to_string(images.size()) +
                                              " images");
    if (params.repeats == 0)
      throw Error(Errc::invalid_argument, "codec benchmark: repeats must be at least 1");
    for (unsigned t : params.thread_counts)
      if (t == 0) throw Error(Errc::invalid_argument, "codec benchmark: a thread count of 0");
    for (size_t i = 0; i < images.size(); ++i) {
      if (images[i].empty())
        throw Error(Errc::invalid_argument, "codec benchmark: " + image_name(i) + " is empty");
      raw_bytes_ += images[i].size_bytes();
    }
  }

  void settle_allocator() const {
    size_t largest = 0;
    for (const Image& img : images_) largest = std::max(largest, img.size_bytes());
    settle_allocator_for(largest);
  }

  std::string image_name(size_t i) const {
    if (!params_.image_names.empty()) return params_.image_names[i];
    return "image " + std::to_string(i + 1);
  }
  std::string where(const Spec& s, size_t i) const {
    return s.key + ": " + image_name(i) + " (" + std::to_string(i + 1) + " of " +
           std::to_string(images_.size()) + ")";
  }

  /// Throws Error(mismatch) unless `out` is a correct decode of image i.
  void check(const Spec& s, size_t i, const Image& out) const {
    const Image& orig = images_[i];
    const ImageShape& a = orig.shape();
    const ImageShape& b = out.shape();
    if (!(a == b))
      throw Error(Errc::mismatch,
                  where(s, i) + ": decoded shape " + std::to_string(b.width) + "x" +
                      std::to_string(b.height) + "x" + std::to_string(b.channels) +
                      " differs from the original " + std::to_string(a.width) + "x" +
                      std::to_string(a.height) + "x" + std::to_string(a.channels));
    if (!s.lossless || orig.same_pixels(out)) return;
    size_t at = 0;
    while (orig.data()[at] == out.data()[at]) ++at;  // a difference exists: same_pixels failed
    const size_t px = at / a.channels;
    throw Error(Errc::mismatch,
                where(s, i) + ": decoded pixels differ from the original, first at x=" +
                    std::to_string(px % a.width) + " y=" + std::to_string(px / a.width) +
                    " channel " + std::to_string(at % a.channels) + " (" +
                    std::to_string(orig.data()[at]) + " decoded as " +
                    std::to_string(out.data()[at]) + ")");
  }

  Bytes encode_one(const Spec& s, size_t i, unsigned codec_threads) const {
    const Image& img = images_[i];
    if (s.source) return params_.source_files[i];  // a copy: there is nothing to encode
    if (!s.codec) return Bytes(img.data(), img.data() + img.size_bytes());
    EncodeOptions opt = s.options;
    opt.threads = codec_threads;
    return s.codec->encode(img, opt);
  }

  Image decode_one(const Spec& s, ByteSpan file, size_t i, unsigned codec_threads) const {
    if (s.source) return decode_any(file);
    if (!s.codec) {  // memcpy: allocate an image and copy, as a decoder allocates and writes
      Image out(images_[i].shape());
      std::memcpy(out.data(), file.data(), out.size_bytes());
      return out;
    }
    if (s.patches) return l3::decode(file, codec_threads);
    return s.codec->decode(file);
  }

  /// Adds codec and image to library errors; lets mismatch errors (already named) through.
  template <class F>
  auto named(const Spec& s, size_t i, F&& f) const {
    try {
      return f();
    } catch (const Error& e) {
      if (e.code() == Errc::mismatch) throw;
      throw e.with_context(where(s, i));
    }
  }

  void run_spec(const Spec& s, CodecBenchReport& report, size_t& rows_done, size_t rows_total) {
    const size_t n = images_.size();
    if (s.codec)
      for (size_t i = 0; i < n; ++i)
        if (!s.codec->round_trips(images_[i].channels()))
          throw Error(Errc::unsupported, where(s, i) + ": " + std::string(s.codec->name()) +
                                             " cannot store " +
                                             std::to_string(images_[i].channels()) +
                                             "-channel images; leave this codec out");
    std::vector<Bytes> files(n);
    std::vector<char> have(n, 0);  // not vector<bool>: threads write neighbouring items
    const TimingParams tp{params_.warmup, params_.repeats, params_.max_seconds_per_measurement};
    const std::vector<unsigned> counts =
        params_.thread_counts.empty() ? std::vector<unsigned>{1} : params_.thread_counts;

    for (unsigned threads : counts) {
      // With @patches one image at a time, its patches over `threads`; else a thread per image.
      const unsigned workers = s.patches ? 1 : threads;
      const unsigned codec_threads = s.patches ? threads : 1;

      auto encode_item = [&](size_t i) -> ItemTime {
        return named(s, i, [&] {
          Bytes out;
          const ItemTime t =
              time_item(s.patches, [&] { out = encode_one(s, i, codec_threads); });
          // Untimed: keep the first file of each image; a later encode that differs (an encoder
          // need not be deterministic) is checked by decoding it.
          if (!have[i]) {
            files[i] = std::move(out);
            have[i] = 1;  // each i is handled by exactly one thread per pass
          } else if (out != files[i]) {
            check(s, i, decode_one(s, out, i, codec_threads));
          }
          return t;
        });
      };
      Workers pool(workers, n);
      // The wall time is what counts; the CPU seconds of the same timed runs are kept beside it.
      std::vector<double> enc_cpu, dec_cpu;
      const TimingStats enc = measure_self_timed(tp, [&](bool warmup) {
        const PassTime t = pool.pass(encode_item);
        if (!warmup) enc_cpu.push_back(t.cpu);
        return t.wall;
      });

      auto decode_item = [&](size_t i) -> ItemTime {
        return named(s, i, [&] {
          Image out;
          const ItemTime t =
              time_item(s.patches, [&] { out = decode_one(s, files[i], i, codec_threads); });
          check(s, i, out);  // before the time is returned, i.e. counted
          return t;
        });
      };
      const TimingStats dec = measure_self_timed(tp, [&](bool warmup) {
        const PassTime t = pool.pass(decode_item);
        if (!warmup) dec_cpu.push_back(t.cpu);
        return t.wall;
      });

      CodecBenchRow row;
      row.codec = s.canonical;
      row.lossless = s.lossless;
      row.threads = threads;
      row.parallel = s.patches ? "patches" : "images";
      row.raw_bytes = raw_bytes_;
      double sum_ratio = 0;
      for (size_t i = 0; i < n; ++i) {
        row.compressed_bytes += files[i].size();
        sum_ratio += double(files[i].size()) / double(images_[i].size_bytes());
      }
      row.ratio = double(row.compressed_bytes) / double(raw_bytes_);
      row.mean_ratio = sum_ratio / double(n);
      const double mb = double(raw_bytes_) / kMB;
      row.median_encode_s = enc.median_s;
      row.min_encode_s = enc.min_s;
      row.median_decode_s = dec.median_s;
      row.min_decode_s = dec.min_s;
      row.median_encode_mb_s = enc.median_rate(mb);
      row.min_time_encode_mb_s = enc.best_rate(mb);
      row.median_decode_mb_s = dec.median_rate(mb);
      row.min_time_decode_mb_s = dec.best_rate(mb);
      const double enc_cpu_s = median(enc_cpu), dec_cpu_s = median(dec_cpu);
      row.median_encode_cpu_s = enc_cpu_s;
      row.median_decode_cpu_s = dec_cpu_s;
      row.encode_mb_per_cpu_s = enc_cpu_s > 0 ? mb / enc_cpu_s : 0;
      row.decode_mb_per_cpu_s = dec_cpu_s > 0 ? mb / dec_cpu_s : 0;
      row.encode_runs = static_cast<unsigned>(enc.runs());
      row.decode_runs = static_cast<unsigned>(dec.runs());
      row.verified = true;  // every decode above passed check(), or we would have thrown
      report.rows.push_back(std::move(row));

      ++rows_done;
      if (params_.progress)
        params_.progress({"codec bench", rows_done, rows_total,
                          s.key + " x" + std::to_string(threads)});
    }
    sizes_[s.key].resize(n);
    for (size_t i = 0; i < n; ++i) sizes_[s.key][i] = files[i].size();
  }

  CodecBenchReport run() {
    settle_allocator();
    std::vector<Spec> specs;
    for (const std::string& text : params_.codecs) {
      Spec s = parse_spec(text, params_.extra_codecs);
      const bool dup = std::any_of(specs.begin(), specs.end(),
                                   [&](const Spec& o) { return o.key == s.key; });
      if (!dup) specs.push_back(std::move(s));
    }
    if (std::any_of(specs.begin(), specs.end(), [](const Spec& s) { return s.source; }) &&
        params_.source_files.size() != images_.size())
      throw Error(Errc::invalid_argument, "codec spec 'source': the input files were not given");
    if (std::none_of(specs.begin(), specs.end(), [](const Spec& s) { return s.is_memcpy(); }))
      specs.push_back(parse_spec("memcpy", {}));

    CodecBenchReport report;
    report.images = static_cast<unsigned>(images_.size());
    report.raw_bytes = raw_bytes_;
    report.repeats = params_.repeats;
    report.warmup = params_.warmup;
    const size_t counts = std::max<size_t>(1, params_.thread_counts.size());
    size_t done = 0;
    for (const Spec& s : specs) run_spec(s, report, done, specs.size() * counts);

    // Size and speed against png:6 of this run.
    const auto png = std::find_if(specs.begin(), specs.end(), [](const Spec& s) { return s.is_png6; });
    if (png != specs.end()) {
      report.size_reference = png->canonical;
      const std::vector<uint64_t>& ref = sizes_[png->key];
      uint64_t ref_total = 0;
      for (uint64_t b : ref) ref_total += b;
      for (CodecBenchRow& row : report.rows) {
        const std::vector<uint64_t>& mine =
            sizes_[row.codec + (row.parallel == "patches" ? "@patches" : "")];
        std::vector<double> per(mine.size());
        double sum = 0;
        size_t worst = 0;
        for (size_t i = 0; i < mine.size(); ++i) {
          per[i] = ref[i] ? double(mine[i]) / double(ref[i]) : 0;
          sum += per[i];
          if (per[i] > per[worst]) worst = i;
        }
        row.size_vs_png = ref_total ? double(row.compressed_bytes) / double(ref_total) : 0;
        row.mean_size_vs_png = sum / double(per.size());
        row.median_size_vs_png = median(per);
        row.worst_size_vs_png = per[worst];
        row.worst_size_vs_png_image = image_name(worst);
        for (const CodecBenchRow& p : report.rows)
          if (p.codec == png->canonical && p.parallel == "images" && p.threads == row.threads) {
            if (p.median_encode_mb_s > 0)
              row.encode_speedup_vs_png = row.median_encode_mb_s / p.median_encode_mb_s;
            if (p.median_decode_mb_s > 0)
              row.decode_speedup_vs_png = row.median_decode_mb_s / p.median_decode_mb_s;
            if (p.encode_mb_per_cpu_s > 0)
              row.encode_cpu_speedup_vs_png = row.encode_mb_per_cpu_s / p.encode_mb_per_cpu_s;
            if (p.decode_mb_per_cpu_s > 0)
              row.decode_cpu_speedup_vs_png = row.decode_mb_per_cpu_s / p.decode_mb_per_cpu_s;
          }
      }
    }
    return report;
  }

 private:
  const std::vector<Image>& images_;
  const CodecBenchParams& params_;
  uint64_t raw_bytes_ = 0;
  std::map<std::string, std::vector<uint64_t>> sizes_;  // per canonical spec, per image
};

}  // namespace

std::string canonical_codec_spec(const std::string& spec) {
  return parse_spec(spec, {}).key;
}

bool codec_spec_stores(const std::string& spec, uint32_t channels) {
  const Spec s = parse_spec(spec, {});
  return !s.codec || s.codec->round_trips(channels);
}

CodecBenchReport run_codec_bench(const std::vector<Image>& images, const CodecBenchParams& params) {
  return Bench(images, params).run();
}

}  // namespace dlprep::image

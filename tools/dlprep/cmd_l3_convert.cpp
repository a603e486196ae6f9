// dlprep l3 encode / dlprep l3 decode: images to L3 and back, file by file, in parallel.
// Both share one driver: expand the inputs, name the outputs, skip those that are up to date,
// convert each file on its own (a failing file is reported and the others go on), summarise.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cmd_l3.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parallel.hpp"
#include "image/codec.hpp"
#include "inputs.hpp"
#include "l3/batch_decode.hpp"
#include "l3/format.hpp"
#include "l3/l3.hpp"
#include "output.hpp"
#include "tabular/npy_format.hpp"

namespace dlprep::cli {
namespace {
namespace fs = std::filesystem;

enum class Direction { encode, decode };

struct ConvertOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string patch = "auto";  // encode only
  std::string to;              // decode only; empty: from the output's extension, else png
  std::string device = "cpu";  // decode only: cpu, cuda or auto
  bool force = false;
};

// What happened to one input, for the summary and the JSON report.
struct Outcome {
  // pending: not started, because writing an earlier output failed.
  enum Status { pending, converted, skipped, failed } status = pending;
  fs::path output;
  uint64_t input_bytes = 0, output_bytes = 0, raw_bytes = 0;
  ImageShape shape;
  std::string error;
  // The failure came from writing the output (a full or read-only disk): the files after it would
  // fail the same way, so none is started.
  bool writing = false;
};

// The patch side from "--patch auto|N": 0 means auto (the paper's rule, applied per image).
uint32_t parse_patch(const std::string& text) {
  if (text == "auto") return 0;
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  bool power_of_two = value != 0 && (value & (value - 1)) == 0;
  if (ec != std::errc() || end != text.data() + text.size() || !power_of_two ||
      value < (1u << l3::kMinPatchLog2) || value > l3::kMaxPatch)
    throw Error(Errc::invalid_argument, "--patch: '" + text +
                                            "' is not auto or a power of two from " +
                                            std::to_string(1u << l3::kMinPatchLog2) + " to " +
                                            std::to_string(l3::kMaxPatch));
  return value;
}

// The target format of decode: --to, else the extension of a single output file, else png.
// "x.PNG" -> "png"; "" without one.
std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (!ext.empty()) ext.erase(0, 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

std::string decode_target(const ConvertOptions& options, const OutputPlan& plan) {
  if (!options.to.empty()) return options.to;
  if (!plan.to_directory() && !plan.to_stdout()) {
    std::string ext = lower_extension(options.output);
    for (const char* known : {"png", "ppm", "pgm", "bmp", "raw", "npy"})
      if (ext == known && (ext == "raw" || ext == "npy" || image::find_codec(ext))) return ext;
  }
  return image::find_codec("png") ? "png" : "ppm";
}

// Checks that `target` can hold an image with `channels` channels before any work is done.
void check_target(const std::string& target, uint32_t channels) {
  if (target == "raw" || target == "npy") return;
  if (target == "pgm" && channels != 1)
    // "pgm", not "--to pgm": the format may come from -o's extension.
    throw Error(Errc::unsupported, "pgm holds 1-channel (gray) images; this one has " +
                                       std::to_string(channels) +
                                       (channels == 3 ? " channels (use --to ppm or png)"
                                                      : " channels (use --to png or raw)"));
  if (target == "ppm" && channels != 1 && channels != 3)
    throw Error(Errc::unsupported, "ppm holds 1 or 3 channels; this one has " +
                                       std::to_string(channels) + " (use --to png or raw)");
  const image::Codec* codec = image::find_codec(target);
  if (!codec)
    throw Error(Errc::unsupported, "this dlprep was built without " + target + " support");
  if (!codec->round_trips(channels))
    throw Error(Errc::unsupported, target + " cannot store " + std::to_string(channels) +
                                       "-channel images (use --to png or raw)");
}

// --to npy: a C-order uint8 array of shape (height, width, channels), gray images included.
std::string npy_image_header(const ImageShape& shape) {
  return tabular::npy_header("|u1", {shape.height, shape.width, shape.channels});
}

std::string extension_of(const std::string& target, uint32_t channels) {
  if (target == "raw" || target == "npy") return target;
  return image::find_codec(target)->extension(channels);
}

// A write failure that concerns this output's name alone (a folder where the file goes, a file
// where a folder does, a name too long): the other outputs can still be written. Any other (a
// full or read-only disk, an I/O error) stops the run.
bool blocks_this_output_only(int system_error) {
  switch (system_error) {
    case EISDIR:
    case ENOTDIR:
    case ENAMETOOLONG:
    case EEXIST:
    case ENOTEMPTY:
    case ELOOP:
      return true;
    default:
      return false;
  }
}

void write_output(const fs::path& path, ByteSpan bytes) {
  if (path == "-") {
    std::fflush(stdout);             // nothing buffered may land after the image
    write_file_atomic(path, bytes);  // may block on a pipe: never under defer_interrupts()
    return;
  }
  auto defer = defer_interrupts();
  write_file_atomic(path, bytes);
}

class Converter {
 public:
  Converter(Direction direction, const ConvertOptions& options, const Globals& globals)
      : direction_(direction),
        options_(options),
        globals_(globals),
        command_(direction == Direction::encode ? "l3 encode" : "l3 decode") {}

  int run();

 private:
  // What the summary counts, added up as the outcomes come in.
  struct Totals {
    uint64_t converted = 0, skipped = 0, failed = 0, not_started = 0, in = 0, out = 0;
  };
  // again: the output in place is the old input's, though newer than the new one.
  void convert_one(size_t index, Outcome& outcome, unsigned threads, bool again = false);
  void convert_with_retries(size_t index, Outcome& outcome, unsigned threads);
  bool output_is_as_requested(const fs::path& output, const ImageShape& shape) const;
  Image decode_on_device(ByteSpan file);
  // Finds, before any file is converted, the outputs that the inputs' names (and, for a decode to
  // ppm/pgm, their channels) give to more than one input: an error for each but the first in
  // input order, whichever thread comes first.
  void claim_in_order();
  std::string clash_message(const fs::path& output, size_t first) const;
  // Removes the temp files that a killed run (SIGKILL: no cleanup) left for this run's outputs.
  void remove_dead_temp_files() const;
  void count(const Outcome& outcome);
  Json file_report(size_t index, const Outcome& outcome) const;
  void print_summary(double seconds) const;
  Json summary_report(double seconds) const;

  Direction direction_;
  const ConvertOptions& options_;
  const Globals& globals_;
  std::string command_;
  uint32_t patch_ = 0;
  std::string target_;
  std::unique_ptr<OutputPlan> plan_;
  InputList inputs_;
  Totals totals_;
  std::atomic<bool> stopped_{false};                 // an output could not be written
  std::unordered_map<size_t, std::string> clashes_;  // input -> its clash's error, ahead
  // Inputs whose name is another's and whose output claim_in_order could not know (stdin, a FIFO
  // to ppm/pgm): claimed as they are converted, after the files of their name (which keep their
  // outputs); among streams, the first converted keeps it.
  std::unordered_set<size_t> late_claims_;
  std::mutex late_mutex_;
  std::unordered_map<std::string, size_t> late_claimed_;  // output -> the input writing it
  // --device cuda|auto: one batch decoder (it owns a stream and device buffers, so calls are
  // serialised); null for the CPU path, which decodes each file with its own threads.
  std::unique_ptr<l3::BatchDecoder> device_decoder_;
  std::mutex device_mutex_;
};

Image Converter::decode_on_device(ByteSpan file) {
  std::lock_guard lock(device_mutex_);
  ByteSpan files[] = {file};
  l3::BatchPlan plan;
  Bytes pixels = device_decoder_->decode(files, &plan);
  Image image(l3::inspect(file).shape);
  std::memcpy(image.data(), pixels.data(), image.size_bytes());
  return image;
}

int Converter::run() {
  bool encoding = direction_ == Direction::encode;
  if (encoding) patch_ = parse_patch(options_.patch);
  std::vector<std::string> empty_dirs;
  // Walking a tree, encode takes every image that is not already L3 (those in formats no codec
  // reads too, to fail with their name); decode only L3 files, and files named *.l3.
  const ScanProgress scanning{globals_, command_};
  inputs_ = collect_inputs(
      options_.inputs, [encoding](const image::Codec& c) { return (c.name() == "l3") != encoding; },
      &empty_dirs, encoding, encoding ? "" : "l3", &scanning);
  // Nothing to encode in a tree of L3 files: decode was surely meant (looked for only then).
  const bool only_l3 =
      encoding && inputs_.empty() && !collect_inputs(options_.inputs, [](const image::Codec& c) {
                                        return c.name() == "l3";
                                      }).empty();
  report_empty_dirs(globals_, command_, empty_dirs, inputs_.size(), encoding ? "image" : "l3",
                    only_l3 ? "only L3 files, which l3 decode takes" : "");
  plan_ = std::make_unique<OutputPlan>(options_.output, inputs_);
  // `-o x.l3` given a tree or several inputs: a folder named like a file, surely unmeant.
  if (const std::string ext = lower_extension(options_.output);
      plan_->to_directory() && !options_.output.ends_with('/') && !fs::exists(options_.output) &&
      (ext == "l3" || ext == "png" || ext == "ppm" || ext == "pgm" || ext == "bmp" ||
       ext == "raw" || ext == "npy"))
    print_warning(globals_, command_,
                  options_.output + ": a folder of that name, named like a file, receives the " +
                      std::to_string(inputs_.size()) +
                      (inputs_.size() == 1 ? " output of a directory" : " outputs") +
                      " (to write one file, name one input file)");
  if (plan_->to_stdout() && globals_.json)
    throw Error(Errc::invalid_argument,
                "--json cannot be used with -o - (standard output carries the image)");
  if (!encoding) {
    target_ = decode_target(options_, *plan_);
    // `-o x.jpg`: a name that promises a format this command does not write.
    const std::string ext = lower_extension(options_.output);
    if (options_.to.empty() && !plan_->to_directory() && !plan_->to_stdout() && !ext.empty() &&
        ext != target_)
      print_warning(globals_, command_,
                    options_.output + ": written as " + target_ + " (its extension names no " +
                        "format l3 decode writes: png, ppm, pgm, bmp, raw, npy; --to picks one)");
  }
  if (!encoding) {  // also for --device cpu: DLPREP_FORCE_DEVICE may override it
    // Before any file: an unavailable device is one clear error (exit 77), not one per file.
    device_decoder_ = l3::make_batch_decoder(l3::parse_decode_device(options_.device));
    if (device_decoder_->device_name() == "cpu") device_decoder_.reset();
    else if (globals_.verbose > 0) print_note(globals_, command_ + ": decoding on the cuda device");
  }

  // Files in parallel; each outcome is counted (and with --json reported) in input order as soon
  // as it and those before it are known, then dropped: memory does not grow with the file count.
  const size_t n = inputs_.size();
  const ThreadSplit threads = split_threads(globals_, command_, n);
  std::unique_ptr<JsonStream> json;
  if (globals_.json)
    json = std::make_unique<JsonStream>(
        Json{{"schema", encoding ? "dlprep.l3-encode/1" : "dlprep.l3-decode/1"}}, "files");
  claim_in_order();
  remove_dead_temp_files();
  const size_t slots = std::clamp<size_t>(n, 1, kReportOrderWindow);
  std::vector<Outcome> window(slots);  // outcome i at i % slots
  Progress progress(globals_, command_, n);
  auto start = std::chrono::steady_clock::now();
  parallel_for_ordered(
      n, threads.files, slots,
      [&](size_t i) {
        Outcome& outcome = window[i % slots];
        outcome = Outcome{};
        if (stopped_.load(std::memory_order_relaxed)) return;
        try {
          convert_with_retries(i, outcome, threads.patches);
        } catch (const Error& e) {
          outcome.status = Outcome::failed;
          outcome.error = with_path(inputs_[i].path, e).what();
          if (blocks_this_output_only(e.system_error())) outcome.writing = false;
        } catch (const std::bad_alloc&) {
          outcome.status = Outcome::failed;
          outcome.error = display_path(inputs_[i].path) + ": " + out_of_memory_message();
        } catch (const std::exception& e) {  // e.g. std::filesystem_error: still only this file
          outcome.status = Outcome::failed;
          outcome.error = display_path(inputs_[i].path) + ": " + e.what();
        }
        if (outcome.status == Outcome::failed) print_error(command_, outcome.error);
        if (outcome.writing) stopped_ = true;
        progress.step(1, outcome.raw_bytes);
      },
      [&](size_t i) {
        const Outcome& outcome = window[i % slots];
        count(outcome);
        if (json) json->add(file_report(i, outcome));
      });
  progress.finish();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (json)
    json->finish(summary_report(seconds));
  else
    print_summary(seconds);
  return totals_.failed > 0 || totals_.not_started > 0 ? kExitFailure : kExitOk;
}

void Converter::claim_in_order() {
  const bool encoding = direction_ == Direction::encode;
  // A decode's extension may depend on the channels (ppm/pgm): the outputs are grouped by their
  // path with one extension, and only in a group of several is each input's header read.
  const bool by_channels = !encoding && extension_of(target_, 1) != extension_of(target_, 3);
  const std::string ext = encoding ? "l3" : extension_of(target_, 3);
  // stdin or a FIFO is read once, when converted: its header cannot be read ahead.
  const auto unread = [&](size_t i) {
    std::error_code ec;  // "-" is stdin, whatever a file of that name in the current folder
    return by_channels && (inputs_[i].path == "-" || !fs::is_regular_file(inputs_[i].path, ec));
  };
  const auto output_of = [&](size_t i, bool exact) {
    try {
      const InputFile input = inputs_[i];
      if (!exact || !by_channels) return plan_->output_for(input, ext);
      const MappedFile file(input.path, require_l3_head);
      require_l3_head(file.bytes());
      const uint32_t channels = l3::inspect(file.bytes()).shape.channels;
      check_target(target_, channels);
      return plan_->output_for(input, extension_of(target_, channels));
    } catch (const std::exception&) {
      return fs::path();  // it fails again, with its file's name, when it is converted
    }
  };
  // Each output's path as a hash, sorted: only equal hashes can be one output, and their paths
  // are compared. 16 bytes a file while this runs, where a set of the paths kept 80.
  struct Claim {
    uint64_t hash;
    size_t index;
    bool operator<(const Claim& o) const {
      return std::tie(hash, index) < std::tie(o.hash, o.index);
    }
  };
  std::vector<Claim> claims;
  claims.reserve(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const fs::path output = output_of(i, false);
    if (!output.empty() && output != "-")
      claims.push_back({std::hash<std::string>{}(output.lexically_normal().string()), i});
  }
  std::sort(claims.begin(), claims.end());
  for (size_t from = 0, to = 0; from < claims.size(); from = to) {
    for (to = from + 1; to < claims.size() && claims[to].hash == claims[from].hash;) ++to;
    if (to - from == 1) continue;
    std::vector<std::pair<std::string, size_t>> first_writers;  // output -> the earliest input
    bool late = false;
    for (size_t k = from; k < to; ++k) {
      if (unread(claims[k].index)) {  // claimed as it is converted, after every file's claim
        late_claims_.emplace(claims[k].index);
        late = true;
        continue;
      }
      const fs::path output = output_of(claims[k].index, true);
      if (output.empty()) continue;
      const std::string normal = output.lexically_normal().string();
      auto first = std::find_if(first_writers.begin(), first_writers.end(),
                                [&](const auto& w) { return w.first == normal; });
      if (first == first_writers.end())
        first_writers.emplace_back(normal, claims[k].index);
      else
        clashes_.emplace(claims[k].index, clash_message(output, first->second));
    }
    // A stream whose output is a file's fails, whichever is converted first.
    if (late)
      for (auto& [output, index] : first_writers) late_claimed_.emplace(std::move(output), index);
  }
}

void Converter::remove_dead_temp_files() const {
  if (plan_->to_stdout()) return;
  std::set<std::string> extensions;  // a decode's depends on the channels
  for (uint32_t channels = 1; channels <= 4; ++channels) {
    try {
      extensions.insert(direction_ == Direction::encode ? "l3" : extension_of(target_, channels));
    } catch (const std::exception&) {  // no such image in this format
    }
  }
  // The outputs' folders, and a hash of each output's temp file stem there (8 bytes a file).
  std::set<std::string> dirs;
  std::vector<uint64_t> stems;
  const auto key = [](const std::string& dir, const std::string& stem) {
    return std::hash<std::string>{}(dir + '/' + stem);
  };
  for (size_t i = 0; i < inputs_.size(); ++i)
    for (const std::string& ext : extensions) {
      fs::path output;
      try {
        output = plan_->output_for(inputs_[i], ext);
      } catch (const std::exception&) {
        continue;
      }
      if (output == "-") continue;
      const std::string dir =
          output.parent_path().empty() ? std::string(".") : output.parent_path().string();
      stems.push_back(key(dir, temp_file_stem(output.filename().string())));
      dirs.insert(dir);
    }
  std::sort(stems.begin(), stems.end());
  for (const std::string& dir : dirs)
    remove_unlocked_temp_files(dir, [&](const std::string& stem) {
      return std::binary_search(stems.begin(), stems.end(), key(dir, stem));
    });
}

std::string Converter::clash_message(const fs::path& output, size_t first) const {
  return "output " + output.string() + " is also written from " + std::string(inputs_.path(first)) +
         "; skipped";
}

// An output newer than its input is still stale when it is not what this run would write: an
// L3 file of another patch size (`--patch 8` after a default encode), a decoded image in another
// format or shape (`--to raw` after `--to png` into one name), or any other file.
bool Converter::output_is_as_requested(const fs::path& output, const ImageShape& shape) const {
  try {
    MappedFile file(output);
    if (direction_ == Direction::encode) {
      l3::FileInfo info = l3::inspect(file.bytes());
      uint32_t want =
          patch_ != 0 ? patch_ : l3::auto_patch_size(info.shape.width, info.shape.height);
      return info.patch == want;
    }
    if (target_ == "raw") return file.bytes().size() == shape.pixel_bytes();
    if (target_ == "npy") {
      const std::string header = npy_image_header(shape);
      return file.bytes().size() == header.size() + shape.pixel_bytes() &&
             std::memcmp(file.bytes().data(), header.data(), header.size()) == 0;
    }
    const image::Codec* codec = image::sniff_codec(file.bytes());
    return codec && codec == image::find_codec(target_) &&
           codec->probe(file.bytes()).shape == shape;
  } catch (const Error&) {
    return false;  // unreadable: converted again
  }
}

// An input replaced or modified while it was converted: the output is the old file's but newer
// than the new one, so every rerun would skip it. It is converted again, from the new file.
void Converter::convert_with_retries(size_t index, Outcome& outcome, unsigned threads) {
  const std::filesystem::path& path = inputs_[index].path;
  if (path == "-") return convert_one(index, outcome, threads);
  convert_unchanged(
      path,
      [&](bool again) {
        outcome = Outcome{};
        convert_one(index, outcome, threads, again);
        // (An output that is no file, stdout or a FIFO, is not written twice.)
        std::error_code ec;
        return outcome.status == Outcome::converted &&
               std::filesystem::is_regular_file(outcome.output, ec);
      },
      [&] {
        std::error_code ec;
        std::filesystem::remove(outcome.output, ec);
      });
}

void Converter::convert_one(size_t index, Outcome& outcome, unsigned threads, bool again) {
  const InputFile input = inputs_[index];
  bool encoding = direction_ == Direction::encode;
  std::unique_ptr<MappedFile> file;
  if (encoding) {
    outcome.output = plan_->output_for(input, "l3");
  } else {
    // The output's extension may depend on the channel count (ppm/pgm): read the header first.
    file = std::make_unique<MappedFile>(input.path, require_l3_head);
    require_l3_head(file->bytes());
    outcome.shape = l3::inspect(file->bytes()).shape;
    check_target(target_, outcome.shape.channels);
    outcome.output = plan_->output_for(input, extension_of(target_, outcome.shape.channels));
  }
  if (auto clash = clashes_.find(index); clash != clashes_.end()) {
    // A missing input is that (a mistyped path keeps its file name), before it is a clash; a
    // stat, not a read (a FIFO would block, a large file be read for nothing).
    struct stat st {};
    if (input.path != "-" && ::stat(input.path.c_str(), &st) != 0)
      throw Error(Errc::io, display_path(input.path) + ": cannot open: " + std::strerror(errno));
    throw Error(Errc::invalid_argument, clash->second);
  }
  if (late_claims_.count(index) != 0) {
    std::lock_guard lock(late_mutex_);
    auto [it, inserted] = late_claimed_.emplace(outcome.output.lexically_normal().string(), index);
    if (!inserted && it->second != index)  // (its own claim: a retry of the same input)
      throw Error(Errc::invalid_argument, clash_message(outcome.output, it->second));
  }
  // `-o $<` in a Makefile: the file is as new as itself, so it would pass as up to date (or, with
  // --force, the original would be replaced by its conversion).
  std::error_code ec;
  if (input.path != "-" && outcome.output != "-" &&
      std::filesystem::equivalent(input.path, outcome.output, ec))
    throw Error(Errc::invalid_argument,
                "the output " + display_path(outcome.output) + " is the input file itself");
  if (!options_.force && !again && input.path != "-" && outcome.output != "-" &&
      is_up_to_date(outcome.output, {input.path}) &&
      output_is_as_requested(outcome.output, outcome.shape)) {
    outcome.status = Outcome::skipped;
    return;
  }
  if (!file) file = std::make_unique<MappedFile>(input.path, image::check_image_head);
  ByteSpan in = file->bytes();
  outcome.input_bytes = in.size();
  Bytes out;
  if (encoding) {
    if (in.empty()) throw Error(Errc::corrupt_data, "empty file");
    const image::Codec& codec = image::sniff_codec_or_throw(in);  // sniffed once
    Image image = codec.decode(in);
    if (const uint32_t bits = codec.probe(in).bits; bits > 8)
      print_warning(globals_, command_,
                    display_path(input.path) + ": " + std::to_string(bits) +
                        "-bit samples, read as 8 bits: the L3 file is not lossless of it");
    outcome.shape = image.shape();
    outcome.raw_bytes = image.size_bytes();
    out = l3::encode(image, {patch_, threads});
  } else {
    Image image = device_decoder_ ? decode_on_device(in) : l3::decode(in, threads);
    outcome.raw_bytes = image.size_bytes();
    if (target_ == "raw" || target_ == "npy") {
      const std::string header = target_ == "npy" ? npy_image_header(image.shape()) : "";
      out.reserve(header.size() + image.size_bytes());
      out.assign(header.begin(), header.end());
      out.insert(out.end(), image.data(), image.data() + image.size_bytes());
    } else {
      image::EncodeOptions encode_options;
      encode_options.threads = threads;
      out = image::find_codec(target_)->encode(image, encode_options);
    }
  }
  outcome.writing = true;
  write_output(outcome.output, out);
  outcome.writing = false;
  outcome.output_bytes = out.size();
  outcome.status = Outcome::converted;
  if (globals_.verbose > 0)
    print_note(globals_, command_ + ": " + display_path(input.path) + " -> " +
                             (outcome.output == "-" ? "<stdout>" : outcome.output.string()) + ": " +
                             std::to_string(outcome.shape.width) + "x" +
                             std::to_string(outcome.shape.height) + "x" +
                             std::to_string(outcome.shape.channels) + ", " +
                             format_bytes(outcome.input_bytes) + " -> " +
                             format_bytes(outcome.output_bytes));
}

void Converter::count(const Outcome& o) {
  switch (o.status) {
    case Outcome::converted:
      ++totals_.converted;
      totals_.in += o.input_bytes;
      totals_.out += o.output_bytes;
      break;
    case Outcome::skipped:
      ++totals_.skipped;
      break;
    case Outcome::failed:
      ++totals_.failed;
      break;
    case Outcome::pending:
      ++totals_.not_started;
      break;
  }
}

void Converter::print_summary(double seconds) const {
  const Totals& t = totals_;
  std::string line = command_ + ": " + std::to_string(t.converted) +
                     (t.converted == 1 ? " file " : " files ") +
                     (direction_ == Direction::encode ? "encoded" : "decoded");
  if (t.converted > 0) {
    line += ", " + format_bytes(t.in) + " -> " + format_bytes(t.out);
    if (t.in > 0) line += " (" + format_fixed(100.0 * double(t.out) / double(t.in), 1) + "%)";
    line += " in " + format_fixed(seconds, 2) + " s";
  }
  if (t.skipped > 0) line += "; skipped " + std::to_string(t.skipped) + " up to date";
  if (t.failed > 0) line += "; " + std::to_string(t.failed) + " failed";
  if (t.not_started > 0)
    line += "; " + std::to_string(t.not_started) + " not started (an output could not be written)";
  print_note(globals_, line);
}

Json Converter::file_report(size_t index, const Outcome& o) const {
  Json f = {{"input", display_path(inputs_[index].path)}};
  if (!o.output.empty()) f["output"] = o.output.string();
  switch (o.status) {
    case Outcome::converted:
      f["status"] = direction_ == Direction::encode ? "encoded" : "decoded";
      f["width"] = o.shape.width;
      f["height"] = o.shape.height;
      f["channels"] = o.shape.channels;
      f["input_bytes"] = o.input_bytes;
      f["output_bytes"] = o.output_bytes;
      break;
    case Outcome::skipped:
      f["status"] = "skipped";
      break;
    case Outcome::failed:
      f["status"] = "failed";
      f["error"] = o.error;
      break;
    case Outcome::pending:
      f["status"] = "not_started";
      break;
  }
  return f;
}

// The totals follow the files: they are known only once every file is done.
Json Converter::summary_report(double seconds) const {
  return {{direction_ == Direction::encode ? "encoded" : "decoded", totals_.converted},
          {"skipped", totals_.skipped},
          {"failed", totals_.failed},
          {"not_started", totals_.not_started},
          {"input_bytes", totals_.in},
          {"output_bytes", totals_.out},
          {"seconds", seconds}};
}

}  // namespace

ThreadSplit split_threads(const Globals& globals, const std::string& command, size_t files) {
  ThreadSplit split;
  split.files = static_cast<unsigned>(std::min<size_t>(std::max<size_t>(files, 1), globals.jobs));
  // A file read and an output written at once, at most, per file worker: beyond `ulimit -n`,
  // opens fail with EMFILE in whichever workers come last, a different file failing every run.
  unsigned long limit = 0;
  const unsigned fit = clamp_workers_to_fd_limit(split.files, 2, &limit);
  if (fit < split.files)
    print_warning(globals, command,
                  "-j" + std::to_string(globals.jobs) + ": working on " + std::to_string(fit) +
                      (fit == 1 ? " file" : " files") + " at a time, as many as the limit of " +
                      std::to_string(limit) + " open files (ulimit -n) allows");
  split.files = fit;
  split.patches = std::max(1u, globals.jobs / split.files);
  return split;
}

namespace {

void add_common_options(CLI::App* cmd, ConvertOptions& options, const char* input_help) {
  cmd->add_option("INPUT", options.inputs, input_help)->required()->type_name("FILE|DIR|-");
  cmd->add_option("-o,--output", options.output,
                  "output file or directory (see below); - for stdout")
      ->required()
      ->type_name("OUT");
  cmd->add_flag("-f,--force", options.force, "convert even if the output is up to date");
}

}  // namespace

Action add_l3_encode_command(CLI::App& l3) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* cmd =
      l3.add_subcommand("encode", "encode images (png, jpeg, webp, bmp, ppm/pgm) to L3");
  add_common_options(cmd, *options, "images, directories (walked recursively), - for stdin");
  cmd->add_option("--patch", options->patch, "patch side: auto, or a power of two 8..256")
      ->type_name("N|auto")
      ->capture_default_str();
  cmd->footer(
      "Input formats (png, jpeg, webp, bmp, ppm/pgm) are recognised by their magic bytes, never\n"
      "their names; in directories, files that are not images (and L3 files) are ignored.\n"
      "OUT is the output file when there is one input file; it is a directory (mirroring the\n"
      "input trees, with the extension .l3) when it exists, ends in '/', or there are several\n"
      "inputs. --patch auto picks 32 up to HD (1280x720 pixels), 64 up to FHD, 128 above.\n"
      "\n"
      "Each output is written to a temporary file and renamed; an output newer than its input,\n"
      "with the requested patch size, is skipped unless --force. Files are encoded in parallel\n"
      "(-j); a single file uses the threads over its patches. A file that fails is reported, the\n"
      "others go on, and the exit status is 1.\n"
      "\n"
      "Examples:\n"
      "  dlprep l3 encode photo.png -o photo.l3\n"
      "  dlprep -j8 l3 encode dataset/train/ -o dataset-l3/train/\n"
      "  convert in.jpg ppm:- | dlprep l3 encode - -o - > out.l3\n");
  return [options](const Globals& globals) {
    return Converter(Direction::encode, *options, globals).run();
  };
}

Action add_l3_decode_command(CLI::App& l3) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* cmd =
      l3.add_subcommand("decode", "decode L3 files to png, ppm/pgm, bmp, raw pixels or npy arrays");
  add_common_options(cmd, *options, "L3 files, directories (walked recursively), - for stdin");
  cmd->add_option("--to", options->to, "output format: png, ppm, pgm, bmp, raw or npy (see below)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"png", "ppm", "pgm", "bmp", "raw", "npy"}).description(""));
  cmd->add_option("--device", options->device,
                  "where to decode: cpu, cuda, or auto (cuda when a device is present)")
      ->type_name("DEVICE")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}).description(""))
      ->default_str("cpu");
  cmd->footer(
      "Formats: png (1-4 channels), ppm (1 or 3 channels; 1 is written as pgm), pgm (1 channel),\n"
      "bmp (1, 3 or 4), raw (the HWC pixel bytes, no header), npy (a NumPy uint8 array of shape\n"
      "(height, width, channels): numpy.load gives the pixels). Default: the extension of a "
      "single\n"
      "output file when it names one of these, else png. OUT is the output file when there is\n"
      "one input file; it is a directory (mirroring the input trees) when it exists, ends in\n"
      "'/', or there are several inputs. In directories L3 files (by magic bytes) are decoded,\n"
      "and files named *.l3 (one whose magic is damaged fails by name).\n"
      "\n"
      "Every patch checksum is checked while decoding; a corrupt file is reported by name and\n"
      "leaves no output. Outputs are written atomically and skipped when up to date unless\n"
      "--force.\n"
      "\n"
      "--device cuda decodes on the GPU (checked against the CPU decoder in the tests); without\n"
      "CUDA in this build or without a device it exits 77 with the reason.\n"
      "DLPREP_FORCE_DEVICE=auto|cpu|cuda overrides --device.\n"
      "\n"
      "Examples:\n"
      "  dlprep l3 decode photo.l3 -o photo.png\n"
      "  dlprep l3 decode dataset-l3/ -o decoded/ --to bmp\n"
      "  dlprep l3 decode photo.l3 -o - --to raw | python3 train.py\n"
      "  dlprep l3 decode dataset-l3/ -o arrays/ --to npy   # numpy.load('arrays/x.npy')\n");
  return [options](const Globals& globals) {
    return Converter(Direction::decode, *options, globals).run();
  };
}

}  // namespace dlprep::cli

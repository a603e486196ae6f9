// dlprep l3 verify FILE.l3… [--against ORIGINAL]: structure and every patch checksum (without
// allocating the pixels, which a damaged header can make huge), and with --against, by decoding,
// bit-exact equality with the original image, or with the originals of a whole tree (l3 encode IN/
// -o OUT/, then l3 verify OUT/ --against IN/).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cmd_l3.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/parallel.hpp"
#include "image/codec.hpp"
#include "inputs.hpp"
#include "l3/l3.hpp"
#include "output.hpp"

namespace dlprep::cli {

std::optional<uint64_t> require_l3_head(ByteSpan head) {
  if (head.empty()) throw Error(Errc::corrupt_data, "empty file");
  const image::Codec* codec = image::sniff_codec(head);
  if (!codec || codec->name() != "l3")
    throw Error(Errc::unsupported,
                std::string("not an l3 file (") +
                    (codec ? "format " + std::string(codec->name()) : "unknown format") + ")");
  return codec->declared_size(head);
}

namespace {

constexpr const char* kVerifyCommand = "l3 verify";

struct VerifyOptions {
  std::vector<std::string> inputs;
  std::string against;
};

struct Result {
  int code = kExitOk;
  std::string message;  // the error, or what was checked
  ImageShape shape;
};

std::string shape_text(const ImageShape& s) {
  return std::to_string(s.width) + "x" + std::to_string(s.height) + "x" +
         std::to_string(s.channels);
}

// An original as dlprep reads it (8 bits per sample), and the depth of its file.
struct Original {
  Image image;
  uint32_t bits = 8;
};

// Throws Error(mismatch) naming the first differing pixel, in row-major order; or, when every
// pixel is equal, that the original's wider samples lost their low bits in the L3 file.
void compare(const Image& decoded, const Original& original_file,
             const std::string& original_name) {
  const Image& original = original_file.image;
  if (decoded.shape() != original.shape())
    throw Error(Errc::mismatch, "shape " + shape_text(decoded.shape()) + " differs from " +
                                    original_name + " (" + shape_text(original.shape()) + ")");
  const uint8_t* a = decoded.data();
  const uint8_t* b = original.data();
  size_t n = decoded.size_bytes();
  for (size_t i = 0; i < n; ++i) {
    if (a[i] == b[i]) continue;
    size_t c = i % decoded.channels();
    size_t pixel = i / decoded.channels();
    size_t x = pixel % decoded.width(), y = pixel / decoded.width();
    throw Error(Errc::mismatch, "differs from " + original_name + " at pixel (" +
                                    std::to_string(x) + ", " + std::to_string(y) + ") channel " +
                                    std::to_string(c) + ": " + std::to_string(a[i]) +
                                    " != " + std::to_string(b[i]));
  }
  if (original_file.bits > 8)
    throw Error(Errc::mismatch, "holds 8-bit samples where " + original_name + " has " +
                                    std::to_string(original_file.bits) +
                                    "-bit ones (equal once these are read as 8 bits)");
}

Result verify_one(const InputFile& input, const Original* original,
                  const std::string& original_name, unsigned threads) {
  Result result;
  try {
    MappedFile file(input.path, require_l3_head);
    ByteSpan bytes = file.bytes();
    require_l3_head(bytes);
    const l3::FileInfo info = l3::verify(bytes, threads);
    result.shape = info.shape;
    result.message = "ok, " + shape_text(info.shape) + ", every patch checksum matches";
    if (original) {
      compare(l3::decode(bytes, threads), *original, original_name);
      result.message += ", identical to " + original_name;
    }
  } catch (const Error& e) {
    result.code = item_exit_code(e.code());
    result.message = with_path(input.path, e).what();
  } catch (const std::bad_alloc&) {
    result.code = kExitFailure;
    result.message = display_path(input.path) + ": " + out_of_memory_message();
  } catch (const std::exception& e) {
    result.code = kExitFailure;
    result.message = display_path(input.path) + ": " + e.what();
  }
  return result;
}

// Decodes the original by whatever codec its magic bytes name; throws naming its path.
Original decode_original(const std::filesystem::path& path) {
  try {
    MappedFile file(path, image::check_image_head);
    if (file.bytes().empty()) throw Error(Errc::corrupt_data, "empty file");
    const image::Codec& codec = image::sniff_codec_or_throw(file.bytes());  // sniffed once
    Original original{codec.decode(file.bytes())};
    original.bits = codec.probe(file.bytes()).bits;
    return original;
  } catch (const Error& e) {
    throw with_path(path, e);
  }
}

// The originals of a tree that l3 encode mirrored: OUT/rel/NAME.l3 came from IN/rel/NAME.EXT, so
// each L3 file's original is found by its relative path without the extension. Indices into the
// originals' list, sorted by that key: maps and sets of paths took about 1 KB a file.
class Pairing {
 public:
  Pairing() = default;
  Pairing(const InputList& inputs, const std::string& against, const Globals& globals)
      : against_(against) {
    // The originals are what encode takes from the tree: every image but the L3 files.
    const ScanProgress scanning{globals, kVerifyCommand};
    originals_ = collect_inputs(
        {against}, [](const image::Codec& c) { return c.name() != "l3"; }, nullptr, false, {},
        &scanning);
    by_key_.resize(originals_.size());
    for (size_t k = 0; k < by_key_.size(); ++k) by_key_[k] = k;
    // Stable: the originals of one key stay in the walk's order.
    std::stable_sort(by_key_.begin(), by_key_.end(), [this](size_t a, size_t b) {
      return path_less(original_key(a), original_key(b));
    });
    group_.resize(inputs.size(), kNone);
    std::vector<bool> paired(by_key_.size(), false);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string_view key = key_of(inputs.relative(i));
      auto it = std::lower_bound(
          by_key_.begin(), by_key_.end(), key,
          [this](size_t k, std::string_view x) { return path_less(original_key(k), x); });
      if (it == by_key_.end() || original_key(*it) != key) continue;
      group_[i] = static_cast<size_t>(it - by_key_.begin());
      paired[group_[i]] = true;
    }
    for (size_t g = 0; g < by_key_.size();) {
      size_t end = g + 1;
      while (end < by_key_.size() && original_key(by_key_[end]) == original_key(by_key_[g])) ++end;
      if (!paired[g])
        for (size_t k = g; k < end; ++k)
          missing_.push_back(display_path(originals_.path(by_key_[k])));
      g = end;
    }
  }

  /// Why L3 file i of `inputs` has no original to compare with; empty when it has one.
  std::string problem(const InputList& inputs, size_t i) const {
    const size_t g = group_[i];
    if (g == kNone)
      return display_path(inputs.path(i)) + ": no original " +
             display_path(std::filesystem::path(against_) / key_of(inputs.relative(i))) +
             ".* to compare with";
    if (g + 1 < by_key_.size() && original_key(by_key_[g + 1]) == original_key(by_key_[g]))
      return display_path(inputs.path(i)) + ": two originals, " +
             display_path(originals_.path(by_key_[g])) + " and " +
             display_path(originals_.path(by_key_[g + 1]));
    return {};
  }
  /// The original of L3 file i, when problem() is empty.
  std::filesystem::path original(size_t i) const { return originals_.path(by_key_[group_[i]]); }
  /// The originals without their L3 file.
  const std::vector<std::string>& missing() const { return missing_; }

 private:
  static constexpr size_t kNone = SIZE_MAX;

  // The relative path without its extension, as std::filesystem::path::replace_extension() has
  // it (a name's leading dot starts no extension).
  static std::string_view key_of(std::string_view relative) {
    const size_t name = relative.rfind('/') + 1;  // 0 without a slash
    const size_t dot = relative.rfind('.');
    const std::string_view filename = relative.substr(name);
    if (dot == std::string_view::npos || dot <= name || filename == "..") return relative;
    return relative.substr(0, dot);
  }
  std::string_view original_key(size_t k) const { return key_of(originals_.relative(k)); }

  std::string against_;
  InputList originals_;
  std::vector<size_t> by_key_;  // indices into originals_, sorted by key
  std::vector<size_t> group_;   // per L3 file: where its key starts in by_key_; kNone if absent
  std::vector<std::string> missing_;
};

// Whether --against names a directory; a path that cannot be reached is an I/O error naming it,
// before FILE's tree is walked (a mistyped originals folder was taken for a file and reported
// as a file count).
bool against_is_directory(const std::string& against) {
  if (against.empty() || against == "-") return false;
  struct stat st {};
  if (::stat(against.c_str(), &st) != 0) {
    const int err = errno;
    throw Error(Errc::io, against + ": cannot open: " + std::strerror(err), err);
  }
  return S_ISDIR(st.st_mode);
}

int run_verify(const VerifyOptions& options, const Globals& globals) {
  const bool trees = against_is_directory(options.against);
  std::vector<std::string> empty_dirs;
  const ScanProgress scanning{globals, kVerifyCommand};
  const InputList inputs = collect_inputs(
      options.inputs, [](const image::Codec& c) { return c.name() == "l3"; }, &empty_dirs, false,
      "l3", &scanning);  // a damaged *.l3 fails by name
  report_empty_dirs(globals, kVerifyCommand, empty_dirs, inputs.size(), "l3");
  const bool one_directory =
      options.inputs.size() == 1 && std::filesystem::is_directory(options.inputs[0]);
  if (trees && !one_directory)
    throw Error(Errc::invalid_argument,
                "--against " + options.against +
                    ": a directory of originals needs a single FILE that is a directory too");
  if (!options.against.empty() && !trees && one_directory && inputs.size() != 1)
    throw Error(Errc::invalid_argument,
                "--against " + options.against + ": FILE " + options.inputs[0] +
                    " is a directory, so --against must be the directory of its originals, not "
                    "a file");
  if (!options.against.empty() && !trees && inputs.size() != 1)
    throw Error(Errc::invalid_argument, "--against: compares one l3 file with its original, but " +
                                            std::to_string(inputs.size()) + " files were given");

  // One original, decoded once; or one per L3 file, decoded by the thread that checks it.
  std::unique_ptr<Original> original;
  Pairing pairing;
  if (trees)
    pairing = Pairing(inputs, options.against, globals);
  else if (!options.against.empty())
    original = std::make_unique<Original>(decode_original(options.against));

  // Each result is reported in input order as soon as it and those before it are known, then
  // dropped: memory does not grow with the file count.
  const size_t n = inputs.size();
  const ThreadSplit threads = split_threads(globals, kVerifyCommand, n);
  std::unique_ptr<JsonStream> json;
  if (globals.json)
    json = std::make_unique<JsonStream>(Json{{"schema", "dlprep.l3-verify/1"}}, "files");
  const size_t slots = std::clamp<size_t>(n, 1, kReportOrderWindow);
  std::vector<Result> window(slots);  // result i at i % slots
  int code = kExitOk;
  size_t ok = 0, differ = 0;  // the rest failed
  Progress progress(globals, kVerifyCommand, n);
  parallel_for_ordered(
      n, threads.files, slots,
      [&](size_t i) {
        Result& result = window[i % slots];
        if (!trees) {
          result = verify_one(inputs[i], original.get(), options.against, threads.patches);
        } else if (std::string problem = pairing.problem(inputs, i); !problem.empty()) {
          result = {kExitFailure, std::move(problem), {}};
        } else {
          const std::filesystem::path original_path = pairing.original(i);
          try {
            const Original image = decode_original(original_path);
            result = verify_one(inputs[i], &image, display_path(original_path), threads.patches);
          } catch (const Error& e) {
            result = {kExitFailure, e.what(), {}};
          } catch (const std::exception& e) {  // std::bad_alloc from a huge original
            result = {kExitFailure, display_path(original_path) + ": " + e.what(), {}};
          }
        }
        if (result.code != kExitOk) print_error(kVerifyCommand, result.message);
        progress.step();
      },
      [&](size_t i) {
        const Result& r = window[i % slots];
        code = worse_exit(code, r.code);
        ok += r.code == kExitOk;
        differ += r.code == kExitMismatch;
        const std::string path = display_path(inputs[i].path);
        if (json) {
          Json f = {{"path", path}};
          f["status"] = r.code == kExitOk ? "ok" : r.code == kExitMismatch ? "mismatch" : "failed";
          if (r.code == kExitOk) {
            f["width"] = r.shape.width;
            f["height"] = r.shape.height;
            f["channels"] = r.shape.channels;
          } else {
            f["error"] = r.message;
          }
          json->add(f);
        } else if (r.code == kExitOk) {
          write_stdout(path + ": " + r.message + "\n");
        }
      });
  progress.finish();
  for (const auto& path : pairing.missing())
    print_error(kVerifyCommand, path + ": no l3 file for it in " + options.inputs[0]);
  if (!pairing.missing().empty()) code = worse_exit(code, kExitFailure);
  // Over many files, the few errors printed among the ok lines need a count to be seen.
  if (!json && (n > 1 || trees)) {
    std::string line = std::string(kVerifyCommand) + ": " + std::to_string(n) +
                       " files: " + std::to_string(ok) + " ok, " + std::to_string(differ) +
                       " differ, " + std::to_string(n - ok - differ) + " failed";
    if (trees)
      line += "; " + std::to_string(pairing.missing().size()) + " originals without an l3 file";
    print_note(globals, line);
  }
  if (json) {
    // The totals of the text mode's last line, named as dataset verify's report names them.
    Json tail = {{"ok", ok}, {"mismatched", differ}, {"failed", n - ok - differ}};
    if (!options.against.empty()) tail["against"] = options.against;
    if (trees) tail["missing"] = pairing.missing();  // originals without their L3 file
    json->finish(tail);
  }
  return code;
}

}  // namespace

Action add_l3_verify_command(CLI::App& l3) {
  auto options = std::make_shared<VerifyOptions>();
  CLI::App* cmd = l3.add_subcommand(
      "verify", "check L3 files: structure, every patch checksum, and optionally the pixels");
  cmd->add_option("FILE", options->inputs,
                  "L3 files, directories (walked recursively), or - for standard input")
      ->required()
      ->type_name("FILE|DIR");
  cmd->add_option("--against", options->against,
                  "original image (any format) to compare with, or the directory of originals")
      ->type_name("ORIGINAL|DIR");
  cmd->footer(
      "ORIGINAL may be in any format dlprep reads (sniffed from its magic bytes); it needs a\n"
      "single FILE. With a directory of originals, FILE is the one directory that\n"
      "`l3 encode DIR/ -o FILE/` wrote: FILE/a/b.l3 is compared with DIR/a/b.* (any image\n"
      "format), and an L3 file without its original, or an original without its L3 file,\n"
      "is a failure.\n"
      "Each file is fully decoded, so every patch checksum is checked. With --against the\n"
      "decoded pixels must equal the original's exactly; on a difference the first differing\n"
      "pixel (x, y, channel) is named and the exit status is 3. A file that cannot be read or is\n"
      "corrupt gives exit status 1. Files that pass are listed on stdout; with more than one\n"
      "file, a last line on stderr counts them (ok, differ, failed).\n"
      "\n"
      "Examples:\n"
      "  dlprep l3 verify dataset-l3/\n"
      "  dlprep l3 verify photo.l3 --against photo.png\n"
      "  dlprep l3 verify dataset-l3/ --against dataset/\n");
  return [options](const Globals& globals) { return run_verify(*options, globals); };
}

}  // namespace dlprep::cli

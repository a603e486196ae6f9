// dlprep info FILE…: what each image file is, from its header (format sniffed from magic bytes).
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "image/codec.hpp"
#include "inputs.hpp"
#include "l3/l3.hpp"
#include "output.hpp"

namespace dlprep::cli {
namespace {

constexpr const char* kInfoCommand = "info";

struct InfoOptions {
  std::vector<std::string> inputs;
};

// Everything `info` reports about one file; throws Error naming what is wrong.
Json describe(const InputFile& input) {
  MappedFile file(input.path, image::check_image_head);
  ByteSpan bytes = file.bytes();
  if (bytes.empty()) throw Error(Errc::corrupt_data, "empty file");
  const image::Codec* codec = &image::sniff_codec_or_throw(bytes);
  Json j;
  j["path"] = display_path(input.path);
  j["format"] = std::string(codec->name());
  if (codec->name() == "l3") {
    l3::FileInfo info = l3::inspect(bytes);
    j["width"] = info.shape.width;
    j["height"] = info.shape.height;
    j["channels"] = info.shape.channels;
    j["file_bytes"] = bytes.size();
    j["bits_per_sample"] = 8;
    j["l3"] = {{"version", info.version},
               {"patch", info.patch},
               {"colour_transform", info.subtract_green ? "subtract_green" : "none"},
               {"channel_bytes", info.channel_bytes}};
  } else {
    image::ImageInfo info = codec->probe(bytes);
    j["width"] = info.shape.width;
    j["height"] = info.shape.height;
    j["channels"] = info.shape.channels;
    j["file_bytes"] = bytes.size();
    j["bits_per_sample"] = info.bits;
  }
  return j;
}

std::string details(const Json& j) {
  if (j.contains("bits_per_sample") && j["bits_per_sample"].get<unsigned>() > 8)
    return std::to_string(j["bits_per_sample"].get<unsigned>()) + "-bit samples (read as 8)";
  if (!j.contains("l3")) return "";
  const auto& l3 = j["l3"];
  std::string s = "v" + std::to_string(l3["version"].get<unsigned>()) + ", patch " +
                  std::to_string(l3["patch"].get<unsigned>()) + ", " +
                  (l3["colour_transform"] == "none" ? "no colour transform" : "subtract green") +
                  ", channel bytes";
  for (const auto& b : l3["channel_bytes"]) s += " " + std::to_string(b.get<uint64_t>());
  return s;
}

// Rows that size the text table's columns: a listing of that many looks as if it were sized on
// every row, and a longer one starts printing after them instead of at its end.
constexpr size_t kTableLookahead = 1000;

int run_info(const InfoOptions& options, const Globals& globals) {
  // Named files are all reported (errors included); directories list the images inside them,
  // those in formats dlprep does not read too (an error naming the format, as encode gives).
  std::vector<std::string> empty_dirs;
  const ScanProgress scanning{globals, kInfoCommand};
  const InputList inputs = collect_inputs(
      options.inputs, [](const image::Codec&) { return true; }, &empty_dirs, true, "l3",
      &scanning);  // a damaged *.l3 is reported by name, as l3 decode and verify report it
  report_empty_dirs(globals, kInfoCommand, empty_dirs, inputs.size(), "image");
  // Each file's result is printed as it is known and not kept: the listing of a million files
  // would otherwise take gigabytes.
  int code = kExitOk;
  std::unique_ptr<JsonStream> json;
  if (globals.json) json = std::make_unique<JsonStream>(Json{{"schema", "dlprep.info/1"}}, "files");
  // One file that cannot be read gets its error alone, no table around it.
  const bool table_shown = inputs.size() != 1;
  Table table({"file", "format", "width", "height", "channels", "bytes", "details"},
              kTableLookahead);
  bool any_row = false;
  Progress progress(globals, kInfoCommand, inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputFile input = inputs[i];
    try {
      Json j = describe(input);
      if (json) {
        json->add(j);
      } else {
        table.add_row({j["path"], j["format"], std::to_string(j["width"].get<unsigned>()),
                       std::to_string(j["height"].get<unsigned>()),
                       std::to_string(j["channels"].get<unsigned>()),
                       std::to_string(j["file_bytes"].get<uint64_t>()), details(j)});
        any_row = true;
      }
    } catch (const Error& e) {
      Error err = with_path(input.path, e);
      print_error(kInfoCommand, err.what());
      if (json) json->add({{"path", display_path(input.path)}, {"error", err.what()}});
      code = worse_exit(code, item_exit_code(e.code()));
    }
    progress.step();
  }
  progress.finish();
  if (json)
    json->finish();
  else if (table_shown || any_row)
    table.print();
  return code;
}

}  // namespace

Action add_info_command(CLI::App& app) {
  auto options = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand(kInfoCommand, "show format, size and channels of image files");
  cmd->add_option("FILE", options->inputs, "image files, directories, - for stdin")
      ->required()
      ->type_name("FILE|DIR|-");
  cmd->footer(
      "For each file: the format (from its magic bytes, never its name), width, height, channels\n"
      "and file size; for L3 files also the format version, patch size, colour transform and\n"
      "the compressed bytes of each channel. A file that cannot be read is reported and the\n"
      "others are still listed (exit status 1). Files are listed as they are read, in the order\n"
      "of the arguments (a directory's files sorted by path); the table's columns are as wide as\n"
      "the widest of the first 1000 rows.\n"
      "\n"
      "Examples:\n"
      "  dlprep info photo.png img/0031.l3\n"
      "  dlprep --json info images/ | jq '.files[].width'\n");
  return [options](const Globals& globals) { return run_info(*options, globals); };
}

}  // namespace dlprep::cli

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

constexpr const char* kCommand = "info";

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

int run_info(const InfoOptions& options, const Globals& globals) {
  // Named files are all reported (errors included); directories list the images inside them,
  // those in formats dlprep does not read too (an error naming the format, as encode gives).
  std::vector<std::string> empty_dirs;
  auto inputs = collect_inputs(
      options.inputs, [](const image::Codec&) { return true; }, &empty_dirs, true);
  for (const auto& dir : empty_dirs)
    print_warning(globals, kCommand, dir + ": no image files found");
  int code = kExitOk;
  Json files = Json::array();
  Table table({"file", "format", "width", "height", "channels", "bytes", "details"});
  for (const InputFile& input : inputs) {
    try {
      Json j = describe(input);
      table.add_row({j["path"], j["format"], std::to_string(j["width"].get<unsigned>()),
                     std::to_string(j["height"].get<unsigned>()),
                     std::to_string(j["channels"].get<unsigned>()),
                     std::to_string(j["file_bytes"].get<uint64_t>()), details(j)});
      files.push_back(std::move(j));
    } catch (const Error& e) {
      Error err = with_path(input.path, e);
      print_error(kCommand, err.what());
      files.push_back({{"path", display_path(input.path)}, {"error", err.what()}});
      code = worse_exit(code, item_exit_code(e.code()));
    }
  }
  if (globals.json)
    print_json({{"schema", "dlprep.info/1"}, {"files", files}});
  else if (code == kExitOk || files.size() > 1)
    table.print();
  return code;
}

}  // namespace

Action add_info_command(CLI::App& app) {
  auto options = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand(kCommand, "show format, size and channels of image files");
  cmd->add_option("FILE", options->inputs, "image files, directories, - for stdin")
      ->required()
      ->type_name("FILE|DIR|-");
  cmd->footer(
      "For each file: the format (from its magic bytes, never its name), width, height, channels\n"
      "and file size; for L3 files also the format version, patch size, colour transform and\n"
      "the compressed bytes of each channel. A file that cannot be read is reported and the\n"
      "others are still listed (exit status 1).\n"
      "\n"
      "Examples:\n"
      "  dlprep info photo.png img/0031.l3\n"
      "  dlprep --json info images/ | jq '.files[].width'\n");
  return [options](const Globals& globals) { return run_info(*options, globals); };
}

}  // namespace dlprep::cli

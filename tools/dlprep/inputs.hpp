// Turning the INPUT… arguments of a command into a list of files, and each file into the path
// of its output (one file, several files into a directory, or whole trees mirrored).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "command.hpp"
#include "image/codec.hpp"
#include "input_list.hpp"

namespace dlprep::cli {

/// Whom collect_inputs shows the progress of its walk, and as which command.
struct ScanProgress {
  const Globals& globals;
  std::string command;
};

/// Which files found while walking a directory are kept (named files are always kept, so that a
/// file the user named but that is not an image is reported as an error, not silently skipped).
using CodecFilter = std::function<bool(const image::Codec&)>;

/// Expands the arguments: "-" and files as given; directories walked recursively in sorted order,
/// keeping regular files whose magic bytes (never the name) match a codec accepted by `keep`;
/// hidden names (a leading dot), files and folders, are skipped; directory links are followed,
/// except one to a folder it is in (a loop).
/// `empty_dirs` receives the directory arguments in which nothing was kept. With
/// `keep_unreadable_images`, images in formats no codec reads (TIFF, GIF ...) are kept too, so
/// that they fail with their format's name instead of being silently left out. Files named
/// *.`extension_kept` (any case) are kept whatever their first bytes, so that a damaged one (a
/// flipped bit in an L3 file's magic) fails by name instead of vanishing from the run.
/// A file named twice (the same file, by device and inode, at the same place in the output
/// tree) is kept once. With `scanning`, a directory's walk shows its progress, the files looked
/// at so far ("info (scanning): 1200 files"): a walk of a million files takes tens of seconds.
/// Throws Error(io) when a directory cannot be read.
InputList collect_inputs(const std::vector<std::string>& args, const CodecFilter& keep,
                         std::vector<std::string>* empty_dirs = nullptr,
                         bool keep_unreadable_images = false, std::string_view extension_kept = {},
                         const ScanProgress* scanning = nullptr);

/// The end of a walk's report: a warning for each directory argument in which nothing was
/// found ("DIR: no WHAT files found"), or, when nothing was found at all, Error(invalid_argument)
/// naming them: a run over an empty or mistyped tree is a usage error (exit 2), as in
/// convert-dataset and profile-mix, not a success that did nothing (`l3 verify out/` in CI).
/// `hint`, when not empty, ends the error in parentheses.
void report_empty_dirs(const Globals& globals, std::string_view command,
                       const std::vector<std::string>& empty_dirs, size_t found,
                       std::string_view what, std::string_view hint = {});

/// How outputs are named. With one named input and an OUT that is not an existing directory and
/// does not end in '/', OUT is the output file itself ("-" = stdout); otherwise OUT is a directory
/// that receives NAME.EXT for named files and mirrors the tree of each directory argument.
class OutputPlan {
 public:
  /// Throws Error(invalid_argument) for "-o -" with more than one input.
  OutputPlan(const std::filesystem::path& out, const InputList& inputs);
  bool to_directory() const { return to_directory_; }
  bool to_stdout() const { return out_ == "-"; }
  /// The output path of an input, with extension `ext` (no dot) when OUT is a directory.
  std::filesystem::path output_for(const InputFile& input, const std::string& ext) const;

 private:
  std::filesystem::path out_;
  bool to_directory_ = false;
};

}  // namespace dlprep::cli

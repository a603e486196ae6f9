#include "inputs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "core/directory_walk.hpp"
#include "core/error.hpp"
#include "core/file_io.hpp"
#include "output.hpp"

namespace dlprep::cli {
namespace fs = std::filesystem;

namespace {

// The first bytes of a file: 64 cover every magic we know (the longest, WebP's RIFF....WEBP,
// needs 12); empty when it cannot be read.
/// The file's first bytes; nullopt when it cannot be opened.
std::optional<std::string> head_of(const fs::path& path) {
  std::array<char, 64> head{};
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  in.read(head.data(), head.size());
  return std::string(head.data(), static_cast<size_t>(in.gcount()));
}

// Whether the name ends in "." + ext, in any case; false for an empty ext.
bool has_extension(const fs::path& path, std::string_view ext) {
  if (ext.empty()) return false;
  const std::string name = path.extension().string();
  return name.size() == ext.size() + 1 &&
         std::equal(ext.begin(), ext.end(), name.begin() + 1, [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

}  // namespace

InputList collect_inputs(const std::vector<std::string>& args, const CodecFilter& keep,
                         std::vector<std::string>* empty_dirs, bool keep_unreadable_images,
                         std::string_view extension_kept, const ScanProgress* scanning) {
  InputList files;
  std::optional<Progress> progress;  // from the first directory: named files need no walk
  uint64_t looked_at = 0;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (arg == "-" || !fs::is_directory(arg, ec)) {
      files.push_back(arg);
      continue;
    }
    const size_t first = files.size();
    if (scanning && !progress) progress.emplace(scanning->globals, scanning->command, 0);
    // Directory links are followed (a subset tree of links to class folders), as in
    // convert-dataset's walk; one that leads back to a folder it is in is not (a loop).
    DirectoryWalkOptions options;
    options.follow_directory_links = true;
    DirectoryWalk walk(arg, options);
    while (walk.next(ec)) {
      // Hidden names (.cache/, .ipynb_checkpoints/, the temp files of an interrupted run) are
      // never inputs, as in convert-dataset's walk.
      if (walk.name().starts_with(".")) {
        walk.skip_directory();
        continue;
      }
      if (walk.is_directory()) continue;
      // A link to nothing (or one that cannot be followed) is kept, to fail naming it, as in
      // convert-dataset's walk: it could be an image, and a tree must not lose one unsaid.
      const fs::file_type type = walk.type();
      const bool broken_link = walk.symlink_type() == fs::file_type::symlink &&
                               (type == fs::file_type::not_found || type == fs::file_type::unknown);
      if (type != fs::file_type::regular && !broken_link) continue;
      if (progress) progress->set(++looked_at, 0, "scanning");
      const fs::path& path = walk.path();
      const std::optional<std::string> opened = head_of(path);
      if (!opened) {  // kept, to fail naming it and why, not to leave a class out unsaid
        files.push_back(path.native(), path.lexically_relative(arg).native());
        continue;
      }
      const std::string& head = *opened;
      const image::Codec* codec = head.empty() ? nullptr : image::sniff_codec(bytes_of(head));
      const bool kept = has_extension(path, extension_kept) ||
                        (codec ? keep(*codec)
                               : keep_unreadable_images &&
                                     image::unreadable_image_format(bytes_of(head)) != nullptr);
      if (kept) files.push_back(path.native(), path.lexically_relative(arg).native());
    }
    if (ec)
      throw Error(Errc::io, walk.failed_folder() + ": cannot read directory: " + ec.message());
    files.sort_from(first);
    if (files.size() == first && empty_dirs) empty_dirs->push_back(arg);
  }
  // A file named twice (`$(wildcard *.png) $(CHANGED)` in a Makefile, `x.png $PWD/x.png`) is
  // one input, not two writers of one output: the same file (device and inode) at the same place
  // in the output tree. One argument cannot name a file twice (a walk reaches each relative path
  // once). The files are sorted by (device, inode, relative path, index), so that all but the
  // first of each group drop; 24 bytes a file, not a set of paths as large as the list.
  if (args.size() < 2) return files;
  struct Key {
    uint64_t dev, ino;
    size_t index;
  };
  std::vector<Key> keys;
  for (size_t i = 0; i < files.size(); ++i) {
    struct stat st {};
    const std::string path(files.path(i));
    if (path == "-" || ::stat(path.c_str(), &st) != 0) continue;  // its error comes later
    keys.push_back({st.st_dev, st.st_ino, i});
  }
  auto same_place = [&files](const Key& a, const Key& b) {
    return std::tie(a.dev, a.ino) == std::tie(b.dev, b.ino) &&
           files.relative(a.index) == files.relative(b.index);
  };
  std::sort(keys.begin(), keys.end(), [&files](const Key& a, const Key& b) {
    return std::forward_as_tuple(a.dev, a.ino, files.relative(a.index), a.index) <
           std::forward_as_tuple(b.dev, b.ino, files.relative(b.index), b.index);
  });
  std::vector<bool> dropped(files.size(), false);
  for (size_t k = 1; k < keys.size(); ++k)
    if (same_place(keys[k - 1], keys[k])) dropped[keys[k].index] = true;
  files.erase_if([&dropped](size_t i) { return dropped[i]; });
  return files;
}

void report_empty_dirs(const Globals& globals, std::string_view command,
                       const std::vector<std::string>& empty_dirs, size_t found,
                       std::string_view what, std::string_view hint) {
  const std::string nothing = ": no " + std::string(what) + " files found";
  if (found > 0) {
    for (const auto& dir : empty_dirs) print_warning(globals, command, dir + nothing);
    return;
  }
  // Each folder once, and a few of them: `l3 verify out/*/` may name thousands.
  constexpr size_t kNamed = 3;
  std::vector<std::string> dirs;
  std::set<std::string_view> seen;
  for (const auto& dir : empty_dirs)
    if (seen.insert(dir).second) dirs.push_back(dir);
  std::string named;
  for (size_t i = 0; i < std::min(dirs.size(), kNamed); ++i)
    named += (i == 0 ? "" : ", ") + dirs[i];
  if (dirs.size() > kNamed) named += " and " + std::to_string(dirs.size() - kNamed) + " more";
  throw Error(Errc::invalid_argument,
              named + nothing + (hint.empty() ? "" : " (" + std::string(hint) + ")"));
}

OutputPlan::OutputPlan(const fs::path& out, const InputList& inputs) : out_(out) {
  // One file found in a directory argument is still a tree to mirror.
  const bool several = inputs.size() > 1 || (inputs.size() == 1 && !inputs.relative(0).empty());
  if (out == "-") {
    if (inputs.size() > 1)
      throw Error(Errc::invalid_argument, "-o -: standard output takes one image, but " +
                                              std::to_string(inputs.size()) + " inputs were given");
    if (several)
      throw Error(Errc::invalid_argument,
                  "-o -: standard output takes one image named as a file, not a directory's");
    return;
  }
  std::error_code ec;
  std::string s = out.string();
  to_directory_ = several || (!s.empty() && s.back() == '/') || fs::is_directory(out, ec);
  // One error up front, not one "cannot create directory" per file. (One output file may be a
  // link to nothing, which writing creates; not so a folder above it.)
  if (const std::optional<fs::path> file =
          file_in_the_way(to_directory_ ? out : out.parent_path())) {
    const std::string place = file->string();
    throw Error(Errc::invalid_argument,
                "-o " + s + ": " + (place == s ? "" : place + " ") +
                    "exists and is not a directory" +
                    (to_directory_ ? ", where " +
                                         (several ? std::to_string(inputs.size()) + " outputs"
                                                  : std::string("outputs")) +
                                         " would go"
                                   : std::string()));
  }
}

fs::path OutputPlan::output_for(const InputFile& input, const std::string& ext) const {
  if (!to_directory_) return out_;
  fs::path name = input.relative.empty() ? input.path.filename() : input.relative;
  if (input.path == "-" || name.empty()) name = "stdin";
  name.replace_extension(ext);
  return out_ / name;
}

}  // namespace dlprep::cli

// The files a command processes, kept compact: a directory argument of a million files is listed
// before the first is processed, and two std::filesystem::path per file (each with its parsed
// components) cost about 450 bytes a file; here a file costs its path's bytes and 16.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dlprep::cli {

/// One file to process.
struct InputFile {
  std::filesystem::path path;      ///< as given, or found under a directory argument; "-" = stdin
  std::filesystem::path relative;  ///< path below the directory argument; empty if given by name
};

/// Whether path `a` sorts before `b` as std::filesystem::path orders them (component by
/// component), for paths whose separators are single slashes, as a walk makes them.
bool path_less(std::string_view a, std::string_view b);

/// A list of InputFile: each path is stored once, in one buffer, and its relative path is the
/// tail of it (a walk finds DIR/REL). Files are made on demand.
class InputList {
 public:
  /// Appends a file. Throws Error(internal) if `relative` is not a tail of `path`.
  void push_back(std::string_view path, std::string_view relative = {});

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  /// The i-th file (0 <= i < size()).
  InputFile operator[](size_t i) const { return {path(i), relative(i)}; }
  std::string_view path(size_t i) const;
  std::string_view relative(size_t i) const;

  /// Sorts the files from `first` on by path (path_less).
  void sort_from(size_t first);
  /// Removes the files whose index `drop` returns true for (called once per file, in order),
  /// keeping the others' order; their bytes stay, as removing is for the few named twice.
  void erase_if(const std::function<bool(size_t i)>& drop);

 private:
  struct Entry {
    uint64_t begin;          // of the path in bytes_
    uint32_t size;           // of the path (PATH_MAX is 4096)
    uint32_t relative_size;  // of its tail that is the relative path
  };
  std::string bytes_;
  std::vector<Entry> entries_;
};

}  // namespace dlprep::cli

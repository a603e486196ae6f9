// A walk of a directory tree that holds one directory descriptor open at a time, whatever its
// depth (std::filesystem::recursive_directory_iterator holds one a level: a tree 9 folders deep
// failed a run under a tight `ulimit -n`, and one deeper than the limit could not be walked).
#pragma once

#include <dirent.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace dlprep {

/// How a DirectoryWalk treats links.
struct DirectoryWalkOptions {
  /// Enter links to directories. One that leads to a folder the walk is inside (the same device
  /// and inode as the folder holding it or one above) is still reported, but not entered.
  bool follow_directory_links = false;
};

/// Every entry below a root folder (not the root itself), each once. A folder's entries come in
/// the order the system lists them; the entries of its subfolders come after all of its own
/// (it is closed before they are opened), so a caller that needs an order sorts. Only the
/// subfolders still to walk are kept in memory, as paths, never a folder's list of names.
/// A subfolder that is gone (or no longer a folder) by the time the walk opens it is skipped.
///
///   DirectoryWalk walk(root);
///   std::error_code ec;
///   while (walk.next(ec)) use(walk.path());
///   if (ec) throw ...;
class DirectoryWalk {
 public:
  explicit DirectoryWalk(std::filesystem::path root, DirectoryWalkOptions options = {});
  ~DirectoryWalk();
  DirectoryWalk(const DirectoryWalk&) = delete;
  DirectoryWalk& operator=(const DirectoryWalk&) = delete;

  /// Moves to the next entry: false at the end, or on an error (the root or a folder cannot be
  /// opened or read), which `ec` then holds; the walk is over either way. Throws nothing but
  /// std::bad_alloc.
  bool next(std::error_code& ec);

  /// After next() failed: the folder that could not be opened or read (the root or below it).
  const std::string& failed_folder() const { return failed_folder_; }
  /// The current entry's path: the root's path, '/', the path below it.
  const std::string& path_string() const { return path_; }
  /// The same as a std::filesystem::path (made on the first call for each entry).
  const std::filesystem::path& path() const;
  /// The entry's name (the last part of its path).
  std::string_view name() const { return std::string_view(path_).substr(name_at_); }
  /// Folders between the root and the entry: 0 for the root's own entries.
  unsigned depth() const { return depth_; }
  /// The entry's type, links not followed (a link is file_type::symlink); file_type::unknown
  /// when it cannot be told (it went away).
  std::filesystem::file_type symlink_type() const { return type_; }
  /// The type of what the entry leads to, links followed (file_type::not_found: a dangling
  /// link).
  std::filesystem::file_type type() const;
  /// Whether the entry is a folder the walk enters (unless skipped): a folder, or with
  /// follow_directory_links a link to one (one that loops is then passed over).
  bool is_directory() const { return pending_; }
  /// Does not enter the current entry (a folder): disable_recursion_pending's counterpart.
  void skip_directory() { pending_ = false; }

 private:
  struct Ancestor;  // a folder being walked or above it, for loop detection
  struct Pending {  // a folder still to walk
    std::string path;
    unsigned depth;
    std::shared_ptr<const Ancestor> parent;
  };
  bool open(Pending folder, std::error_code& ec);
  void close();
  std::filesystem::file_type stat_type(bool follow) const;

  DirectoryWalkOptions options_;
  std::vector<Pending> pending_folders_;
  DIR* dir_ = nullptr;  // the one folder open
  std::string dir_path_;
  std::string failed_folder_;
  unsigned dir_depth_ = 0;
  std::shared_ptr<const Ancestor> dir_ancestor_;
  bool started_ = false;
  std::string path_;
  size_t name_at_ = 0;
  unsigned depth_ = 0;
  std::filesystem::file_type type_ = std::filesystem::file_type::none;
  bool pending_ = false;  // the current entry is a folder to enter
  mutable std::filesystem::path fs_path_;
  mutable bool fs_path_made_ = false;
};

}  // namespace dlprep

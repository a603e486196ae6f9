#include "core/directory_walk.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace dlprep {
namespace fs = std::filesystem;

namespace {

// readdir's d_type, which most file systems fill in (no stat per entry); none when it does not.
fs::file_type type_of_dirent(unsigned char d_type) {
  switch (d_type) {
    case DT_REG:
      return fs::file_type::regular;
    case DT_DIR:
      return fs::file_type::directory;
    case DT_LNK:
      return fs::file_type::symlink;
    case DT_BLK:
      return fs::file_type::block;
    case DT_CHR:
      return fs::file_type::character;
    case DT_FIFO:
      return fs::file_type::fifo;
    case DT_SOCK:
      return fs::file_type::socket;
    default:
      return fs::file_type::none;
  }
}

}  // namespace

// The folders from the one open up to the root, by device and inode: a link that leads to one
// of them is a loop. Shared by the subfolders still to walk, so each costs one node.
struct DirectoryWalk::Ancestor {
  dev_t dev;
  ino_t ino;
  std::shared_ptr<const Ancestor> parent;
};

DirectoryWalk::DirectoryWalk(fs::path root, DirectoryWalkOptions options) : options_(options) {
  pending_folders_.push_back({root.native(), 0, nullptr});
}

DirectoryWalk::~DirectoryWalk() { close(); }

void DirectoryWalk::close() {
  if (dir_) ::closedir(dir_);
  dir_ = nullptr;
}

const fs::path& DirectoryWalk::path() const {
  if (!fs_path_made_) {
    fs_path_ = path_;
    fs_path_made_ = true;
  }
  return fs_path_;
}

fs::file_type DirectoryWalk::stat_type(bool follow) const {
  struct stat st {};
  if (!dir_) return fs::file_type::unknown;
  if (::fstatat(::dirfd(dir_), path_.c_str() + name_at_, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) !=
      0)
    return errno == ENOENT && follow ? fs::file_type::not_found : fs::file_type::unknown;
  const fs::file_type type = type_of_dirent(IFTODT(st.st_mode));
  return type == fs::file_type::none ? fs::file_type::unknown : type;
}

fs::file_type DirectoryWalk::type() const {
  return type_ == fs::file_type::symlink ? stat_type(true) : type_;
}

// Opens a folder to walk: false when it is skipped or cannot be opened (then `ec` is set).
bool DirectoryWalk::open(Pending folder, std::error_code& ec) {
  const bool root = !started_;
  started_ = true;
  int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  // Not following links, a subfolder that was replaced by a link since it was listed is not
  // entered either.
  if (!root && !options_.follow_directory_links) flags |= O_NOFOLLOW;
  const int fd = ::open(folder.path.c_str(), flags);
  if (fd < 0) {
    const int err = errno;
    // Removed, or replaced by a file or (not following) a link, since its folder was listed.
    if (!root &&
        (err == ENOENT || err == ENOTDIR || (err == ELOOP && !options_.follow_directory_links)))
      return false;
    ec.assign(err, std::generic_category());
    return false;
  }
  if (options_.follow_directory_links) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ec.assign(errno, std::generic_category());
      ::close(fd);
      return false;
    }
    for (const Ancestor* a = folder.parent.get(); a; a = a->parent.get())
      if (a->dev == st.st_dev && a->ino == st.st_ino) {
        ::close(fd);
        return false;
      }
    dir_ancestor_ = std::make_shared<const Ancestor>(Ancestor{st.st_dev, st.st_ino, folder.parent});
  }
  dir_ = ::fdopendir(fd);
  if (!dir_) {
    ec.assign(errno, std::generic_category());
    ::close(fd);
    return false;
  }
  dir_path_ = std::move(folder.path);
  if (!dir_path_.empty() && dir_path_.back() != '/') dir_path_ += '/';
  dir_depth_ = folder.depth;
  return true;
}

bool DirectoryWalk::next(std::error_code& ec) {
  ec.clear();
  // The entry just reported is entered once this folder is closed: one descriptor at a time.
  if (pending_) pending_folders_.push_back({path_, depth_ + 1, dir_ancestor_});
  pending_ = false;
  fs_path_made_ = false;
  type_ = fs::file_type::none;
  for (;;) {
    if (!dir_) {
      if (pending_folders_.empty()) return false;
      Pending folder = std::move(pending_folders_.back());
      pending_folders_.pop_back();
      std::string path = folder.path;
      if (!open(std::move(folder), ec)) {
        if (!ec) continue;
        failed_folder_ = std::move(path);
        pending_folders_.clear();
        return false;
      }
    }
    errno = 0;
    const dirent* entry = ::readdir(dir_);
    if (!entry) {
      const int err = errno;
      if (err != 0) failed_folder_ = dir_path_.substr(0, dir_path_.size() - 1);  // its '/' off
      close();
      if (err == 0) continue;
      ec.assign(err, std::generic_category());
      pending_folders_.clear();
      return false;
    }
    const char* name = entry->d_name;
    if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
    path_.assign(dir_path_);
    name_at_ = path_.size();
    path_.append(name);
    depth_ = dir_depth_;
    type_ = type_of_dirent(entry->d_type);
    if (type_ == fs::file_type::none) type_ = stat_type(false);
    pending_ = type_ == fs::file_type::directory ||
               (type_ == fs::file_type::symlink && options_.follow_directory_links &&
                stat_type(true) == fs::file_type::directory);
    return true;
  }
}

}  // namespace dlprep

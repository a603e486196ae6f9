#include "core/directory_walk.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_scratch.hpp"

using namespace dlprep;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) { return test_scratch::fresh("directory_walk", name); }

void touch(const fs::path& path) { std::ofstream(path) << "x"; }

// Every entry's path below `root` with a '/' after a folder's, sorted; `skip` names folders not
// entered.
std::vector<std::string> walk_all(const fs::path& root, DirectoryWalkOptions options = {},
                                  const std::string& skip = "", std::error_code* error = nullptr) {
  std::vector<std::string> seen;
  DirectoryWalk walk(root, options);
  std::error_code ec;
  while (walk.next(ec)) {
    std::string relative = walk.path().lexically_relative(root).generic_string();
    CHECK(walk.name() == walk.path().filename().string());
    CHECK(walk.depth() == static_cast<unsigned>(std::count(relative.begin(), relative.end(), '/')));
    if (walk.is_directory()) relative += "/";
    if (walk.name() == skip) walk.skip_directory();
    seen.push_back(relative);
  }
  if (error)
    *error = ec;
  else
    CHECK_MESSAGE(!ec, ec.message());
  std::sort(seen.begin(), seen.end());
  return seen;
}

// Whether this is a sanitizer build, whose runtime needs descriptors of its own.
constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__)
    true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    true;
#else
    false;
#endif
#else
    false;
#endif

// The lowest free descriptor: a limit (ulimit -n) of this number leaves no room to open one.
rlim_t lowest_free_fd() {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  ::close(fd);
  return static_cast<rlim_t>(fd);
}

}  // namespace

TEST_CASE("a directory walk reports every entry below the root once, with its depth") {
  const fs::path root = scratch("tree");
  fs::create_directories(root / "a" / "b" / "c");
  fs::create_directories(root / "e");
  touch(root / "f");
  touch(root / "a" / "g");
  touch(root / "a" / "b" / "c" / "h");
  CHECK(walk_all(root) ==
        std::vector<std::string>{"a/", "a/b/", "a/b/c/", "a/b/c/h", "a/g", "e/", "f"});
  // A root named with a trailing '/' gives the same paths, with one '/'.
  DirectoryWalk walk(root.string() + "/");
  std::error_code ec;
  while (walk.next(ec)) CHECK(walk.path_string().find("//") == std::string::npos);
  CHECK(!ec);
}

TEST_CASE("a directory walk does not enter a folder the caller skips") {
  const fs::path root = scratch("skip");
  fs::create_directories(root / "a" / "b");
  fs::create_directories(root / ".hidden" / "c");
  touch(root / ".hidden" / "c" / "x");
  CHECK(walk_all(root, {}, ".hidden") == std::vector<std::string>{".hidden/", "a/", "a/b/"});
}

TEST_CASE("a directory walk enters links to folders only when asked, and never a loop") {
  const fs::path root = scratch("links");
  fs::create_directories(root / "real" / "sub");
  touch(root / "real" / "sub" / "x");
  touch(root / "file");
  fs::create_directory_symlink("real", root / "link");
  fs::create_directory_symlink("..", root / "real" / "up");              // a loop to the root
  fs::create_directory_symlink("../..", root / "real" / "sub" / "top");  // and from lower down
  fs::create_symlink("file", root / "file_link");
  fs::create_symlink("missing", root / "dangling");

  DirectoryWalk walk(root);
  std::error_code ec;
  while (walk.next(ec)) {
    if (walk.name() == "dangling") {
      CHECK(walk.symlink_type() == fs::file_type::symlink);
      CHECK(walk.type() == fs::file_type::not_found);
    }
    if (walk.name() == "file_link") CHECK(walk.type() == fs::file_type::regular);
    if (walk.name() == "link") CHECK(!walk.is_directory());
  }
  CHECK(!ec);
  CHECK(walk_all(root) == std::vector<std::string>{"dangling", "file", "file_link", "link", "real/",
                                                   "real/sub/", "real/sub/top", "real/sub/x",
                                                   "real/up"});
  // Followed: link/ is walked as well as real/; up and top lead to the root, which the walk is
  // in, so they are reported and not entered.
  DirectoryWalkOptions follow;
  follow.follow_directory_links = true;
  CHECK(walk_all(root, follow) ==
        std::vector<std::string>{"dangling", "file", "file_link", "link/", "link/sub/",
                                 "link/sub/top/", "link/sub/x", "link/up/", "real/", "real/sub/",
                                 "real/sub/top/", "real/sub/x", "real/up/"});
}

TEST_CASE("a directory walk reports a root it cannot open, and skips a folder gone since") {
  const fs::path root = scratch("errors");
  std::error_code ec;
  walk_all(root / "missing", {}, "", &ec);
  CHECK(ec == std::errc::no_such_file_or_directory);
  touch(root / "file");
  walk_all(root / "file", {}, "", &ec);
  CHECK(ec == std::errc::not_a_directory);

  // A folder removed after its parent was listed: the walk goes on without it.
  fs::create_directories(root / "tree" / "gone" / "deeper");
  fs::create_directories(root / "tree" / "kept");
  touch(root / "tree" / "kept" / "x");
  DirectoryWalk walk(root / "tree");
  std::vector<std::string> seen;
  while (walk.next(ec)) {
    seen.push_back(walk.path().lexically_relative(root / "tree").generic_string());
    if (walk.name() == "gone") fs::remove_all(walk.path());
  }
  CHECK(!ec);
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<std::string>{"gone", "kept", "kept/x"});
}

TEST_CASE("a directory walk holds one descriptor at a time, however deep the tree") {
  if (kSanitized) return;  // the sanitizers' runtime needs descriptors of its own
  // 64 levels: recursive_directory_iterator would hold 64 descriptors.
  const fs::path root = scratch("deep");
  fs::path deep = root;
  for (int i = 0; i < 64; ++i) deep /= "d";
  fs::create_directories(deep);
  touch(deep / "leaf");
  rlimit saved{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
  rlimit low = saved;
  low.rlim_cur = lowest_free_fd() + 1;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  std::vector<std::string> seen;
  std::error_code ec;
  {
    DirectoryWalk walk(root);
    while (walk.next(ec)) seen.push_back(walk.path_string());
  }
  // With no descriptor to spare the root cannot be opened: an error, not an empty tree.
  low.rlim_cur = lowest_free_fd();
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  std::error_code none_left;
  {
    DirectoryWalk walk(root);
    while (walk.next(none_left)) {
    }
  }
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &saved) == 0);
  CHECK_MESSAGE(!ec, ec.message());
  CHECK(seen.size() == 65);
  CHECK((!seen.empty() && seen.back() == (deep / "leaf").string()));
  CHECK(none_left == std::errc::too_many_files_open);
}

TEST_CASE("a walk that cannot open its root names it as the folder that failed") {
  const fs::path root = scratch("failed") / "missing";
  DirectoryWalk walk(root);
  std::error_code ec;
  CHECK_FALSE(walk.next(ec));
  CHECK(ec == std::errc::no_such_file_or_directory);
  CHECK(walk.failed_folder() == root.string());
}

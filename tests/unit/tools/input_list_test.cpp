#include "input_list.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace dlprep::cli {

TEST_CASE("an InputList gives back each file's path and the relative path that is its tail") {
  InputList list;
  CHECK(list.empty());
  list.push_back("-");
  list.push_back("photo.png");
  list.push_back("data/train/cat/001.png", "cat/001.png");
  REQUIRE(list.size() == 3);
  CHECK(list.path(0) == "-");
  CHECK(list.relative(0).empty());
  CHECK(list[1].path == "photo.png");
  CHECK(list[1].relative.empty());
  CHECK(list[2].path == "data/train/cat/001.png");
  CHECK(list[2].relative == "cat/001.png");
  CHECK(list.relative(2) == "cat/001.png");
}

TEST_CASE("a relative path that is not the tail of its path is refused as a bug") {
  InputList list;
  CHECK_THROWS_AS(list.push_back("data/cat/001.png", "dog/001.png"), Error);
  CHECK(list.empty());
}

TEST_CASE("path_less compares component by component, as std::filesystem::path does") {
  CHECK(path_less("a/b", "a-c"));  // "a" < "a-c", though '/' > '-'
  CHECK_FALSE(path_less("a-c", "a/b"));
  CHECK(path_less("a", "a/b"));
  CHECK(path_less("sub/new", "sub/noext"));
  CHECK_FALSE(path_less("x", "x"));
  CHECK(path_less("z", "\xc3\xa9"));  // bytes compare unsigned
}

TEST_CASE("sort_from orders the files after `first` as std::filesystem::path does") {
  // Names from bytes that sort around the separator ('-' and '.' below '/', '0' and 'a' above,
  // a UTF-8 byte above all): "a/b" sorts before "a-c" as paths, after it as strings.
  const std::string alphabet = "-./0a\xc3";
  std::mt19937 rng(7);
  std::vector<std::string> relatives;
  for (int n = 0; n < 400; ++n) {
    std::string rel;
    const int components = 1 + static_cast<int>(rng() % 3);
    for (int c = 0; c < components; ++c) {
      if (c > 0) rel += '/';
      const int length = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < length; ++k) {
        char ch = alphabet[rng() % alphabet.size()];
        rel += ch == '/' ? 'a' : ch;
      }
    }
    if (std::find(relatives.begin(), relatives.end(), rel) == relatives.end())
      relatives.push_back(rel);
  }
  InputList list;
  list.push_back("named-first.png");
  for (const auto& rel : relatives) list.push_back("root/dir/" + rel, rel);
  list.sort_from(1);

  std::vector<std::filesystem::path> expected;
  for (const auto& rel : relatives) expected.push_back("root/dir/" + rel);
  std::sort(expected.begin(), expected.end());
  REQUIRE(list.size() == expected.size() + 1);
  CHECK(list.path(0) == "named-first.png");
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(list[i + 1].path == expected[i]);
    CHECK(list.relative(i + 1) == expected[i].lexically_relative("root/dir").native());
  }
}

TEST_CASE("erase_if removes the files asked for and keeps the others in order") {
  InputList list;
  for (int i = 0; i < 6; ++i) list.push_back("d/" + std::to_string(i), std::to_string(i));
  std::vector<size_t> asked;
  list.erase_if([&asked](size_t i) {
    asked.push_back(i);
    return i % 2 == 1;
  });
  CHECK(asked == std::vector<size_t>{0, 1, 2, 3, 4, 5});
  REQUIRE(list.size() == 3);
  CHECK(list.path(0) == "d/0");
  CHECK(list.path(1) == "d/2");
  CHECK(list.relative(2) == "4");
}

}  // namespace dlprep::cli

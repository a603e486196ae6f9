#include "dataset/orphan_files.hpp"

#include <doctest/doctest.h>

#include <string>

namespace dlprep::dataset {

TEST_CASE("ListedLocations finds each location added, and no other") {
  ListedLocations listed;
  CHECK_FALSE(listed.contains("data/a.png"));
  for (int i = 0; i < 1000; ++i)
    listed.add("data/c" + std::to_string(i % 7) + "/" + std::to_string(i) + ".png");
  for (int i = 0; i < 1000; ++i) {
    CHECK(listed.contains("data/c" + std::to_string(i % 7) + "/" + std::to_string(i) + ".png"));
    CHECK_FALSE(
        listed.contains("data/c" + std::to_string((i + 1) % 7) + "/" + std::to_string(i) + ".png"));
  }
}

TEST_CASE("ListedLocations takes adds after a lookup, and a location added many times") {
  ListedLocations listed;
  listed.add("data/part-0-of-1-000000.tar");
  listed.add("data/part-0-of-1-000000.tar");  // each sample of a tar shard names it
  CHECK(listed.contains("data/part-0-of-1-000000.tar"));
  CHECK_FALSE(listed.contains("data/part-0-of-1-000001.tar"));
  listed.add("data/part-0-of-1-000001.tar");
  listed.add("data/part-0-of-1-000000.tar");
  CHECK(listed.contains("data/part-0-of-1-000001.tar"));
  CHECK(listed.contains("data/part-0-of-1-000000.tar"));
}

}  // namespace dlprep::dataset

// run_load_decode's deadline: a pass sized by an optimistic prediction stops on time, but only
// once every sampled image was read.
#include "profile/load_decode.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <vector>

using namespace dlprep::profile;
namespace fs = std::filesystem;

namespace {

const std::vector<fs::path>& sample_pngs() {
  static const std::vector<fs::path> files = [] {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(fs::path(DLPREP_SAMPLE_DATA) / "images"))
      if (e.path().extension() == ".png") out.push_back(e.path());
    return out;
  }();
  return files;
}

std::vector<PassItem> repeated_items(size_t count) {
  const auto& files = sample_pngs();
  REQUIRE(!files.empty());
  std::vector<PassItem> items;
  for (size_t i = 0; i < count; ++i) items.push_back({&files[i % files.size()], "png"});
  return items;
}

}  // namespace

TEST_CASE("without a deadline every item is read") {
  const auto items = repeated_items(12);
  PassResult r = run_load_decode(items, 0, 2, 2);
  CHECK(r.images == 12);
}

TEST_CASE("a deadline ends the pass early, after the minimum of items") {
  // 200,000 reads and decodes of photos take minutes: the deadline must cut them short.
  const auto items = repeated_items(200000);
  PassResult r = run_load_decode(items, 0, 2, 2, PassDeadline{1e-6, 40});
  CHECK(r.images >= 40);
  CHECK(r.images < items.size());
}

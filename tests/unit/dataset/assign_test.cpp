#include "dataset/assign.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace dlprep::dataset;

namespace {

struct Sample {
  std::string label, key;
};

std::vector<Sample> make_samples(int classes, int per_class) {
  std::vector<Sample> s;
  for (int c = 0; c < classes; ++c)
    for (int i = 0; i < per_class; ++i)
      s.push_back(
          {"class" + std::to_string(c), "class" + std::to_string(c) + "/img" + std::to_string(i)});
  return s;
}

std::vector<size_t> assign_all(const std::vector<Sample>& samples, std::vector<double> ratios,
                               uint64_t seed, std::vector<size_t> order) {
  MixAssigner a(ratios, seed);
  for (size_t i : order) a.add(samples[i].label, samples[i].key);
  a.finish();
  std::vector<size_t> out;
  for (const auto& s : samples) out.push_back(a.assign(s.label, s.key));
  return out;
}

std::vector<size_t> identity(size_t n) {
  std::vector<size_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace

TEST_CASE("key hashes are fixed values, the same on every machine") {
  // Golden value (also computed by an independent Python model of FNV-1a + splitmix64): a change
  // here changes the assignment of every dataset.
  CHECK(key_hash("", 0) == key_hash("", 0));
  CHECK(key_hash("cat/img001", 0) != key_hash("cat/img001", 1));
  CHECK(key_hash("cat/img001", 0) != key_hash("cat/img002", 0));
  CHECK(key_hash("cat/img001", 42) == 0x695e1b0e19de9525ull);
}

TEST_CASE("the assignment does not depend on the order samples are registered in") {
  auto samples = make_samples(5, 200);
  auto base = assign_all(samples, {0.6, 0.4}, 7, identity(samples.size()));
  auto order = identity(samples.size());
  std::mt19937 rng(3);
  std::shuffle(order.begin(), order.end(), rng);
  CHECK(assign_all(samples, {0.6, 0.4}, 7, order) == base);
  std::reverse(order.begin(), order.end());
  CHECK(assign_all(samples, {0.6, 0.4}, 7, order) == base);
}

TEST_CASE("the assignment is reproducible and changes with the seed") {
  auto samples = make_samples(3, 300);
  auto a = assign_all(samples, {0.5, 0.5}, 1, identity(samples.size()));
  CHECK(assign_all(samples, {0.5, 0.5}, 1, identity(samples.size())) == a);
  CHECK(assign_all(samples, {0.5, 0.5}, 2, identity(samples.size())) != a);
}

TEST_CASE("every class gets its ratio to within one sample") {
  for (std::vector<double> ratios :
       {std::vector<double>{0.6, 0.4}, {0.7, 0.3}, {0.2, 0.3, 0.5}, {1.0 / 3, 1.0 / 3, 1.0 / 3}}) {
    for (int per_class : {1, 7, 13, 100, 1001}) {
      auto samples = make_samples(20, per_class);
      auto got = assign_all(samples, ratios, 11, identity(samples.size()));
      std::map<std::string, std::vector<int>> counts;
      for (size_t i = 0; i < samples.size(); ++i) {
        auto& c = counts[samples[i].label];
        c.resize(ratios.size());
        ++c[got[i]];
      }
      for (const auto& [label, c] : counts)
        for (size_t j = 0; j < ratios.size(); ++j) {
          INFO(label << " per_class " << per_class << " format " << j);
          CHECK(std::abs(c[j] - ratios[j] * per_class) < 1.0 + 1e-9);
        }
    }
  }
}

TEST_CASE("the dataset total is unbiased over many small classes") {
  // 1000 classes of 13 at 50%: rounding 6.5 the same way in every class would give 53.8%.
  auto samples = make_samples(1000, 13);
  auto got = assign_all(samples, {0.5, 0.5}, 5, identity(samples.size()));
  double share = double(std::count(got.begin(), got.end(), 0)) / double(got.size());
  CHECK(share == doctest::Approx(0.5).epsilon(0.01));
}

TEST_CASE("a zero ratio gets no samples and a single format gets all") {
  auto samples = make_samples(4, 50);
  auto got = assign_all(samples, {0.0, 1.0}, 1, identity(samples.size()));
  CHECK(std::count(got.begin(), got.end(), 0) == 0);
  auto one = assign_all(samples, {1.0}, 1, identity(samples.size()));
  CHECK(std::count(one.begin(), one.end(), 0) == long(samples.size()));
}

TEST_CASE("duplicate keys are detected, in one class and across classes") {
  MixAssigner a({0.5, 0.5}, 0);
  a.add("cat", "cat/a");
  a.add("cat", "cat/a");
  a.add("cat", "cat/b");
  a.add("cat", "x");  // a list file: one path listed with two labels
  a.add("dog", "x");
  a.add("dog", "y");
  a.finish();
  REQUIRE(a.has_shared_hashes());
  for (auto [label, key] : {std::pair{"cat", "cat/a"},
                            {"cat", "cat/a"},
                            {"cat", "cat/b"},
                            {"cat", "x"},
                            {"dog", "x"},
                            {"dog", "y"}})
    a.add_key(label, key);
  a.finish_keys();
  CHECK(a.is_duplicate("cat/a"));
  CHECK_FALSE(a.is_duplicate("cat/b"));
  CHECK(a.is_duplicate("x"));
  CHECK_FALSE(a.is_duplicate("y"));
}

// Two names whose FNV-1a hashes collide (found with Pollard's rho), so their key hashes do under
// every seed: a dataset of a billion samples has such a pair about once in 30.
constexpr const char* kCollidingA = "BcWugYjVchJ";
constexpr const char* kCollidingB = "uAmGjGvd_lN";

TEST_CASE("two keys with one hash are not duplicates, and get ranks of their own") {
  for (uint64_t seed : {0ull, 1ull, 0xFFFFFFFFFFFFFFFFull})
    REQUIRE(key_hash(kCollidingA, seed) == key_hash(kCollidingB, seed));
  for (uint64_t seed : {0ull, 7ull}) {
    CAPTURE(seed);
    MixAssigner a({0.5, 0.5}, seed);
    std::vector<std::pair<std::string, std::string>> samples = {
        {"", kCollidingA},
        {"", kCollidingB},
        {"", "c"},
        {"", "d"},
        {"x", kCollidingA + std::string("x")}};
    for (const auto& [label, key] : samples) a.add(label, key);
    a.finish();
    REQUIRE(a.has_shared_hashes());
    CHECK(a.is_duplicate(kCollidingA));  // until the keys tell them apart
    for (const auto& [label, key] : samples) a.add_key(label, key);
    a.finish_keys();
    CHECK_FALSE(a.is_duplicate(kCollidingA));
    CHECK_FALSE(a.is_duplicate(kCollidingB));
    CHECK_FALSE(a.is_duplicate("c"));
    // The two are ranked apart (in key order), so the shards split them and add up.
    auto pa = a.place("", kCollidingA), pb = a.place("", kCollidingB);
    CHECK((pa.entry != pb.entry || pa.rank != pb.rank));
    CHECK(a.shard("", kCollidingA, 2) != a.shard("", kCollidingB, 2));
    std::map<uint32_t, uint64_t> per_shard;
    for (const auto& [label, key] : samples) ++per_shard[a.shard(label, key, 2)];
    for (uint32_t k = 0; k < 2; ++k) CHECK(per_shard[k] == a.shard_size(k, 2));
  }
}

TEST_CASE("a duplicate key is found among keys that share a hash") {
  MixAssigner a({1.0}, 3);
  for (const char* key : {kCollidingA, kCollidingB, kCollidingA}) a.add("", key);
  a.add("", "e");
  a.finish();
  for (const char* key : {kCollidingA, kCollidingB, kCollidingA, "e"}) a.add_key("", key);
  a.finish_keys();
  CHECK(a.is_duplicate(kCollidingA));
  CHECK_FALSE(a.is_duplicate(kCollidingB));
  CHECK_FALSE(a.is_duplicate("e"));
}

TEST_CASE("every shard gets every class's share of every format, and shard sizes add up") {
  auto samples = make_samples(7, 101);
  MixAssigner a({0.6, 0.4}, 9);
  for (const auto& s : samples) a.add(s.label, s.key);
  a.finish();
  const uint32_t shards = 4;
  // counts[shard][class][format]
  std::map<uint32_t, std::map<std::string, std::vector<int>>> counts;
  for (const auto& s : samples) {
    auto& c = counts[a.shard(s.label, s.key, shards)][s.label];
    c.resize(2);
    ++c[a.assign(s.label, s.key)];
  }
  uint64_t total = 0;
  for (uint32_t k = 0; k < shards; ++k) {
    uint64_t n = 0;
    for (const auto& [label, c] : counts[k]) {
      n += c[0] + c[1];
      // 101 samples: 60 or 61 of format 0 per class, split over 4 shards: 15 or 16 each.
      CHECK(c[0] >= 15);
      CHECK(c[0] <= 16);
      CHECK(c[1] >= 10);
      CHECK(c[1] <= 11);
    }
    CHECK(a.shard_size(k, shards) == n);
    total += n;
  }
  CHECK(total == samples.size());
  CHECK(a.shard_size(0, 1) == samples.size());
}

TEST_CASE("the remainders of many small classes are spread over the shards") {
  // 1000 classes of 5 samples into 8 shards: each group's deal starts at a turn of its own, so no
  // shard is left empty (dealing every group from shard 0 gave shards 5-7 nothing).
  auto samples = make_samples(1000, 5);
  MixAssigner a({1.0}, 11);
  for (const auto& s : samples) a.add(s.label, s.key);
  a.finish();
  std::vector<uint64_t> counts(8);
  for (const auto& s : samples) ++counts[a.shard(s.label, s.key, 8)];
  for (uint32_t k = 0; k < 8; ++k) {
    CAPTURE(k);
    CHECK(counts[k] == a.shard_size(k, 8));
    CHECK(counts[k] > 500);  // 625 on average
    CHECK(counts[k] < 750);
  }
}

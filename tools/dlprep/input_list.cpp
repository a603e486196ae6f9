#include "input_list.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"

namespace dlprep::cli {

void InputList::push_back(std::string_view path, std::string_view relative) {
  if (!path.ends_with(relative))
    throw Error(Errc::internal, std::string(path) + ": its relative path " + std::string(relative) +
                                    " is not its tail");
  if (path.size() > std::numeric_limits<uint32_t>::max())
    throw Error(Errc::limit_exceeded, "a path of " + std::to_string(path.size()) + " bytes");
  entries_.push_back(
      {bytes_.size(), static_cast<uint32_t>(path.size()), static_cast<uint32_t>(relative.size())});
  bytes_.append(path);
}

std::string_view InputList::path(size_t i) const {
  const Entry& e = entries_[i];
  return std::string_view(bytes_).substr(e.begin, e.size);
}

std::string_view InputList::relative(size_t i) const {
  const Entry& e = entries_[i];
  return std::string_view(bytes_).substr(e.begin + e.size - e.relative_size, e.relative_size);
}

bool path_less(std::string_view a, std::string_view b) {
  // Comparing components one by one is comparing the strings with the separator ranked below
  // every other byte: a component that is a prefix of another ("a" in "a/b", "a-c") sorts first.
  auto rank = [](char c) { return c == '/' ? 0 : static_cast<unsigned char>(c) + 1; };
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [rank](char p, char q) { return rank(p) < rank(q); });
}

void InputList::sort_from(size_t first) {
  const std::string_view bytes = bytes_;
  std::sort(entries_.begin() + static_cast<std::ptrdiff_t>(first), entries_.end(),
            [bytes](const Entry& a, const Entry& b) {
              return path_less(bytes.substr(a.begin, a.size), bytes.substr(b.begin, b.size));
            });
}

void InputList::erase_if(const std::function<bool(size_t i)>& drop) {
  size_t kept = 0;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (!drop(i)) entries_[kept++] = entries_[i];
  entries_.resize(kept);
}

}  // namespace dlprep::cli

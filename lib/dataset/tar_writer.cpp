#include "dataset/tar_writer.hpp"

#include "core/error.hpp"
#include "dataset/tar_format.hpp"

namespace dlprep::dataset {

namespace {
const uint8_t kZeros[tar::kEndBytes] = {};
}  // namespace

TarWriter::TarWriter(const std::filesystem::path& target) : file_(target) {}

uint64_t TarWriter::add(std::string_view name, ByteSpan data) {
  Bytes headers = tar::member_headers(name, data.size());
  file_.write(headers);
  uint64_t offset = size_ + headers.size();
  file_.write(data);
  file_.write(ByteSpan(kZeros, tar::padded(data.size()) - data.size()));
  size_ = offset + tar::padded(data.size());
  return offset;
}

void TarWriter::append_members(ByteSpan members) {
  if (members.size() % tar::kBlock != 0)
    throw Error(Errc::internal, "tar members must be whole 512-byte blocks");
  file_.write(members);
  size_ += members.size();
}

void TarWriter::finish() {
  file_.write(ByteSpan(kZeros, tar::kEndBytes));
  file_.commit();
}

}  // namespace dlprep::dataset

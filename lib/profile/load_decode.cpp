// The Load -> Decode pass: loaders -> bounded queue -> decoders.
#include "profile/load_decode.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "core/timing.hpp"
#include "image/codec.hpp"
#include "profile/storage.hpp"

namespace dlprep::profile {
namespace {

struct Loaded {
  Bytes bytes;
  const image::Codec* codec = nullptr;
};

// A bounded FIFO: loaders block when it is full, so memory stays at `capacity` files and the
// loaders never run ahead of the decoders by more than that (a prefetch depth, as in DataLoader).
class Queue {
 public:
  explicit Queue(size_t capacity) : capacity_(capacity) {}
  bool push(Loaded&& item) {
    std::unique_lock lock(mutex_);
    not_full_.wait(lock, [&] { return items_.size() < capacity_ || stopped_; });
    if (stopped_) return false;
    items_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }
  bool pop(Loaded& item) {
    std::unique_lock lock(mutex_);
    not_empty_.wait(lock, [&] { return !items_.empty() || stopped_ || producers_done_; });
    if (stopped_ || items_.empty()) return false;
    item = std::move(items_.front());
    items_.pop_front();
    not_full_.notify_one();
    return true;
  }
  void producers_done() {
    std::lock_guard lock(mutex_);
    producers_done_ = true;
    not_empty_.notify_all();
  }
  void stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  size_t capacity_;
  std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Loaded> items_;
  bool stopped_ = false, producers_done_ = false;
};

}  // namespace

PassResult run_load_decode(const std::vector<PassItem>& items, double storage_bytes_per_s,
                           unsigned decode_workers, unsigned readers,
                           const PassDeadline& deadline) {
  std::vector<const image::Codec*> codecs(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    codecs[i] = image::find_codec(items[i].format);
    if (!codecs[i])
      throw Error(Errc::unsupported, std::string(items[i].format) + ": codec not built in");
  }
  decode_workers = std::max(decode_workers, 1u);
  readers = std::max(readers, 1u);
  StorageReader reader(storage_bytes_per_s);
  Queue queue(2 * static_cast<size_t>(decode_workers) + 2);
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> decoded{0};
  std::mutex cpu_mutex;
  double decode_cpu = 0;
  std::mutex error_mutex;
  std::exception_ptr error;
  auto fail = [&](std::exception_ptr e) {
    {
      std::lock_guard lock(error_mutex);
      if (!error) error = e;
    }
    queue.stop();
  };

  Stopwatch watch;
  std::vector<std::thread> loaders, decoders;
  std::atomic<unsigned> loaders_left{readers};
  for (unsigned t = 0; t < readers; ++t)
    loaders.emplace_back([&] {
      try {
        for (size_t i; (i = next.fetch_add(1)) < items.size();) {
          if (deadline.seconds > 0 && i >= deadline.min_items && watch.seconds() > deadline.seconds)
            break;
          Loaded l{reader.read(*items[i].path), codecs[i]};
          if (!queue.push(std::move(l))) break;
        }
      } catch (...) {
        fail(std::current_exception());
      }
      if (loaders_left.fetch_sub(1) == 1) queue.producers_done();
    });
  for (unsigned t = 0; t < decode_workers; ++t)
    decoders.emplace_back([&] {
      double cpu_start = thread_cpu_seconds();
      try {
        Loaded l;
        while (queue.pop(l)) {
          Image img = l.codec->decode(l.bytes);
          if (img.empty()) throw Error(Errc::internal, "a decoder returned an empty image");
          decoded.fetch_add(1);
        }
      } catch (...) {
        fail(std::current_exception());
      }
      std::lock_guard lock(cpu_mutex);
      decode_cpu += thread_cpu_seconds() - cpu_start;
    });
  for (auto& t : loaders) t.join();
  for (auto& t : decoders) t.join();
  double seconds = watch.seconds();
  if (error) std::rethrow_exception(error);

  PassResult r;
  r.images = decoded.load();
  r.bytes = reader.bytes_read();
  r.seconds = seconds;
  r.images_per_s = seconds > 0 ? static_cast<double>(r.images) / seconds : 0;
  r.storage_bytes_per_s = seconds > 0 ? static_cast<double>(r.bytes) / seconds : 0;
  r.direct_reads = reader.direct_reads();
  r.decode_cpu_seconds = decode_cpu;
  return r;
}

}  // namespace dlprep::profile

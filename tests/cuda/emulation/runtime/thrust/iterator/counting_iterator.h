// thrust::counting_iterator for the emulated device (see ../cuda_runtime.h): as far as dlprep
// uses it, the input of CUB's algorithms.
#pragma once

#include <cstdint>

namespace thrust {

template <class T>
class counting_iterator {
 public:
  explicit counting_iterator(T first) : value_(first) {}
  T operator*() const { return value_; }
  T operator[](int64_t i) const { return static_cast<T>(value_ + i); }
  counting_iterator operator+(int64_t i) const { return counting_iterator(value_ + i); }

 private:
  T value_;
};

}  // namespace thrust

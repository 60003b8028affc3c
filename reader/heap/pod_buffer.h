// A growable array of trivially copyable values kept with realloc: the heap graph's raw lists
// (addresses, reference targets: tens of millions of entries) grow without a copy on each doubling
// (glibc moves a large block by remapping its pages), so reading a big heapshot neither copies them
// nor touches twice their memory, as std::vector's growth does.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

namespace mlpd {

template <typename T>
class PodBuffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  PodBuffer() = default;
  PodBuffer(PodBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(o.size_), cap_(o.cap_) {
    o.size_ = o.cap_ = 0;
  }
  PodBuffer& operator=(PodBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      cap_ = std::exchange(o.cap_, 0);
    }
    return *this;
  }
  PodBuffer(const PodBuffer&) = delete;
  PodBuffer& operator=(const PodBuffer&) = delete;
  ~PodBuffer() { std::free(data_); }

  void push_back(T v) {
    if (size_ == cap_) grow();
    data_[size_++] = v;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

 private:
  void grow() {
    const size_t cap = cap_ ? 2 * cap_ : 1024;
    if (cap > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    void* p = std::realloc(data_, cap * sizeof(T));
    if (!p) throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    cap_ = cap;
  }
  T* data_ = nullptr;
  size_t size_ = 0, cap_ = 0;
};

}  // namespace mlpd

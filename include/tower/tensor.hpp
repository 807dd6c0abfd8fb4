#pragma once
// tensor<T>: dense, row-major, N-d, value semantics (copy-on-write storage), T = double or float.
//
//   tw::tensor<double> t({2, 3}, {1, 2, 3, 4, 5, 6});
//   t.shape();  // {2, 3}
//   t(1, 2);    // 6
//
// A rank-0 tensor is a scalar. The numerical kernels over tensors live in kernels.hpp.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <ostream>
#include <type_traits>
#include <vector>

#include "tower/error.hpp"

namespace tower {

using shape_t = std::vector<std::int64_t>;

inline std::int64_t numel_of(const shape_t& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>{});
}

template <class T>
class tensor {
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float>,
                "tower::tensor<T>: T must be double or float");

 public:
  using value_type = T;

  tensor() : tensor(shape_t{}, std::vector<T>{T(0)}) {}
  /// A rank-0 tensor holding `v`.
  explicit tensor(T v) : tensor(shape_t{}, std::vector<T>{v}) {}
  /// Shape, then row-major data; data.size() must equal the product of the shape.
  tensor(shape_t shape, std::vector<T> data)
      : shape_(std::move(shape)), data_(std::make_shared<std::vector<T>>(std::move(data))) {
    for (auto d : shape_)
      if (d < 0) throw error("tensor: negative dimension in shape " + detail::shape_str(shape_));
    if (static_cast<std::int64_t>(data_->size()) != numel_of(shape_))
      throw error("tensor: shape " + detail::shape_str(shape_) + " needs " +
                  std::to_string(numel_of(shape_)) + " values, got " +
                  std::to_string(data_->size()));
  }
  tensor(shape_t shape, std::initializer_list<T> data) : tensor(std::move(shape), std::vector<T>(data)) {}
  /// A 1-D tensor from a vector.
  explicit tensor(std::vector<T> v)  // members in declaration order: the size is read before the move
      : shape_{static_cast<std::int64_t>(v.size())}, data_(std::make_shared<std::vector<T>>(std::move(v))) {}

  const shape_t& shape() const { return shape_; }
  std::int64_t dim() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t numel() const { return static_cast<std::int64_t>(data_->size()); }
  std::int64_t size(std::int64_t d) const { return shape_.at(static_cast<std::size_t>(normalize_dim(d, dim()))); }

  const T* data() const { return data_->data(); }
  /// Mutable access copies the storage first if another tensor shares it.
  T* data() {
    if (data_.use_count() > 1) data_ = std::make_shared<std::vector<T>>(*data_);
    return data_->data();
  }
  const std::vector<T>& values() const { return *data_; }

  /// The same elements under another shape with as many elements, sharing the storage
  /// (copy-on-write keeps value semantics): reshape without a copy.
  tensor with_shape(shape_t s) const {
    if (numel_of(s) != numel())
      throw error("tensor: shape " + detail::shape_str(s) + " does not hold " + std::to_string(numel()) + " values");
    tensor r = *this;
    r.shape_ = std::move(s);
    return r;
  }

  template <class... I>
  const T& operator()(I... idx) const { return (*data_)[offset({static_cast<std::int64_t>(idx)...})]; }
  template <class... I>
  T& operator()(I... idx) { return data()[offset({static_cast<std::int64_t>(idx)...})]; }

  /// The single value of a tensor with one element.
  T item() const {
    if (numel() != 1) throw error("item: tensor of shape " + detail::shape_str(shape_) + " has " +
                                  std::to_string(numel()) + " elements, expected 1");
    return (*data_)[0];
  }

  static std::int64_t normalize_dim(std::int64_t d, std::int64_t rank) {
    if (d < -rank || d >= rank)
      throw error("dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    return d < 0 ? d + rank : d;
  }

 private:
  std::size_t offset(std::initializer_list<std::int64_t> idx) const {
    if (static_cast<std::int64_t>(idx.size()) != dim())
      throw error("tensor index: " + std::to_string(idx.size()) + " indices for a tensor of rank " +
                  std::to_string(dim()));
    std::int64_t off = 0, k = 0;
    for (auto i : idx) {
      const auto n = shape_[static_cast<std::size_t>(k++)];
      if (i < 0 || i >= n) throw error("tensor index " + std::to_string(i) + " out of range for size " + std::to_string(n));
      off = off * n + i;
    }
    return static_cast<std::size_t>(off);
  }

  shape_t shape_;
  std::shared_ptr<std::vector<T>> data_;
};

template <class T>
std::ostream& operator<<(std::ostream& os, const tensor<T>& t) {
  os << "tensor(" << detail::shape_str(t.shape()) << ", [";
  for (std::int64_t i = 0; i < t.numel(); ++i) os << (i ? ", " : "") << t.data()[i];
  return os << "])";
}

template <class T>
tensor<T> zeros(shape_t s) { return tensor<T>(s, std::vector<T>(static_cast<std::size_t>(numel_of(s)), T(0))); }
template <class T>
tensor<T> ones(shape_t s) { return tensor<T>(s, std::vector<T>(static_cast<std::size_t>(numel_of(s)), T(1))); }
template <class T>
tensor<T> full(shape_t s, T v) { return tensor<T>(s, std::vector<T>(static_cast<std::size_t>(numel_of(s)), v)); }

template <class T> struct is_tensor : std::false_type {};
template <class T> struct is_tensor<tensor<T>> : std::true_type {};
template <class T> inline constexpr bool is_tensor_v = is_tensor<std::remove_cvref_t<T>>::value;

}  // namespace tower

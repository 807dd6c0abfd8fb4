#pragma once
// tensor<T>: dense, row-major, N-d, value semantics (copy-on-write storage), T = double or float.
//
//   tw::tensor<double> t({2, 3}, {1, 2, 3, 4, 5, 6});
//   t.shape();  // {2, 3}
//   t(1, 2);    // 6
//   tw::tensor<double> m{{1, 2}, {3, 4}};          // nested lists
//   tw::zeros<double>({2, 2}); tw::arange<double>(5); tw::eye<double>(3); tw::randn<double>({4}, 42);
//
// A rank-0 tensor is a scalar. The numerical kernels over tensors live in kernels/base.hpp.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <ostream>
#include <type_traits>
#include <vector>

#include "tower/memory/buffer_pool.hpp"
#include "tower/core/error.hpp"
#include "tower/core/shape_vector.hpp"

namespace tower {

namespace detail {
/// std::allocator whose construct() without arguments default-initialises: a buffer of n
/// doubles is allocated, not zero-filled, when every element is about to be written anyway.
/// Buffers of 1 KiB and more are recycled by the thread's buffer_pool.
template <class T>
struct default_init_allocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = default_init_allocator<U>;
  };
  default_init_allocator() noexcept = default;
  template <class U>
  default_init_allocator(const default_init_allocator<U>&) noexcept {}
  /// A buffer of 1 TiB or more raises tower::error (AddressSanitizer aborts on such requests
  /// instead of throwing std::bad_alloc), and so does a failed allocation.
  T* allocate(std::size_t n) {
    if (n >= max_buffer_bytes / sizeof(T)) too_large(n, " is more than tower allocates (1 TiB)");
    try {
      if (buffer_pool::pooled(n * sizeof(T))) return static_cast<T*>(buffer_pool::allocate(n * sizeof(T)));
      return std::allocator<T>::allocate(n);
    } catch (const std::bad_alloc&) {
      too_large(n, ": out of memory");
    }
  }
  static constexpr std::size_t max_buffer_bytes = std::size_t{1} << 40;
  [[noreturn, gnu::cold, gnu::noinline]] static void too_large(std::size_t n, const char* why) {
    throw error("tensor: a buffer of " + std::to_string(n) + " elements (" + std::to_string(n * sizeof(T)) + " bytes)" +
                why);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (buffer_pool::pooled(n * sizeof(T))) buffer_pool::deallocate(p, n * sizeof(T));
    else std::allocator<T>::deallocate(p, n);
  }
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};
}  // namespace detail

/// A tensor's storage: a std::vector whose buffer(n) leaves the n elements uninitialised (the
/// kernels write every element; buffer(n, T(0)) when they accumulate).
template <class T>
using buffer = std::vector<T, detail::default_init_allocator<T>>;

/// Appends p[0, n) to v with one memcpy (a buffer's own insert copies element by element,
/// because its allocator is not std::allocator).
template <class T, class A>
void append_copy(std::vector<T, A>& v, const T* p, std::size_t n) {
  static_assert(std::is_trivially_copyable_v<T>);
  const std::size_t old = v.size();
  v.resize(old + n);
  if (n) std::memcpy(v.data() + old, p, n * sizeof(T));
}

/// A buffer holding a copy of p[0, n).
template <class T>
buffer<T> copy_buffer(const T* p, std::size_t n) {
  buffer<T> b;
  append_copy(b, p, n);
  return b;
}

namespace detail {
[[noreturn, gnu::cold, gnu::noinline]] inline void bad_shape(const char* op, const shape_t& s, bool negative) {
  throw error(std::string(op) + (negative ? ": negative size in shape " : ": the element count of shape ") +
              shape_str(s) + (negative ? "" : " overflows int64"));
}

/// The element count of s, whose sizes are >= 0, into n; false when the product of its nonzero
/// sizes overflows int64.
inline bool count_elements(const shape_t& s, std::int64_t& n) {
  n = 1;
  bool empty = false;
  for (const std::int64_t d : s) {
    if (d == 0) empty = true;
    else if (__builtin_mul_overflow(n, d, &n)) return false;
  }
  if (empty) n = 0;
  return true;
}
}  // namespace detail

/// The element count of shape s; tower::error naming `op` and s when a size is negative or the
/// count overflows int64. Zero sizes are left out of the overflow check, so a valid shape's
/// partial products (the strides, the rows and columns of any split) all fit in int64 too.
inline std::int64_t checked_numel(const char* op, const shape_t& s) {
  for (const std::int64_t d : s)
    if (d < 0) detail::bad_shape(op, s, true);
  std::int64_t n;
  if (!detail::count_elements(s, n)) detail::bad_shape(op, s, false);
  return n;
}

namespace detail {
/// Elements of a new buffer tower allocates at most: 1 TiB of doubles. A bigger request is a bad
/// size (AddressSanitizer aborts on such requests instead of throwing std::bad_alloc).
inline constexpr std::int64_t max_buffer_elements = std::int64_t{1} << 37;
}  // namespace detail

/// checked_numel of the shape of a new buffer, also raising tower::error naming `op` and s when
/// the buffer would hold 2^37 elements (1 TiB of doubles) or more: checked before allocating.
inline std::int64_t allocation_size(const char* op, const shape_t& s) {
  const std::int64_t n = checked_numel(op, s);
  if (n >= detail::max_buffer_elements)
    throw error(std::string(op) + ": shape " + detail::shape_str(s) + " has " + std::to_string(n) +
                " elements, more than tower allocates (2^37, 1 TiB of doubles)");
  return n;
}

/// checked_numel for a shape that comes from valid shapes: the error names no op.
inline std::int64_t numel_of(const shape_t& s) { return checked_numel("shape", s); }

template <class T>
class tensor;
namespace detail {
template <class T>
tensor<T> leading_rows(const tensor<T>& t, std::int64_t start, std::int64_t len);
}  // namespace detail

/// An N-d array of double or float, row-major, with value semantics (copies share storage until
/// written): `tw::tensor<double> x({2, 3}, {1, 2, 3, 4, 5, 6}); x(1, 2) == 6`. Shape and data
/// (`shape()`, `dim()`, `numel()`, `data()`), element access `x(i, j)`, `item()` for one element.
/// \code
/// tw::tensor<double> x({2, 3}, {1, 2, 3, 4, 5, 6}), y = x;   // y shares x's storage until written
/// y(1, 2) = 0;
/// if (x(1, 2) != 6 || x.dim() != 2 || x.numel() != 6 || x.size(-1) != 3 || tw::tensor<double>(2.5).item() != 2.5)
///   throw std::runtime_error("tensor");
/// \endcode
template <class T>
class tensor {
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float>, "tower::tensor<T>: T must be double or float");

 public:
  using value_type = T;

  tensor() : tensor(shape_t{}, buffer<T>{T(0)}) {}
  /// A rank-0 tensor holding `v`.
  explicit tensor(T v) : tensor(shape_t{}, buffer<T>{v}) {}
  /// Shape, then row-major data; data.size() must equal the product of the shape.
  tensor(shape_t shape, const std::vector<T>& data) : tensor(std::move(shape), copy_buffer(data.data(), data.size())) {}
  /// The same, taking over a buffer (no copy).
  tensor(shape_t shape, buffer<T> data)
      : shape_(std::move(shape)),
        data_(std::make_shared<buffer<T>>(std::move(data))),
        numel_(static_cast<std::int64_t>(data_->size())) {
    const std::int64_t n = checked_numel("tensor", shape_);
    if (numel_ != n)
      throw error("tensor: shape " + detail::shape_str(shape_) + " needs " + std::to_string(n) + " values, got " +
                  std::to_string(data_->size()));
  }
  tensor(shape_t shape, std::initializer_list<T> data) : tensor(std::move(shape), buffer<T>(data)) {}
  /// A 1-D tensor from a vector.
  explicit tensor(const std::vector<T>& v) : tensor(shape_t{static_cast<std::int64_t>(v.size())}, v) {}
  /// Nested initializer lists, NumPy style: tensor<double>{{1, 2}, {3, 4}} is [2, 2]. Ragged
  /// lists raise tower::error.
  tensor(std::initializer_list<T> v) : tensor(shape_t{static_cast<std::int64_t>(v.size())}, buffer<T>(v)) {}
  tensor(std::initializer_list<std::initializer_list<T>> v) { from_nested(v); }
  tensor(std::initializer_list<std::initializer_list<std::initializer_list<T>>> v) { from_nested(v); }
  tensor(std::initializer_list<std::initializer_list<std::initializer_list<std::initializer_list<T>>>> v) {
    from_nested(v);
  }

  const shape_t& shape() const { return shape_; }
  std::int64_t dim() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t numel() const { return numel_; }
  std::int64_t size(std::int64_t d) const { return shape_.at(static_cast<std::size_t>(normalize_dim(d, dim()))); }

  const T* data() const { return data_->data() + offset_; }
  /// Mutable access copies the storage first if another tensor shares it.
  T* data() {
    if (data_.use_count() > 1) {
      data_ = std::make_shared<buffer<T>>(copy_buffer(data_->data() + offset_, static_cast<std::size_t>(numel_)));
      offset_ = 0;
    }
    return data_->data() + offset_;
  }
  /// A copy of the elements, row-major (data() and numel() read them without copying).
  std::vector<T> values() const { return std::vector<T>(data(), data() + numel_); }

  /// The same elements under another shape with as many elements, sharing the storage
  /// (copy-on-write keeps value semantics): reshape without a copy.
  tensor with_shape(shape_t s) const {
    if (checked_numel("tensor", s) != numel())
      throw error("tensor: shape " + detail::shape_str(s) + " does not hold " + std::to_string(numel()) + " values");
    tensor r = *this;
    r.shape_ = std::move(s);
    return r;
  }

  template <class... I>
  const T& operator()(I... idx) const {
    return data()[offset({static_cast<std::int64_t>(idx)...})];
  }
  template <class... I>
  T& operator()(I... idx) {
    return data()[offset({static_cast<std::int64_t>(idx)...})];
  }

  /// The single value of a tensor with one element.
  T item() const {
    if (numel() != 1)
      throw error("item: tensor of shape " + detail::shape_str(shape_) + " has " + std::to_string(numel()) +
                  " elements, expected 1");
    return data()[0];
  }

  static std::int64_t normalize_dim(std::int64_t d, std::int64_t rank) {
    if (d < -rank || d >= rank)
      throw error("dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    return d < 0 ? d + rank : d;
  }

 private:
  template <class L>
  static void nested_shape(const L& l, shape_t& s, std::size_t depth) {
    const auto n = static_cast<std::int64_t>(l.size());
    if (s.size() <= depth) s.push_back(n);
    else if (s[depth] != n)
      throw error("tensor: ragged nested initializer list (size " + std::to_string(n) + " where " +
                  std::to_string(s[depth]) + " was expected at depth " + std::to_string(depth) + ")");
    if constexpr (!std::is_same_v<L, std::initializer_list<T>>)
      for (const auto& e : l) nested_shape(e, s, depth + 1);
  }
  template <class L>
  static void nested_data(const L& l, buffer<T>& out) {
    if constexpr (std::is_same_v<L, std::initializer_list<T>>) out.insert(out.end(), l.begin(), l.end());
    else
      for (const auto& e : l) nested_data(e, out);
  }
  template <class L>
  void from_nested(const L& l) {
    shape_t s;
    nested_shape(l, s, 0);
    buffer<T> d;
    nested_data(l, d);
    if (static_cast<std::int64_t>(d.size()) != numel_of(s))
      throw error("tensor: ragged nested initializer list for shape " + detail::shape_str(s));
    shape_ = std::move(s);
    data_ = std::make_shared<buffer<T>>(std::move(d));
    numel_ = static_cast<std::int64_t>(data_->size());
  }

  std::size_t offset(std::initializer_list<std::int64_t> idx) const {
    if (static_cast<std::int64_t>(idx.size()) != dim())
      throw error("tensor index: " + std::to_string(idx.size()) + " indices for a tensor of rank " +
                  std::to_string(dim()));
    std::int64_t off = 0, k = 0;
    for (auto i : idx) {
      const auto n = shape_[static_cast<std::size_t>(k++)];
      if (i < 0 || i >= n)
        throw error("tensor index " + std::to_string(i) + " out of range for size " + std::to_string(n));
      off = off * n + i;
    }
    return static_cast<std::size_t>(off);
  }

  template <class U>
  friend tensor<U> detail::leading_rows(const tensor<U>&, std::int64_t, std::int64_t);
  tensor(shape_t s, std::shared_ptr<buffer<T>> data, std::int64_t offset, std::int64_t n)
      : shape_(std::move(s)), data_(std::move(data)), offset_(offset), numel_(n) {}

  shape_t shape_;
  std::shared_ptr<buffer<T>> data_;
  // The elements are (*data_)[offset_, offset_ + numel_): the whole buffer, except for a view
  // made by detail::leading_rows.
  std::int64_t offset_ = 0;
  std::int64_t numel_ = 0;
};

namespace detail {
/// Rows [start, start + len) of t along dim 0, sharing t's storage (no copy; writing to either
/// copies first, as for any shared storage). The caller checks the range.
template <class T>
tensor<T> leading_rows(const tensor<T>& t, std::int64_t start, std::int64_t len) {
  shape_t s = t.shape();
  const std::int64_t row = s.empty() || s[0] == 0 ? 0 : t.numel() / s[0];
  s.at(0) = len;
  return tensor<T>(std::move(s), t.data_, t.offset_ + start * row, len * row);
}
}  // namespace detail

/// Prints nested brackets, NumPy style: tensor([[1, 2], [3, 4]]) (rank 0: tensor(5)).
template <class T>
std::ostream& operator<<(std::ostream& os, const tensor<T>& t) {
  os << "tensor(";
  if (t.dim() == 0) return os << t.data()[0] << ')';
  std::int64_t i = 0;
  auto rec = [&](auto&& self, std::size_t d) -> void {
    os << '[';
    for (std::int64_t k = 0; k < t.shape()[d]; ++k) {
      if (k) os << ", ";
      if (d + 1 == t.shape().size()) os << t.data()[i++];
      else self(self, d + 1);
    }
    os << ']';
  };
  rec(rec, 0);
  return os << ')';
}

namespace detail {
template <class T>
tensor<T> filled_tensor(const char* op, shape_t s, T v) {
  const auto n = static_cast<std::size_t>(allocation_size(op, s));
  return tensor<T>(std::move(s), buffer<T>(n, v));
}
}  // namespace detail

/// zeros<T>(shape): a tensor of zeros, `tw::zeros<double>({2, 3})`.
/// \code
/// if (tw::zeros<double>({2, 3})(1, 2) != 0 || tw::ones<float>({2})(1) != 1 || tw::full<double>({1}, 7.0)(0) != 7)
///   throw std::runtime_error("zeros, ones, full");
/// \endcode
template <class T>
tensor<T> zeros(shape_t s) {
  return detail::filled_tensor("zeros", std::move(s), T(0));
}
/// ones<T>(shape): a tensor of ones.
template <class T>
tensor<T> ones(shape_t s) {
  return detail::filled_tensor("ones", std::move(s), T(1));
}
/// full<T>(shape, v): a tensor filled with v.
template <class T>
tensor<T> full(shape_t s, T v) {
  return detail::filled_tensor("full", std::move(s), v);
}

/// 0, 1, ..., n-1 spaced by `step` from `start` (1-D).
/// \code
/// auto a = tw::arange<double>(1.0, 2.0, 0.25);   // 1, 1.25, 1.5, 1.75
/// if (a.numel() != 4 || a(3) != 1.75 || tw::arange<double>(5)(4) != 4) throw std::runtime_error("arange");
/// \endcode
template <class T>
tensor<T> arange(T start, T stop, T step = T(1)) {
  if (step == T(0)) throw error("arange: step must not be zero");
  // As torch: ceil((stop - start) / step) elements, start + i step (no accumulated rounding).
  const double count = std::ceil((static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step));
  if (!(count < 0x1p62))
    throw error("arange: " + std::to_string(static_cast<double>(start)) + " to " +
                std::to_string(static_cast<double>(stop)) + " by " + std::to_string(static_cast<double>(step)) +
                " is not a finite count of elements");
  const std::int64_t n = count > 0 ? static_cast<std::int64_t>(count) : 0;
  buffer<T> v(static_cast<std::size_t>(allocation_size("arange", shape_t{n})));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<T>(start + static_cast<T>(i) * step);
  return tensor<T>(shape_t{n}, std::move(v));
}
/// arange<T>(n): 0, 1, ..., n-1 (1-D).
template <class T>
tensor<T> arange(std::int64_t n) {
  if (n < 0) throw error("arange: negative count " + std::to_string(n));
  return arange<T>(T(0), static_cast<T>(n));
}

/// n x n identity (or n x m with ones on the main diagonal).
/// \code
/// auto I = tw::eye<double>(2, 3);
/// if (I.shape() != tw::shape_t{2, 3} || I(1, 1) != 1 || I(1, 2) != 0) throw std::runtime_error("eye");
/// \endcode
template <class T>
tensor<T> eye(std::int64_t n, std::int64_t m = -1) {
  if (m == -1) m = n;
  if (n < 0 || m < 0) throw error("eye: negative size " + std::to_string(std::min(n, m)));
  tensor<T> r = detail::filled_tensor("eye", {n, m}, T(0));
  for (std::int64_t i = 0; i < std::min(n, m); ++i) r(i, i) = T(1);
  return r;
}

/// Standard normal samples, reproducible from `seed` (std::mt19937_64 + Box-Muller, so the same
/// numbers on every platform). Without a seed, tw::randn({shape}) draws from the thread's
/// generator (dsl/random.hpp).
/// \code
/// auto z = tw::randn<double>({1000}, 42);
/// if (tw::randn<double>({1000}, 42)(999) != z(999) || std::abs(tw::mean(z).item()) > 0.2) throw std::runtime_error("randn");
/// \endcode
template <class T = double>
tensor<T> randn(shape_t s, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  auto uniform = [&] { return (static_cast<double>(gen() >> 11) + 0.5) * 0x1.0p-53; };
  buffer<T> v(static_cast<std::size_t>(allocation_size("randn", s)));
  for (std::size_t i = 0; i < v.size(); i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform())), th = 6.283185307179586 * uniform();
    v[i] = static_cast<T>(r * std::cos(th));
    if (i + 1 < v.size()) v[i + 1] = static_cast<T>(r * std::sin(th));
  }
  return tensor<T>(std::move(s), std::move(v));
}

/// Whether T is a tensor<...>; is_tensor_v strips references and cv.
template <class T>
struct is_tensor : std::false_type {};
template <class T>
struct is_tensor<tensor<T>> : std::true_type {};
template <class T>
inline constexpr bool is_tensor_v = is_tensor<std::remove_cvref_t<T>>::value;

}  // namespace tower

#pragma once
// tower::shape_t — a tensor's shape, and the strides, permutations and dim lists computed from
// one: a vector of int64 with the interface of std::vector that keeps up to 6 entries inline
// and only longer ones on the heap.
//
//   tw::shape_t s{2, 3};
//   s.insert(s.begin(), 4);        // {4, 2, 3}
//   s == tw::shape_t{4, 2, 3};     // true
//   tw::sum(x, {0, 1});            // dim lists are shape_t too
//
// A std::vector cost a malloc and a free per shape, and an op makes several (its output's
// shape, broadcast strides, merged dims): a quarter of jacrev's time on a 64 x 64 map.
// boost::container::small_vector does the same, but g++ 12's -Wstringop-overread misfires on
// its inline copies under -Werror; the inline part here is always copied whole (48 bytes).
#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace tower {

class shape_t {
 public:
  using value_type = std::int64_t;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = value_type&;
  using const_reference = const value_type&;
  using pointer = value_type*;
  using const_pointer = const value_type*;
  using iterator = value_type*;
  using const_iterator = const value_type*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  static constexpr size_type inline_capacity = 6;

  shape_t() noexcept = default;
  explicit shape_t(size_type n, value_type v = 0) { assign(n, v); }
  shape_t(std::initializer_list<value_type> l) { assign(l.begin(), l.end()); }
  template <class It>
    requires(!std::is_integral_v<It>)
  shape_t(It first, It last) {
    assign(first, last);
  }
  /// From a std::vector of dims (an implicit conversion, as the shape type was one before).
  shape_t(const std::vector<value_type>& v) { assign(v.begin(), v.end()); }

  shape_t(const shape_t& o) { copy_from(o); }
  shape_t(shape_t&& o) noexcept { move_from(o); }
  shape_t& operator=(const shape_t& o) {
    if (this != &o) {
      if (o.n_ <= cap_ && !on_heap()) {
        std::memcpy(in_, o.p_, sizeof(in_));  // whole: o's inline part, or room enough on o's heap
        n_ = o.n_;
      } else {
        assign(o.begin(), o.end());
      }
    }
    return *this;
  }
  shape_t& operator=(shape_t&& o) noexcept {
    if (this != &o) {
      release();
      move_from(o);
    }
    return *this;
  }
  shape_t& operator=(std::initializer_list<value_type> l) {
    assign(l.begin(), l.end());
    return *this;
  }
  ~shape_t() { release(); }

  template <class It>
    requires(!std::is_integral_v<It>)
  void assign(It first, It last) {
    const auto n = static_cast<size_type>(std::distance(first, last));
    n_ = 0;
    reserve(n);
    std::copy(first, last, p_);
    n_ = static_cast<std::uint32_t>(n);
  }
  void assign(size_type n, value_type v) {
    n_ = 0;
    reserve(n);
    std::fill_n(p_, n, v);
    n_ = static_cast<std::uint32_t>(n);
  }

  size_type size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  size_type capacity() const noexcept { return cap_; }
  pointer data() noexcept { return p_; }
  const_pointer data() const noexcept { return p_; }
  iterator begin() noexcept { return p_; }
  iterator end() noexcept { return p_ + n_; }
  const_iterator begin() const noexcept { return p_; }
  const_iterator end() const noexcept { return p_ + n_; }
  const_iterator cbegin() const noexcept { return p_; }
  const_iterator cend() const noexcept { return p_ + n_; }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }
  reference operator[](size_type i) noexcept { return p_[i]; }
  const_reference operator[](size_type i) const noexcept { return p_[i]; }
  reference at(size_type i) {
    if (i >= n_) throw std::out_of_range("shape_t::at");
    return p_[i];
  }
  const_reference at(size_type i) const {
    if (i >= n_) throw std::out_of_range("shape_t::at");
    return p_[i];
  }
  reference front() noexcept { return p_[0]; }
  const_reference front() const noexcept { return p_[0]; }
  reference back() noexcept { return p_[n_ - 1]; }
  const_reference back() const noexcept { return p_[n_ - 1]; }

  void reserve(size_type n) {
    if (n <= cap_) return;
    const size_type cap = std::max<size_type>(n, 2 * size_type{cap_});
    auto* q = static_cast<pointer>(::operator new(cap * sizeof(value_type)));
    std::copy(p_, p_ + n_, q);
    release();
    p_ = q;
    cap_ = static_cast<std::uint32_t>(cap);
  }
  void clear() noexcept { n_ = 0; }
  void push_back(value_type v) {
    if (n_ == cap_) reserve(size_type{n_} + 1);
    p_[n_++] = v;
  }
  template <class... A>
  reference emplace_back(A&&... a) {
    push_back(value_type(std::forward<A>(a)...));
    return back();
  }
  void pop_back() noexcept { --n_; }
  void resize(size_type n, value_type v = 0) {
    reserve(n);
    if (n > n_) std::fill(p_ + n_, p_ + n, v);
    n_ = static_cast<std::uint32_t>(n);
  }
  iterator insert(const_iterator pos, value_type v) { return insert(pos, size_type{1}, v); }
  iterator insert(const_iterator pos, size_type count, value_type v) {
    const auto at = make_room(pos, count);
    std::fill_n(p_ + at, count, v);
    return p_ + at;
  }
  template <class It>
    requires(!std::is_integral_v<It>)
  iterator insert(const_iterator pos, It first, It last) {
    // Copied out first: [first, last) may lie inside *this, which make_room moves.
    const shape_t items(first, last);
    const auto at = make_room(pos, items.size());
    std::copy(items.begin(), items.end(), p_ + at);
    return p_ + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<value_type> l) { return insert(pos, l.begin(), l.end()); }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const auto at = first - p_, count = last - first;
    std::copy(p_ + at + count, p_ + n_, p_ + at);
    n_ -= static_cast<std::uint32_t>(count);
    return p_ + at;
  }
  void swap(shape_t& o) noexcept {
    shape_t t(std::move(o));
    o = std::move(*this);
    *this = std::move(t);
  }

  friend bool operator==(const shape_t& a, const shape_t& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend auto operator<=>(const shape_t& a, const shape_t& b) noexcept {
    return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  bool on_heap() const noexcept { return p_ != in_; }
  void release() noexcept {
    if (on_heap()) ::operator delete(p_);
    p_ = in_;
    cap_ = inline_capacity;
  }
  void copy_from(const shape_t& o) {
    if (!o.on_heap()) [[likely]] {
      std::memcpy(in_, o.in_, sizeof(in_));
      n_ = o.n_;
    } else {
      copy_long(o);
    }
  }
  [[gnu::noinline]] void copy_long(const shape_t& o) { assign(o.begin(), o.end()); }
  void move_from(shape_t& o) noexcept {
    if (o.on_heap()) {
      p_ = o.p_;
      cap_ = o.cap_;
      o.p_ = o.in_;
      o.cap_ = inline_capacity;
    } else {
      std::memcpy(in_, o.in_, sizeof(in_));
    }
    n_ = o.n_;
    o.n_ = 0;
  }
  /// Opens `count` slots at pos; returns pos's index.
  difference_type make_room(const_iterator pos, size_type count) {
    const auto at = pos - p_;
    reserve(n_ + count);
    std::copy_backward(p_ + at, p_ + n_, p_ + n_ + count);
    n_ += static_cast<std::uint32_t>(count);
    return at;
  }

  pointer p_ = in_;
  std::uint32_t n_ = 0, cap_ = inline_capacity;
  // Zeroed (two vector stores) so the whole-array copies never read indeterminate values, which
  // g++ 12 -O2 reports as maybe-uninitialized; read only below n_.
  value_type in_[inline_capacity]{};
};

}  // namespace tower

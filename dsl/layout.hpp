#pragma once
// Layout and indexing ops: permute / transpose, squeeze / unsqueeze / flatten / expand,
// narrow / slice (with pad, its adjoint), cat / stack / split, gather / scatter_add / index_select.
// Primitives have their own rules; the rest are compositions (their rules follow).
//
// Index arguments (gather, scatter_add) are tower values holding integers, so they can be
// batched by vmap like any other argument; they get a zero gradient.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <optional>
#include <tuple>
#include <vector>

#include "dsl/pointwise.hpp"
#include "dsl/reduce.hpp"
#include "dsl/shape_ops.hpp"
#include "tower/kernels/shape.hpp"
#include "tower/static/op.hpp"

namespace tower {

/// The physical value of a batching-rule argument with the batch materialised in dim 0: an
/// unbatched argument is broadcast along a new leading dim of size `bs` (expand_batch). For
/// custom ops' `batch` members (docs/custom_ops.md).
/// \code
/// const tw::tensor<double> x({2}, {1, 2});
/// const tw::tensor<double> e = tw::expand_batch(3, x);   // [3, 2]: x in every row
/// if (e.shape() != tw::shape_t{3, 2} || e.data()[4] != 1.0) throw std::runtime_error("expand_batch");
/// const tw::tensor<double> w = tw::with_batch(3, tw::bval<tw::tensor<double>, std::false_type>{x, {}});
/// const tw::tensor<double> v = tw::with_batch(3, tw::bval<tw::tensor<double>, std::true_type>{e, {}});
/// if (w.shape() != e.shape() || v.data()[5] != 2.0) throw std::runtime_error("with_batch");
/// \endcode
template <class X>
auto expand_batch(std::int64_t bs, const X& x) {
  shape_t s = shape(x), one = s, full = s;
  one.insert(one.begin(), 1);
  full.insert(full.begin(), bs);
  return call_op(broadcast_to_op{full}, call_op(reshape_op{one}, x));
}
template <class BS, class P, class B>
auto with_batch(BS bs, const bval<P, B>& x) {
  if constexpr (std::is_same_v<B, std::true_type>) return x.value;
  else if constexpr (std::is_same_v<B, std::false_type>) return expand_batch(static_cast<std::int64_t>(bs), x.value);
  else return x.batched ? x.value : expand_batch(static_cast<std::int64_t>(bs), x.value);
}

namespace detail {
inline std::int64_t norm_dim(const char* op, std::int64_t d, std::int64_t rank) {
  if (d < -rank || d >= rank)
    throw error(std::string(op) + ": dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
  return d < 0 ? d + rank : d;
}
}  // namespace detail

struct permute_op {
  static constexpr const char* name = "permute";
  static constexpr bool linear = true;  // runtime/trace.hpp
  shape_t perm;
  template <class X>
  auto base(const X& x) const {
    return kernels::permute(x, perm);
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    const auto p = kernels::normalize_dims(name, perm, logical_rank(x));
    if (static_cast<std::int64_t>(p.size()) != logical_rank(x))
      throw error("permute: " + std::to_string(p.size()) + " dims given for a value of shape " +
                  detail::shape_str(logical_shape(x)));
    shape_t q{0};
    for (auto d : p) q.push_back(d + 1);
    return call_op(permute_op{q}, x.value);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const {
    const auto p = kernels::normalize_dims(name, perm, rank(x));
    shape_t inv(p.size());
    for (std::size_t k = 0; k < p.size(); ++k) inv[static_cast<std::size_t>(p[k])] = static_cast<std::int64_t>(k);
    return std::make_tuple(call_op(permute_op{inv}, g));
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

/// Dims of x reordered: result dim k is x's dim perm[k].
/// \code
/// auto x = tw::reshape(tw::arange<double>(24), {2, 3, 4});
/// auto y = tw::permute(x, {2, 0, 1});
/// if (y.shape() != tw::shape_t{4, 2, 3} || y(3, 1, 2) != x(1, 2, 3)) throw std::runtime_error("permute");
/// \endcode
template <operand X>
TOWER_ALWAYS_INLINE auto permute(const X& x, shape_t perm) {
  return call_op(permute_op{std::move(perm)}, x);
}

/// x with dims d0 and d1 swapped.
/// \code
/// auto x = tw::tensor<double>{{1, 2, 3}, {4, 5, 6}};
/// if (tw::transpose(x, 0, 1)(2, 0) != 3) throw std::runtime_error("transpose");
/// \endcode
template <operand X>
auto transpose(const X& x, std::int64_t d0, std::int64_t d1) {
  const std::int64_t r = rank(x);
  shape_t p(static_cast<std::size_t>(r));
  std::iota(p.begin(), p.end(), 0);
  std::swap(p.at(static_cast<std::size_t>(detail::norm_dim("transpose", d0, r))),
            p.at(static_cast<std::size_t>(detail::norm_dim("transpose", d1, r))));
  return permute(x, std::move(p));
}

/// x with a size-1 dim inserted at `dim` (in [-rank-1, rank]).
/// \code
/// auto x = tw::tensor<double>{1, 2, 3};
/// if (tw::unsqueeze(x, 0).shape() != tw::shape_t{1, 3} || tw::unsqueeze(x, -1)(2, 0) != 3) throw std::runtime_error("unsqueeze");
/// \endcode
template <operand X>
auto unsqueeze(const X& x, std::int64_t dim) {
  shape_t s = shape(x);
  const std::int64_t d = detail::norm_dim("unsqueeze", dim, static_cast<std::int64_t>(s.size()) + 1);
  s.insert(s.begin() + d, 1);
  return reshape(x, s);
}
/// x without its size-1 dims (or only `dim`, which must have size 1).
/// \code
/// auto x = tw::zeros<double>({1, 3, 1});
/// if (tw::squeeze(x).shape() != tw::shape_t{3} || tw::squeeze(x, 2).shape() != tw::shape_t{1, 3}) throw std::runtime_error("squeeze");
/// \endcode
template <operand X>
auto squeeze(const X& x) {
  shape_t s;
  for (auto n : shape(x))
    if (n != 1) s.push_back(n);
  return reshape(x, s);
}
/// squeeze(x, dim): removes dim, which must have size 1.
template <operand X>
auto squeeze(const X& x, std::int64_t dim) {
  shape_t s = shape(x);
  const std::int64_t d = detail::norm_dim("squeeze", dim, static_cast<std::int64_t>(s.size()));
  if (s[static_cast<std::size_t>(d)] != 1)
    throw error("squeeze: dim " + std::to_string(dim) + " of shape " + detail::shape_str(s) + " has size " +
                std::to_string(s[static_cast<std::size_t>(d)]) + ", not 1");
  s.erase(s.begin() + d);
  return reshape(x, s);
}
/// Dims start..end merged into one.
/// \code
/// auto x = tw::reshape(tw::arange<double>(24), {2, 3, 4});
/// if (tw::flatten(x).shape() != tw::shape_t{24} || tw::flatten(x, 1)(1, 11) != 23) throw std::runtime_error("flatten");
/// \endcode
template <operand X>
auto flatten(const X& x, std::int64_t start = 0, std::int64_t end = -1) {
  const shape_t s = shape(x);
  if (s.empty()) return reshape(x, {1});
  const auto r = static_cast<std::int64_t>(s.size());
  const std::int64_t a = detail::norm_dim("flatten", start, r), b = detail::norm_dim("flatten", end, r);
  if (a > b) throw error("flatten: start dim " + std::to_string(start) + " is after end dim " + std::to_string(end));
  shape_t out(s.begin(), s.begin() + a);
  out.push_back(std::accumulate(s.begin() + a, s.begin() + b + 1, std::int64_t{1}, std::multiplies<>{}));
  out.insert(out.end(), s.begin() + b + 1, s.end());
  return reshape(x, out);
}
/// torch's expand: broadcast_to where -1 keeps a dim's size.
/// \code
/// auto y = tw::expand(tw::tensor<double>({2, 1}, {1, 2}), {-1, 3});
/// if (y.shape() != tw::shape_t{2, 3} || y(1, 2) != 2) throw std::runtime_error("expand");
/// \endcode
template <operand X>
auto expand(const X& x, shape_t s) {
  const shape_t xs = shape(x);
  if (s.size() < xs.size())
    throw error("expand: shape " + detail::shape_str(s) + " has fewer dims than the value's shape " +
                detail::shape_str(xs));
  for (std::size_t k = 0; k < s.size(); ++k)
    if (s[k] == -1) {
      const std::size_t lead = s.size() - xs.size();
      if (k < lead) throw error("expand: -1 is not allowed for a new leading dim, shape " + detail::shape_str(s));
      s[k] = xs[k - lead];
    }
  allocation_size("expand", s);
  return broadcast_to(x, std::move(s));
}

struct pad_op;

/// x[..., start:start + length, ...] along dim.
struct narrow_op {
  static constexpr const char* name = "narrow";
  static constexpr bool linear = true;  // runtime/trace.hpp
  std::int64_t dim, start, length;
  template <class X>
  auto base(const X& x) const {
    if constexpr (kernels::is_plain_scalar_v<X>) {
      throw error("narrow: cannot narrow a scalar");
      return kernels::as_tensor<X>(x);
    } else {
      return kernels::narrow(x, dim, start, length);
    }
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    const std::int64_t d = detail::norm_dim(name, dim, logical_rank(x));
    return call_op(narrow_op{d + 1, start, length}, x.value);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const;
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

/// Zeros of size `total` along dim with x at [start, start + x.size(dim)): narrow's adjoint.
struct pad_op {
  static constexpr const char* name = "pad";
  static constexpr bool linear = true;  // zeros around x (runtime/trace.hpp)
  std::int64_t dim, start, total;
  template <class X>
  auto base(const X& x) const {
    if constexpr (kernels::is_plain_scalar_v<X>) {
      throw error("pad: cannot pad a scalar");
      return kernels::as_tensor<X>(x);
    } else {
      return kernels::pad(x, dim, start, total);
    }
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(pad_op{detail::norm_dim(name, dim, logical_rank(x)) + 1, start, total}, x.value);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const {
    const std::int64_t d = detail::norm_dim(name, dim, rank(x));
    return std::make_tuple(call_op(narrow_op{d, start, shape(x)[static_cast<std::size_t>(d)]}, g));
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

template <class G, class O, class X>
auto narrow_op::vjp(const G& g, const O&, const X& x) const {
  const std::int64_t d = detail::norm_dim(name, dim, rank(x));
  const std::int64_t n = shape(x)[static_cast<std::size_t>(d)];
  return std::make_tuple(call_op(pad_op{d, start < 0 ? start + n : start, n}, g));
}

/// narrow(x, dim, start, length): elements start .. start + length - 1 along dim (torch.narrow).
/// \code
/// auto x = tw::arange<double>(10);
/// if (tw::narrow(x, 0, 2, 3)(0) != 2 || tw::narrow(x, 0, 2, 3).numel() != 3) throw std::runtime_error("narrow");
/// \endcode
template <operand X>
auto narrow(const X& x, std::int64_t dim, std::int64_t start, std::int64_t length) {
  return call_op(narrow_op{dim, start, length}, x);
}
/// x[start:end] along dim (Python slice bounds: negative counts from the end, clamped).
/// \code
/// auto x = tw::arange<double>(10);
/// auto y = tw::slice(x, 0, -3, 100);   // x[-3:100]: 7, 8, 9
/// if (y.numel() != 3 || y(0) != 7) throw std::runtime_error("slice");
/// \endcode
template <operand X>
auto slice(const X& x, std::int64_t dim, std::int64_t start, std::int64_t end) {
  const shape_t s = shape(x);
  const std::int64_t n =
      s.at(static_cast<std::size_t>(detail::norm_dim("slice", dim, static_cast<std::int64_t>(s.size()))));
  auto clamp = [&](std::int64_t i) { return std::clamp(i < 0 ? i + n : i, std::int64_t{0}, n); };
  const std::int64_t a = clamp(start), b = std::max(a, clamp(end));
  return narrow(x, dim, a, b - a);
}

/// a and b joined along dim (binary; cat(list) folds it).
struct cat_op {
  static constexpr const char* name = "cat";
  std::int64_t dim;
  template <class A, class B>
  auto base(const A& a, const B& b) const {
    if constexpr (kernels::is_plain_scalar_v<A> || kernels::is_plain_scalar_v<B>) {
      throw error("cat: cannot concatenate scalars (rank 0)");
      return kernels::as_tensor<kernels::common_element_t<A, B>>(a);
    } else {
      return kernels::cat(a, b, dim);
    }
  }
  template <class BS, class A, class B>
  auto batch(BS bs, const A& a, const B& b) const {
    if (logical_rank(a) != logical_rank(b))
      throw error("cat: cannot join shapes " + detail::shape_str(logical_shape(a)) + " and " +
                  detail::shape_str(logical_shape(b)));
    const std::int64_t d = detail::norm_dim(name, dim, logical_rank(a));
    return call_op(cat_op{d + 1}, with_batch(bs, a), with_batch(bs, b));
  }
  template <class G, class O, class A, class B>
  auto vjp(const G& g, const O&, const A& a, const B& b) const {
    const std::int64_t d = detail::norm_dim(name, dim, rank(a));
    const std::int64_t na = shape(a).at(static_cast<std::size_t>(d)), nb = shape(b).at(static_cast<std::size_t>(d));
    return std::make_tuple(call_op(narrow_op{d, 0, na}, g), call_op(narrow_op{d, na, nb}, g));
  }
  template <class O, class A, class B, class TA, class TB>
  auto jvp(const O&, const A&, const B&, const TA& ta, const TB& tb) const {
    return call_op(*this, ta, tb);
  }
};

namespace detail {
template <class X>
X cat_range(const X* first, std::size_t n, std::int64_t dim) {
  if (n == 1) return *first;
  return call_op(cat_op{dim}, cat_range(first, n / 2, dim), cat_range(first + n / 2, n - n / 2, dim));
}
}  // namespace detail

/// The values joined along dim. Plain values (tensors, and runtime values no transform wraps)
/// are copied once, by one kernel; values a transform wraps go through binary cat ops, a
/// balanced tree of them (an op has a fixed number of operands), so log2(n) copies.
template <operand X>
auto cat(const std::vector<X>& xs, std::int64_t dim = 0) {
  if (xs.empty()) throw error("cat: needs at least one value");
  if constexpr (std::is_arithmetic_v<X>) {
    throw error("cat: cannot concatenate scalars (rank 0)");
    return tensor<double>{};
  } else if constexpr (is_tensor_v<X>) {
    std::vector<const X*> parts;
    for (const auto& x : xs) parts.push_back(&x);
    return kernels::cat(parts.data(), parts.size(), dim);
  } else if constexpr (is_dual_unsupported_v<decltype(call_op(cat_op{dim}, xs[0], xs[0]))>) {
    return dual_unsupported{};  // tape-free values (numbers under vmap's per-example loop): it declines
  } else {
    if constexpr (is_dyn_v<X>) {
      if (std::all_of(xs.begin(), xs.end(), [](const X& x) { return x.is_plain(); })) {
        std::vector<std::optional<tensor<double>>> scratch(xs.size());
        std::vector<const tensor<double>*> parts;
        for (std::size_t i = 0; i < xs.size(); ++i) parts.push_back(&xs[i].plain_ref(scratch[i]));
        return X(kernels::cat(parts.data(), parts.size(), dim));
      }
    }
    return detail::cat_range(xs.data(), xs.size(), dim);
  }
}
/// cat({a, b, ...}, dim): concatenation along an existing dim.
/// \code
/// tw::tensor<double> a{1, 2}, b{3};
/// if (tw::cat({a, b})(2) != 3 || tw::cat(std::vector{a, a, b}).numel() != 5) throw std::runtime_error("cat");
/// // a plain tensor with a value vmap wraps: a tuple
/// auto f = [&](auto x) { return tw::sum(tw::cat(std::tuple{a, x})); };
/// if (tw::vmap(f)(tw::tensor<double>({2, 1}, {10, 20}))(1) != 23) throw std::runtime_error("cat tuple");
/// \endcode
template <operand X>
auto cat(std::initializer_list<X> xs, std::int64_t dim = 0) {
  return cat(std::vector<X>(xs), dim);
}
/// A braced list that puts a tape-free value beside one its form cannot run (dual_unsupported,
/// scalar_dual.hpp: vmap's per-example loop then declines).
inline dual_unsupported cat(std::initializer_list<dual_unsupported>, std::int64_t = 0) { return {}; }

/// The values (of one shape) stacked along a new dim.
template <operand X>
auto stack(const std::vector<X>& xs, std::int64_t dim = 0) {
  using R = decltype(unsqueeze(xs.at(0), dim));
  if (xs.empty()) throw error("stack: needs at least one value");
  const shape_t s = shape(xs.front());
  dim = kernels::check_dim("stack", dim, static_cast<std::int64_t>(s.size()) + 1, s);
  std::vector<R> u;
  for (const auto& x : xs) {
    if (shape(x) != shape(xs.at(0)))
      throw error("stack: shapes differ: " + detail::shape_str(shape(xs.at(0))) + " and " +
                  detail::shape_str(shape(x)));
    u.push_back(unsqueeze(x, dim));
  }
  return cat(u, dim);
}
/// stack({a, b, ...}, dim): values of one shape along a new dim.
/// \code
/// tw::tensor<double> a{1, 2}, b{3, 4};
/// auto s = tw::stack({a, b}, 1);   // [[1, 3], [2, 4]]
/// if (s.shape() != tw::shape_t{2, 2} || s(0, 1) != 3 || tw::stack(std::vector{a, b})(1, 0) != 3) throw std::runtime_error("stack");
/// auto f = [&](auto x) { return tw::stack(std::tuple{a, x}); };   // a plain tensor and a vmap value
/// if (tw::vmap(f)(tw::tensor<double>({1, 2}, {5, 6}))(0, 1, 1) != 6) throw std::runtime_error("stack tuple");
/// \endcode
template <operand X>
auto stack(std::initializer_list<X> xs, std::int64_t dim = 0) {
  return stack(std::vector<X>(xs), dim);
}
/// (As cat's: a braced list that mixes a tape-free value with a dual_unsupported.)
inline dual_unsupported stack(std::initializer_list<dual_unsupported>, std::int64_t = 0) { return {}; }

namespace detail {
template <class A>
A cat_fold(std::int64_t, const A& a) {
  return a;
}
template <class A, class B, class... R>
auto cat_fold(std::int64_t dim, const A& a, const B& b, const R&... r) {
  return cat_fold(dim, call_op(cat_op{dim}, a, b), r...);
}
}  // namespace detail

/// Values of different types joined along dim, left to right: a plain value with one a transform
/// wraps (torch.cat([c, x]) inside vmap is tw::cat(std::tuple{c, x})), which no std::vector holds.
/// cat(std::tuple{a, b, ...}, dim): values of different types (plain and transform values).
template <operand... X>
  requires(sizeof...(X) >= 1)
auto cat(const std::tuple<X...>& xs, std::int64_t dim = 0) {
  return std::apply([&](const auto&... x) { return detail::cat_fold(dim, detail::as_operand(x)...); }, xs);
}

/// Values of different types (of one shape) stacked along a new dim: tw::stack(std::tuple{c, x}).
/// stack(std::tuple{a, b, ...}, dim): values of different types.
template <operand... X>
  requires(sizeof...(X) >= 1)
auto stack(const std::tuple<X...>& xs, std::int64_t dim = 0) {
  return std::apply(
      [&](const auto& first, const auto&... rest) {
        auto same = [&](const auto& x) {
          if (shape(x) != shape(first))
            throw error("stack: shapes differ: " + detail::shape_str(shape(first)) + " and " +
                        detail::shape_str(shape(x)));
          return unsqueeze(x, dim);
        };
        return detail::cat_fold(dim, unsqueeze(first, dim), same(rest)...);
      },
      xs);
}

/// Pieces of `size` along dim (the last may be smaller), as torch.split.
/// \code
/// auto parts = tw::split(tw::arange<double>(5), 2);   // [0, 1], [2, 3], [4]
/// if (parts.size() != 3 || parts[2].numel() != 1 || parts[2](0) != 4) throw std::runtime_error("split");
/// \endcode
template <operand X>
auto split(const X& x, std::int64_t size, std::int64_t dim = 0) {
  if (size <= 0) throw error("split: size must be positive, got " + std::to_string(size));
  const shape_t s = shape(x);
  const std::int64_t n =
      s.at(static_cast<std::size_t>(detail::norm_dim("split", dim, static_cast<std::int64_t>(s.size()))));
  std::vector<decltype(narrow(x, dim, 0, 0))> out;
  for (std::int64_t i = 0, len = 0; i < n; i += len) {  // (i + size may overflow)
    len = std::min(size, n - i);
    out.push_back(narrow(x, dim, i, len));
  }
  return out;
}

struct scatter_add_op;

/// torch.gather: out[i][j] = x[index[i][j]][j] for dim 0. The index is a tensor of integers.
struct gather_op {
  static constexpr const char* name = "gather";
  std::int64_t dim;
  template <class X, class I>
  auto base(const X& x, const I& index) const {
    if constexpr (kernels::is_plain_scalar_v<X> || kernels::is_plain_scalar_v<I>) {
      throw error("gather: needs tensors of rank >= 1");
      return kernels::as_tensor<kernels::element_t<X>>(x);
    } else {
      return kernels::gather(x, dim, index);
    }
  }
  template <class BS, class X, class I>
  auto batch(BS bs, const X& x, const I& index) const {
    if (logical_rank(x) != logical_rank(index))
      throw error("gather: index of shape " + detail::shape_str(logical_shape(index)) +
                  " must have the rank of the input, shape " + detail::shape_str(logical_shape(x)));
    return call_op(gather_op{detail::norm_dim(name, dim, logical_rank(x)) + 1}, with_batch(bs, x),
                   with_batch(bs, index));
  }
  template <class G, class O, class X, class I>
  auto vjp(const G& g, const O&, const X& x, const I& index) const;
  template <class O, class X, class I, class TX, class TI>
  auto jvp(const O&, const X&, const I& index, const TX& tx, const TI&) const {
    return call_op(*this, tx, index);
  }
};

/// self with src added where gather would read: gather's adjoint.
struct scatter_add_op {
  static constexpr const char* name = "scatter_add";
  std::int64_t dim;
  template <class S, class I, class X>
  auto base(const S& self, const I& index, const X& src) const {
    if constexpr (kernels::is_plain_scalar_v<S> || kernels::is_plain_scalar_v<I> || kernels::is_plain_scalar_v<X>) {
      throw error("scatter_add: needs tensors of rank >= 1");
      return kernels::as_tensor<kernels::element_t<S>>(self);
    } else {
      return kernels::scatter_add(self, dim, index, src);
    }
  }
  template <class BS, class S, class I, class X>
  auto batch(BS bs, const S& self, const I& index, const X& src) const {
    return call_op(scatter_add_op{detail::norm_dim(name, dim, logical_rank(self)) + 1}, with_batch(bs, self),
                   with_batch(bs, index), with_batch(bs, src));
  }
  template <class G, class O, class S, class I, class X>
  auto vjp(const G& g, const O&, const S&, const I& index, const X&) const {
    return std::make_tuple(g, zeros_like(index), call_op(gather_op{dim}, g, index));
  }
  template <class O, class S, class I, class X, class TS, class TI, class TX>
  auto jvp(const O&, const S&, const I& index, const X&, const TS& ts, const TI&, const TX& tx) const {
    return call_op(*this, ts, index, tx);
  }
};

template <class G, class O, class X, class I>
auto gather_op::vjp(const G& g, const O&, const X& x, const I& index) const {
  return std::make_tuple(call_op(scatter_add_op{dim}, zeros_like(x), index, g), zeros_like(index));
}

/// gather(x, dim, index): out[i][j] = x[index[i][j]][j] for dim 0, and so on (torch.gather).
/// \code
/// auto x = tw::tensor<double>{{1, 2}, {3, 4}};
/// auto g = tw::gather(x, 1, tw::tensor<double>{{1, 1}, {0, 1}});   // [[2, 2], [3, 4]]
/// if (g(0, 0) != 2 || g(1, 0) != 3) throw std::runtime_error("gather");
/// \endcode
template <operand X, operand I>
TOWER_ALWAYS_INLINE auto gather(const X& x, std::int64_t dim, const I& index) {
  return call_op(gather_op{dim}, x, index);
}
/// scatter_add(self, dim, index, src): self with src added at index along dim (torch.scatter_add).
/// \code
/// auto y = tw::scatter_add(tw::zeros<double>({3}), 0, tw::tensor<double>{0, 2, 0}, tw::tensor<double>{1, 2, 3});
/// if (y(0) != 4 || y(1) != 0 || y(2) != 2) throw std::runtime_error("scatter_add");
/// \endcode
template <operand S, operand I, operand X>
auto scatter_add(const S& self, std::int64_t dim, const I& index, const X& src) {
  return call_op(scatter_add_op{dim}, self, index, src);
}

/// The entries of x at `index` along dim (torch.index_select), as a gather.
/// \code
/// auto x = tw::tensor<double>{{1, 2}, {3, 4}, {5, 6}};
/// auto y = tw::index_select(x, 0, {2, -3});   // rows 2 and 0
/// if (y.shape() != tw::shape_t{2, 2} || y(0, 1) != 6 || y(1, 0) != 1) throw std::runtime_error("index_select");
/// \endcode
template <operand X>
auto index_select(const X& x, std::int64_t dim, const shape_t& index) {
  const shape_t s = shape(x);
  const std::int64_t d = detail::norm_dim("index_select", dim, static_cast<std::int64_t>(s.size()));
  const std::int64_t n = s[static_cast<std::size_t>(d)];
  shape_t one(s.size(), 1), full = s;
  one[static_cast<std::size_t>(d)] = full[static_cast<std::size_t>(d)] = static_cast<std::int64_t>(index.size());
  std::vector<double> v;
  for (auto i : index) {
    if (i < -n || i >= n)
      throw error("index_select: index " + std::to_string(i) + " out of range for dim " + std::to_string(dim) +
                  " of shape " + detail::shape_str(s));
    v.push_back(static_cast<double>(i < 0 ? i + n : i));
  }
  using T = std::conditional_t<is_dyn_v<X>, double, scalar_type_t<X>>;
  const tensor<T> idx = kernels::broadcast_to(tensor<T>(one, buffer<T>(v.begin(), v.end())), full);
  return gather(x, d, idx);
}

}  // namespace tower

// prod's derivative (declared in reduce.hpp), built of the ops above.
#include "dsl/products.hpp"

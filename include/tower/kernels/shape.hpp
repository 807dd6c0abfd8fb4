#pragma once
// Base kernels for reductions, layout and indexing on plain values (double, float, tensor<T>).
// They know nothing about transforms; the ops in dsl/ call them at the bottom of dispatch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tower/kernels/base.hpp"

namespace tower::kernels {

/// Reduces over `dims` with `combine(acc, v)` starting from `init`; keepdim keeps them as size 1.
template <class X, class Combine>
auto reduce(const char* op, const X& x, shape_t dims, bool keepdim, double init, Combine combine) {
  if constexpr (is_plain_scalar_v<X>) {
    normalize_dims(op, dims, 0);
    return static_cast<X>(combine(init, x));
  } else {
    using T = element_t<X>;
    const auto& in = x.shape();
    dims = normalize_dims(op, std::move(dims), x.dim());
    shape_t kept = in;
    for (auto d : dims) kept[static_cast<std::size_t>(d)] = 1;
    std::vector<double> acc(static_cast<std::size_t>(numel_of(kept)), init);
    const T* p = x.data();
    for_each_strided(in, broadcast_strides(kept, in), [&](std::int64_t i, std::int64_t o) {
      acc[static_cast<std::size_t>(o)] = combine(acc[static_cast<std::size_t>(o)], static_cast<double>(p[i]));
    });
    shape_t res;
    for (std::size_t k = 0; k < in.size(); ++k) {
      const bool reduced = std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(k)) != dims.end();
      if (!reduced || keepdim) res.push_back(kept[k]);
    }
    return tensor<T>(res, buffer<T>(acc.begin(), acc.end()));
  }
}

/// Permutes dims: result dim k is input dim perm[k].
template <class X>
auto permute(const X& x, shape_t perm) {
  if constexpr (is_plain_scalar_v<X>) {
    if (!perm.empty()) throw error("permute: " + std::to_string(perm.size()) + " dims given for a scalar");
    return x;
  } else {
    const std::int64_t r = x.dim();
    if (static_cast<std::int64_t>(perm.size()) != r)
      throw error("permute: " + std::to_string(perm.size()) + " dims given for a tensor of shape " +
                  detail::shape_str(x.shape()));
    return permuted(x, normalize_dims("permute", std::move(perm), r));
  }
}

/// Splits a shape around `dim`: (product of dims before, size at dim, product of dims after).
inline void outer_inner(const shape_t& s, std::int64_t dim, std::int64_t& outer, std::int64_t& inner) {
  outer = 1;
  inner = 1;
  for (std::int64_t k = 0; k < dim; ++k) outer *= s[static_cast<std::size_t>(k)];
  for (std::size_t k = static_cast<std::size_t>(dim) + 1; k < s.size(); ++k) inner *= s[k];
}

/// x[..., start:start+length, ...] along dim.
template <class T>
tensor<T> narrow(const tensor<T>& x, std::int64_t dim, std::int64_t start, std::int64_t length) {
  dim = check_dim("narrow", dim, x.dim(), x.shape());
  const std::int64_t n = x.shape()[static_cast<std::size_t>(dim)];
  const std::int64_t first = start < 0 ? start + n : start;
  // Compared without forming start + length, which may overflow.
  if (first < 0 || first > n || length < 0 || length > n - first)
    throw error("narrow: start " + std::to_string(start) + " and length " + std::to_string(length) +
                " out of bounds for dim " + std::to_string(dim) + " of shape " + detail::shape_str(x.shape()));
  start = first;
  std::int64_t outer, inner;
  outer_inner(x.shape(), dim, outer, inner);
  shape_t s = x.shape();
  s[static_cast<std::size_t>(dim)] = length;
  buffer<T> out;
  out.reserve(static_cast<std::size_t>(numel_of(s)));
  const T* p = x.data();
  for (std::int64_t o = 0; o < outer; ++o)
    append_copy(out, p + (o * n + start) * inner, static_cast<std::size_t>(length * inner));
  return tensor<T>(s, std::move(out));
}

/// Zeros of size `total` along dim with x placed at [start, start + x.size(dim)): narrow's adjoint.
template <class T>
tensor<T> pad(const tensor<T>& x, std::int64_t dim, std::int64_t start, std::int64_t total) {
  dim = check_dim("pad", dim, x.dim(), x.shape());
  const std::int64_t n = x.shape()[static_cast<std::size_t>(dim)];
  if (start < 0 || total < 0 || start > total || n > total - start)
    throw error("pad: cannot place dim " + std::to_string(dim) + " of shape " + detail::shape_str(x.shape()) + " at " +
                std::to_string(start) + " in size " + std::to_string(total));
  std::int64_t outer, inner;
  outer_inner(x.shape(), dim, outer, inner);
  shape_t s = x.shape();
  s[static_cast<std::size_t>(dim)] = total;
  buffer<T> out(static_cast<std::size_t>(numel_of(s)), T(0));
  const T* p = x.data();
  for (std::int64_t o = 0; o < outer; ++o)
    std::copy(p + o * n * inner, p + (o + 1) * n * inner, out.begin() + (o * total + start) * inner);
  return tensor<T>(s, std::move(out));
}

/// The n >= 1 tensors at parts[0..n) joined along dim in one pass; the other dims must agree
/// (tw::cat rejects an empty list before this).
template <class T>
tensor<T> cat(const tensor<T>* const* parts, std::size_t n, std::int64_t dim) {
  const tensor<T>& a = *parts[0];
  if (a.dim() == 0) throw error("cat: cannot concatenate scalars (rank 0)");
  dim = check_dim("cat", dim, a.dim(), a.shape());
  shape_t s = a.shape();
  s[static_cast<std::size_t>(dim)] = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const tensor<T>& b = *parts[i];
    bool agree = b.dim() == a.dim();
    for (std::int64_t k = 0; agree && k < a.dim(); ++k)
      agree = k == dim || a.shape()[static_cast<std::size_t>(k)] == b.shape()[static_cast<std::size_t>(k)];
    if (!agree)
      throw error("cat: cannot join shapes " + detail::shape_str(a.shape()) + " and " + detail::shape_str(b.shape()) +
                  " (they differ outside dim " + std::to_string(dim) + ")");
    auto& size = s[static_cast<std::size_t>(dim)];
    if (__builtin_add_overflow(size, b.shape()[static_cast<std::size_t>(dim)], &size))
      throw error("cat: the joined size along dim " + std::to_string(dim) + " of " + std::to_string(n) +
                  " values (the first of shape " + detail::shape_str(a.shape()) + ") overflows int64");
  }
  checked_numel("cat", s);
  std::int64_t outer, inner;
  outer_inner(a.shape(), dim, outer, inner);
  buffer<T> out;
  out.reserve(static_cast<std::size_t>(numel_of(s)));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t len = parts[i]->shape()[static_cast<std::size_t>(dim)] * inner;
      append_copy(out, parts[i]->data() + o * len, static_cast<std::size_t>(len));
    }
  return tensor<T>(s, std::move(out));
}

/// a and b joined along dim; the other dims must agree.
template <class T>
tensor<T> cat(const tensor<T>& a, const tensor<T>& b, std::int64_t dim) {
  const tensor<T>* parts[] = {&a, &b};
  return cat(parts, 2, dim);
}

/// Validates an index value (stored as a float holding an integer) against a size: in [0, n), as
/// torch.gather (no negative indices).
inline std::int64_t index_at(const char* op, double v, std::int64_t n) {
  if (!(v >= 0 && v < static_cast<double>(n) && v == std::floor(v))) {
    std::ostringstream os;
    os << op << ": index " << v << " out of range for size " << n << " (indices are integers in [0, " << n << "))";
    throw error(os.str());
  }
  return static_cast<std::int64_t>(v);
}

/// Shared iteration of gather / scatter_add: calls body(index_pos, x_pos) for every index element.
template <class T, class Body>
void gather_positions(const char* op, const shape_t& xs, std::int64_t dim, const tensor<T>& index, Body&& body) {
  const shape_t& is = index.shape();
  if (is.size() != xs.size())
    throw error(std::string(op) + ": index of shape " + detail::shape_str(is) +
                " must have the rank of the input, shape " + detail::shape_str(xs));
  dim = check_dim(op, dim, static_cast<std::int64_t>(xs.size()), xs);
  for (std::size_t k = 0; k < xs.size(); ++k)
    if (static_cast<std::int64_t>(k) != dim && is[k] > xs[k])
      throw error(std::string(op) + ": index shape " + detail::shape_str(is) + " exceeds input shape " +
                  detail::shape_str(xs) + " at dim " + std::to_string(k));
  shape_t xst(xs.size(), 1);
  for (std::size_t k = xs.size(); k-- > 1;) xst[k - 1] = xst[k] * xs[k];
  const std::int64_t n = numel_of(is);
  shape_t idx(is.size(), 0);
  const T* ip = index.data();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t off = 0;
    for (std::size_t k = 0; k < is.size(); ++k)
      off += (static_cast<std::int64_t>(k) == dim ? index_at(op, static_cast<double>(ip[i]), xs[k]) : idx[k]) * xst[k];
    body(i, off);
    for (std::size_t k = is.size(); k-- > 0;) {
      if (++idx[k] < is[k]) break;
      idx[k] = 0;
    }
  }
}

/// out[i][j] = x[index[i][j]][j] (dim 0), torch.gather semantics; the index holds integers.
template <class T>
tensor<T> gather(const tensor<T>& x, std::int64_t dim, const tensor<T>& index) {
  buffer<T> out(static_cast<std::size_t>(index.numel()));
  const T* p = x.data();
  gather_positions("gather", x.shape(), dim, index,
                   [&](std::int64_t i, std::int64_t o) { out[static_cast<std::size_t>(i)] = p[o]; });
  return tensor<T>(index.shape(), std::move(out));
}

/// self with src added at the positions gather would read: gather's adjoint.
template <class T>
tensor<T> scatter_add(const tensor<T>& self, std::int64_t dim, const tensor<T>& index, const tensor<T>& src) {
  if (src.shape() != index.shape())
    throw error("scatter_add: src of shape " + detail::shape_str(src.shape()) + " must match index shape " +
                detail::shape_str(index.shape()));
  tensor<T> r = self;
  T* p = r.data();
  const T* s = src.data();
  gather_positions("scatter_add", self.shape(), dim, index, [&](std::int64_t i, std::int64_t o) { p[o] += s[i]; });
  return r;
}

/// cond ? a : b elementwise, all three broadcast together.
template <class C, class A, class B>
auto where(const C& c, const A& a, const B& b) {
  if constexpr (is_plain_scalar_v<C> && is_plain_scalar_v<A> && is_plain_scalar_v<B>) {
    using T = std::common_type_t<A, B>;
    return c != C(0) ? static_cast<T>(a) : static_cast<T>(b);
  } else {
    using T = std::conditional_t<is_tensor_v<A> || is_tensor_v<B>, common_element_t<A, B>, element_t<C>>;
    const shape_t s = broadcast_shapes("where", broadcast_shapes("where", shape_of(c), shape_of(a)), shape_of(b));
    const tensor<T> tc = kernels::broadcast_to(as_tensor<T>(c), s), ta = kernels::broadcast_to(as_tensor<T>(a), s),
                    tb = kernels::broadcast_to(as_tensor<T>(b), s);
    buffer<T> out(static_cast<std::size_t>(numel_of(s)));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = tc.data()[i] != T(0) ? ta.data()[i] : tb.data()[i];
    return tensor<T>(s, std::move(out));
  }
}

}  // namespace tower::kernels

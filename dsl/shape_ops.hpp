#pragma once
// Shape ops: reshape, broadcast_to, movedim, item, to_tensor, and the composites built on them.
#include <cstdint>
#include <numeric>
#include <optional>
#include <tuple>
#include <utility>

#include "tower/tensor/kept_tensors.hpp"
#include "tower/kernels/base.hpp"
#include "tower/static/op.hpp"

namespace tower {

struct reshape_op {
  static constexpr const char* name = "reshape";
  static constexpr bool linear = true;  // runtime/trace.hpp
  shape_t target;
  template <class X>
  auto base(const X& x) const {
    return kernels::reshape(x, target);
  }
  template <class BS, class X>
  auto batch(BS bs, const X& x) const {
    shape_t s = kernels::infer_shape("reshape", target, numel_of(logical_shape(x)), logical_shape(x));
    s.insert(s.begin(), bs);
    return call_op(reshape_op{s}, x.value);
  }
  /// With the batch last (batched::batch_last): examples stay interleaved the same way, so the
  /// physical value is reshaped to target + [B], no copy.
  template <class BS, class X>
  auto batch_last_rule(BS bs, const X& x) const {
    using P = std::remove_cvref_t<decltype(x.value)>;
    std::optional<P> r;
    if constexpr (is_tensor_v<P> && decltype(x.batched)::value) {
      const shape_t logical(x.value.shape().begin(), x.value.shape().end() - 1);
      shape_t s = kernels::infer_shape("reshape", target, numel_of(logical), logical);
      s.push_back(bs);
      r = x.value.with_shape(std::move(s));
    }
    return r;
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const {
    return std::make_tuple(call_op(reshape_op{shape(x)}, g));
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

/// x with a new shape (one entry may be -1); the data order is unchanged.
/// \code
/// auto y = tw::reshape(tw::arange<double>(6), {3, -1});
/// if (y.shape() != tw::shape_t{3, 2} || y(2, 1) != 5) throw std::runtime_error("reshape");
/// \endcode
template <operand X>
TOWER_ALWAYS_INLINE auto reshape(const X& x, shape_t s) {
  return call_op(reshape_op{std::move(s)}, x);
}

/// Sums g down to the logical shape of x (the VJP of broadcasting).
template <class G, class X>
auto sum_to_like(const G& g, const X& x);

struct broadcast_to_op {
  static constexpr const char* name = "broadcast_to";
  static constexpr bool linear = true;  // runtime/trace.hpp
  shape_t target;
  template <class X>
  auto base(const X& x) const {
    return kernels::broadcast_to(x, target);
  }
  template <class BS, class X>
  auto batch(BS bs, const X& x) const {
    shape_t padded = logical_shape(x);
    if (padded.size() > target.size())
      throw error("broadcast_to: cannot broadcast shape " + detail::shape_str(padded) + " to " +
                  detail::shape_str(target));
    padded.insert(padded.begin(), target.size() - padded.size(), 1);
    padded.insert(padded.begin(), bs);
    shape_t physical = target;
    physical.insert(physical.begin(), bs);
    return call_op(broadcast_to_op{physical}, call_op(reshape_op{padded}, x.value));
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const {
    return std::make_tuple(sum_to_like(g, x));
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

/// broadcast_to(x, shape): x broadcast to `shape` (NumPy's rules).
/// \code
/// auto y = tw::broadcast_to(tw::tensor<double>({3}, {1, 2, 3}), {2, 3});
/// if (y.shape() != tw::shape_t{2, 3} || y(1, 2) != 3) throw std::runtime_error("broadcast_to");
/// \endcode
template <operand X>
TOWER_ALWAYS_INLINE auto broadcast_to(const X& x, shape_t s) {
  allocation_size("broadcast_to", s);  // before a batching rule adds the batch to it
  return call_op(broadcast_to_op{std::move(s)}, x);
}

struct movedim_op {
  static constexpr const char* name = "movedim";
  static constexpr bool linear = true;  // runtime/trace.hpp
  std::int64_t src, dst;
  template <class X>
    requires is_tensor_v<X>
  auto base(const X& x) const {
    return kernels::movedim(x, src, dst);
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    const std::int64_t r = logical_rank(x);
    return call_op(movedim_op{kernels::check_dim(name, src, r, logical_shape(x)) + 1,
                              kernels::check_dim(name, dst, r, logical_shape(x)) + 1},
                   x.value);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X&) const {
    return std::make_tuple(call_op(movedim_op{dst, src}, g));
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

/// x with dimension `src` moved to position `dst`.
/// \code
/// auto y = tw::movedim(tw::reshape(tw::arange<double>(6), {1, 2, 3}), 0, 2);
/// if (y.shape() != tw::shape_t{2, 3, 1} || y(1, 0, 0) != 3) throw std::runtime_error("movedim");
/// \endcode
template <operand X>
TOWER_ALWAYS_INLINE auto movedim(const X& x, std::int64_t src, std::int64_t dst) {
  return call_op(movedim_op{src, dst}, x);
}

/// The single value of a one-element value, as a scalar at every level.
struct item_op {
  static constexpr const char* name = "item";
  template <class X>
  auto base(const X& x) const {
    return kernels::item(x);
  }
  template <class BS, class X>
  auto batch(BS bs, const X& x) const {
    if (numel_of(logical_shape(x)) != 1)
      throw error("item: value of shape " + detail::shape_str(logical_shape(x)) + " has more than one element");
    return call_op(reshape_op{{bs}}, x.value);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const {
    if constexpr (is_scalar_type_v<X>) return std::make_tuple(g);
    else return std::make_tuple(call_op(reshape_op{shape(x)}, g));
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

/// item(x): a one-element value as a rank-0 value (a number under every transform).
/// \code
/// double d = tw::grad([](auto x) { return tw::item(tw::sum(x * x)); })(3.0);  // d(x^2)/dx = 2 x
/// if (d != 6.0) throw std::runtime_error("item");
/// \endcode
inline constexpr op_fn<item_op> item{};

/// A scalar as a rank-0 tensor, at every level.
struct to_tensor_op {
  static constexpr const char* name = "to_tensor";
  template <class X>
  auto base(const X& x) const {
    return kernels::as_tensor<kernels::element_t<X>>(x);
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return x.value;
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X&) const {
    if constexpr (is_scalar_type_v<X>) return std::make_tuple(call_op(item_op{}, g));
    else return std::make_tuple(g);
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

/// A value with its elements converted to T (float <-> double), at every level: grad's adjoint
/// of a float argument computed in double arithmetic (x * 2.0) comes back a float.
template <class T>
struct element_cast_op {
  static constexpr const char* name = "element_cast";
  template <class X>
  auto base(const X& x) const {
    if constexpr (is_tensor_v<X>) {
      buffer<T> b(static_cast<std::size_t>(x.numel()));
      for (std::int64_t i = 0; i < x.numel(); ++i) b[static_cast<std::size_t>(i)] = static_cast<T>(x.data()[i]);
      return tensor<T>(x.shape(), std::move(b));
    } else {
      return static_cast<T>(x);
    }
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(*this, x.value);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X&) const {
    return std::make_tuple(call_op(element_cast_op<scalar_type_t<X>>{}, g));
  }
  template <class O, class X, class Tn>
  auto jvp(const O&, const X&, const Tn& t) const {
    return call_op(*this, t);
  }
};

/// cast<T>(x): x with its elements converted to T (float or double), differentiable under every
/// transform, Eigen's `.cast<T>()` and JAX's `astype`; the gradient comes back in x's element
/// type. The runtime path computes in double only.
/// \code
/// auto x = tw::tensor<double>({2}, {1.5, 2.5});
/// tw::tensor<float> y = tw::cast<float>(x);
/// tw::tensor<double> g = tw::grad([](auto v) { return tw::sum(tw::cast<float>(v) * 2.0f); })(x);
/// if (y(1) != 2.5f || g(0) != 2.0 || g(1) != 2.0) throw std::runtime_error("cast");
/// \endcode
template <class T, operand X>
auto cast(const X& x) {
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float>, "tw::cast<T>: T must be double or float");
  if constexpr (is_dyn_v<X>) {
    static_assert(std::is_same_v<T, double>, "tw::cast<float>: the runtime path computes in double only");
    return x;
  } else {
    return call_op(element_cast_op<T>{}, x);
  }
}

/// Creation ops: their result does not depend on x's values, so grad does not record them.
struct ones_like_op {
  static constexpr const char* name = "ones_like";
  static constexpr bool elementwise = true;
  static constexpr bool shape_only = true;  // a fused runtime vmap folds it to constants
  static constexpr bool differentiable = false;
  template <class X>
  auto base(const X& x) const {
    return kernels::filled(x, 1.0);
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(*this, x.value);
  }
};
/// The op of tw::zeros_like.
struct zeros_like_op {
  static constexpr const char* name = "zeros_like";
  static constexpr bool elementwise = true;
  static constexpr bool shape_only = true;  // a fused runtime vmap folds it to constants
  static constexpr bool differentiable = false;
  template <class X>
  auto base(const X& x) const {
    return kernels::filled(x, 0.0);
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(*this, x.value);
  }
};

/// A value of x's shape filled with `fill`.
struct full_like_op {
  static constexpr const char* name = "full_like";
  static constexpr bool elementwise = true;
  static constexpr bool shape_only = true;  // a fused runtime vmap folds it to constants
  static constexpr bool differentiable = false;
  double fill;
  template <class X>
  auto base(const X& x) const {
    return kernels::filled(x, fill);
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(*this, x.value);
  }
};

/// full_like(x, fill): x's shape filled with `fill` (not differentiated).
/// \code
/// auto x = tw::tensor<double>({2}, {5, 7});
/// if (tw::full_like(x, 3.0)(1) != 3 || tw::ones_like(x)(0) != 1 || tw::zeros_like(x)(1) != 0) throw std::runtime_error("like");
/// if (tw::grad([](auto v) { return v * tw::sum(tw::ones_like(v)); })(2.0) != 1.0) throw std::runtime_error("not differentiated");
/// \endcode
template <operand X>
TOWER_ALWAYS_INLINE auto full_like(const X& x, double fill) {
  return call_op(full_like_op{fill}, x);
}

/// ones_like(x): ones of x's shape (not differentiated).
inline constexpr op_fn<ones_like_op> ones_like{};
/// zeros_like(x): zeros of x's shape (not differentiated).
inline constexpr op_fn<zeros_like_op> zeros_like{};

namespace detail {
/// Zeros of x's shape: the tangent jvp gives an input not at its level, which the rule is told
/// to skip (tangent_inputs_scope), so a plain tensor's are kept and shared (kept_tensors.hpp;
/// filling them was 11% of jacfwd on a 64 x 64 map).
template <class X>
auto zeros_like_value(const X& x) {
  if constexpr (is_tensor_v<X>)
    return kept_per_thread<kernels::element_t<X>>(x.shape(), [&] { return call_op(zeros_like_op{}, x); });
  else return call_op(zeros_like_op{}, x);
}
template <class X>
TOWER_ALWAYS_INLINE auto reshape_value(const X& x, const shape_t& s) {
  return call_op(reshape_op{s}, x);
}
template <class X>
TOWER_ALWAYS_INLINE auto broadcast_values(const X& x, const shape_t& s) {
  return call_op(broadcast_to_op{s}, x);
}
template <class V, class G>
auto element_cast_adjoint(const G& g) {
  return call_op(element_cast_op<scalar_type_t<V>>{}, g);
}
template <class V, class G>
auto cast_adjoint(const G& g) {
  if constexpr (is_scalar_type_v<V>) return call_op(item_op{}, g);
  else return call_op(to_tensor_op{}, g);
}
}  // namespace detail

}  // namespace tower

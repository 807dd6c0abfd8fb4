#pragma once
// Reductions over all dims or given dims, with keepdim: sum, prod, amax, amin (primitives with
// their own rules), and mean, logsumexp, var, norm (composed of them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <numeric>
#include <optional>
#include <tuple>
#include <vector>

#include "dsl/pointwise.hpp"
#include "dsl/shape_ops.hpp"
#include "tower/static/op.hpp"

namespace tower {

struct sum_op {
  static constexpr const char* name = "sum";
  static constexpr bool linear = true;  // runtime/trace.hpp
  shape_t dims;                         // ignored when all
  bool keepdim = false;
  bool all = true;

  shape_t dims_for(std::int64_t rank) const {
    if (!all) return kernels::normalize_dims("sum", dims, rank);
    shape_t d(static_cast<std::size_t>(rank));
    std::iota(d.begin(), d.end(), 0);
    return d;
  }

  template <class X>
  auto base(const X& x) const {
    if constexpr (kernels::is_plain_scalar_v<X>) {
      (void)dims_for(0);
      return x;
    } else {
      return kernels::sum(x, dims_for(x.dim()), keepdim);
    }
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    auto d = dims_for(logical_rank(x));
    for (auto& k : d) ++k;
    return call_op(sum_op{d, keepdim, false}, x.value);
  }
  /// With the batch last (batched::batch_last): the logical dims are the physical ones.
  template <class BS, class X>
  auto batch_last_rule(BS, const X& x) const {
    using P = std::remove_cvref_t<decltype(x.value)>;
    std::optional<P> r;
    if constexpr (is_tensor_v<P> && decltype(x.batched)::value)
      r = call_op(sum_op{dims_for(x.value.dim() - 1), keepdim, false}, x.value);
    return r;
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const {
    if constexpr (is_scalar_type_v<X>) {
      return std::make_tuple(g);
    } else {
      const shape_t xs = shape(x);
      shape_t kept = xs;
      for (auto d : dims_for(static_cast<std::int64_t>(xs.size()))) kept[static_cast<std::size_t>(d)] = 1;
      return std::make_tuple(call_op(broadcast_to_op{xs}, call_op(reshape_op{kept}, g)));
    }
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

namespace detail {
/// sum on a tw::fixed value: its elements added pairwise (fixeds::tree_sum), unrolled. The sum of all elements (on
/// a 1-D value also over dim 0 or -1), without keepdim; other dims are a tower::error.
template <>
struct fixed_rule<sum_op> {
  template <class X>
  TOWER_ALWAYS_INLINE static auto total(const X& x) {
    if constexpr (!is_fixed_v<X>) {
      return x;
    } else {
      return fixeds::tree_sum<0, static_cast<std::size_t>(X::size)>(
          [&](auto j) TOWER_INLINE_LAMBDA { return total(x.e[decltype(j)::value]); });
    }
  }
  template <class X>
  TOWER_ALWAYS_INLINE static auto run(const sum_op& op, const X& x) {
    if constexpr (!is_fixed_v<X>) {
      return dual_unsupported{};
    } else {
      const bool whole =
          op.all || (fixeds::rank<X>() == 1 && op.dims.size() == 1 && (op.dims[0] == 0 || op.dims[0] == -1));
      if (!whole || op.keepdim)
        throw error("sum: on a tw::fixed value of shape " + detail::shape_str(fixed_shape<X>()) +
                    " only the sum of all elements without keepdim is supported; convert with tw::to_tensor");
      return total(x);
    }
  }
};

}  // namespace detail

/// Sum of all elements (a scalar: rank 0).
/// \code
/// auto x = tw::tensor<double>({2, 3}, {1, 2, 3, 4, 5, 6});
/// if (tw::sum(x).item() != 21 || tw::sum(x, 0)(2) != 9 || tw::sum(x, {0, 1}).item() != 21) throw std::runtime_error("sum");
/// if (tw::sum(x, -1, true).shape() != tw::shape_t{2, 1}) throw std::runtime_error("keepdim");
/// \endcode
template <operand X>
TOWER_ALWAYS_INLINE auto sum(const X& x) {
  return call_op(sum_op{}, x);
}

/// Sum over `dim` (negative counts from the end); with keepdim the dim stays as size 1.
template <operand X>
TOWER_ALWAYS_INLINE auto sum(const X& x, std::int64_t dim, bool keepdim = false) {
  return call_op(sum_op{{dim}, keepdim, false}, x);
}

/// Sum over several dims.
template <operand X>
auto sum(const X& x, shape_t dims, bool keepdim = false) {
  return call_op(sum_op{std::move(dims), keepdim, false}, x);
}

template <class G, class X>
auto sum_to_like(const G& g, const X& x) {
  if constexpr (is_scalar_type_v<G>) {
    return g;
  } else if constexpr (std::is_same_v<G, X> && (is_fixed_v<G> || is_lanes_dual_v<G>)) {
    return g;  // a shape the compiler knows, the same
  } else {
    const shape_t xs = shape(x), gs = shape(g);
    if (xs == gs) return g;
    if (gs.size() < xs.size())
      throw error("sum_to: cannot reduce shape " + detail::shape_str(gs) + " to " + detail::shape_str(xs));
    const std::size_t lead = gs.size() - xs.size();
    shape_t dims;
    for (std::size_t k = 0; k < gs.size(); ++k)
      if (k < lead || (xs[k - lead] == 1 && gs[k] != 1)) dims.push_back(static_cast<std::int64_t>(k));
    return call_op(reshape_op{xs}, call_op(sum_op{dims, false, false}, g));
  }
}

/// Dims and keepdim of a reduction (all dims when `all`), shared by the reduction ops.
struct reduction_dims {
  shape_t dims;
  bool keepdim = false;
  bool all = true;

  shape_t dims_for(const char* op, std::int64_t rank) const {
    if (!all) return kernels::normalize_dims(op, dims, rank);
    shape_t d(static_cast<std::size_t>(rank));
    std::iota(d.begin(), d.end(), 0);
    return d;
  }
  /// The shape of x with the reduced dims kept as size 1.
  shape_t kept_shape(const char* op, const shape_t& xs) const {
    shape_t kept = xs;
    for (auto d : dims_for(op, static_cast<std::int64_t>(xs.size()))) kept[static_cast<std::size_t>(d)] = 1;
    return kept;
  }
};

/// A reduction's result (or cotangent) broadcast back to the input's shape.
template <class G, class X>
auto unreduce(const char* op, const reduction_dims& r, const G& g, const X& x) {
  if constexpr (is_scalar_type_v<X>) return g;
  else return call_op(broadcast_to_op{shape(x)}, call_op(reshape_op{r.kept_shape(op, shape(x))}, g));
}

/// Defines the batching rule every reduction shares: the logical dims shifted past the batch dim.
template <class Op>
struct reduction_batch_rule {
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    const Op& self = static_cast<const Op&>(*this);
    auto d = self.r.dims_for(Op::name, logical_rank(x));
    for (auto& k : d) ++k;
    return call_op(Op{{}, {d, self.r.keepdim, false}}, x.value);
  }
};

namespace detail {
/// The product of the other elements of each element's group (dsl/products.hpp).
template <class X>
auto products_of_others(const X& x, const reduction_dims& r);
}  // namespace detail

/// Product over dims. The derivative is the product of the other elements (not out / x: exact
/// with zeros, as torch's).
struct prod_op : reduction_batch_rule<prod_op> {
  static constexpr const char* name = "prod";
  reduction_dims r;
  template <class X>
  auto base(const X& x) const {
    return kernels::reduce(name, x, r.dims_for(name, rank(x)), r.keepdim, 1.0,
                           [](double a, double v) { return a * v; });
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const {
    return std::make_tuple(unreduce(name, r, g, x) * detail::products_of_others(x, r));
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X& x, const T& t) const {
    return call_op(sum_op{r.dims, r.keepdim, r.all}, t * detail::products_of_others(x, r));
  }
};

/// amax / amin: the largest / smallest value over dims; NaN when one of them is NaN (as torch).
/// The gradient is shared evenly between tied extrema (torch.amax's rule); over values with a
/// NaN no value ties with the NaN result, so their gradient is NaN (0 / 0), as torch's.
template <bool Max>
struct extremum_op : reduction_batch_rule<extremum_op<Max>> {
  static constexpr const char* name = Max ? "amax" : "amin";
  reduction_dims r;
  template <class X>
  auto base(const X& x) const {
    constexpr double inf = std::numeric_limits<double>::infinity();
    if constexpr (!kernels::is_plain_scalar_v<X>)
      for (auto d : r.dims_for(name, x.dim()))
        if (x.shape()[static_cast<std::size_t>(d)] == 0)
          throw error(std::string(name) + ": reducing an empty dim of shape " + detail::shape_str(x.shape()));
    return kernels::reduce(name, x, r.dims_for(name, rank(x)), r.keepdim, Max ? -inf : inf,
                           [](double a, double v) { return (Max ? v > a : v < a) || v != v ? v : a; });
  }
  /// 1 / (number of ties) where x attains the extremum, else 0.
  template <class O, class X>
  auto share(const O& out, const X& x) const {
    auto mask = eq(x, unreduce(name, r, out, x));
    return mask / unreduce(name, r, call_op(sum_op{r.dims, r.keepdim, r.all}, mask), x);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O& out, const X& x) const {
    return std::make_tuple(unreduce(name, r, g, x) * share(out, x));
  }
  template <class O, class X, class T>
  auto jvp(const O& out, const X& x, const T& t) const {
    return call_op(sum_op{r.dims, r.keepdim, r.all}, t * share(out, x));
  }
};
using amax_op = extremum_op<true>;
using amin_op = extremum_op<false>;

namespace detail {
/// amax / amin of all elements of a 1-D tw::fixed value (vmap's fixed-rows loop): the tensor
/// kernel's pick (the first element that compares strictly better), the derivative shared evenly
/// between tied extrema. The value is the extremum exactly: the ties' differences from it are
/// zeros that carry only their tangents. With a NaN element the value and every derivative are
/// NaN, as the tensor rules give. Other dims are a tower::error.
template <bool Max>
struct fixed_rule<extremum_op<Max>> {
  template <class X>
  TOWER_ALWAYS_INLINE static auto run(const extremum_op<Max>& op, const X& x) {
    if constexpr (!is_fixed_v<X>) {
      return dual_unsupported{};
    } else if constexpr (fixeds::rank<X>() != 1) {
      throw error(std::string(extremum_op<Max>::name) + ": on a tw::fixed value of shape " +
                  detail::shape_str(fixed_shape<X>()) + " only 1-D values are supported; convert with tw::to_tensor");
      return x.e[0][0];
    } else {
      const auto& d = op.r.dims;
      if (!(op.r.all || (d.size() == 1 && (d[0] == 0 || d[0] == -1))) || op.r.keepdim)
        throw error(std::string(extremum_op<Max>::name) +
                    ": on a tw::fixed value only the extremum of all elements without keepdim is supported");
      auto better = [](const auto& a, const auto& b)
                        TOWER_INLINE_LAMBDA { return static_cast<bool>(Max ? gt(a, b) : lt(a, b)); };
      const double start = Max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      std::size_t best = 0;
      bool found = false, nan = false;
      for (std::size_t i = 0; i < static_cast<std::size_t>(X::size); ++i) {
        nan = nan || static_cast<bool>(ne(x.e[i], x.e[i]));
        if (found ? better(x.e[i], x.e[best]) : better(x.e[i], start)) best = i, found = true;
      }
      if (nan)
        return fixeds::tree_sum<0, static_cast<std::size_t>(X::size)>([&](auto j) { return x.e[decltype(j)::value]; }) *
               std::numeric_limits<double>::quiet_NaN();
      auto ties = x.e[best] - x.e[best];
      double k = 1;
      for (std::size_t i = 0; i < static_cast<std::size_t>(X::size); ++i)
        if (i != best && static_cast<bool>(eq(x.e[i], x.e[best]))) ties = ties + (x.e[i] - x.e[best]), k += 1;
      return x.e[best] + ties * (1.0 / k);
    }
  }
};
}  // namespace detail

// Public spellings: f(x) over all dims; f(x, dim, keepdim); f(x, {dims...}, keepdim).
#define TOWER_REDUCTION_FN(NAME)                                         \
  template <operand X>                                                   \
  auto NAME(const X& x) {                                                \
    return call_op(NAME##_op{{}, {{}, false, true}}, x);                 \
  }                                                                      \
  template <operand X>                                                   \
  auto NAME(const X& x, std::int64_t dim, bool keepdim = false) {        \
    return call_op(NAME##_op{{}, {{dim}, keepdim, false}}, x);           \
  }                                                                      \
  template <operand X>                                                   \
  auto NAME(const X& x, shape_t dims, bool keepdim = false) {            \
    return call_op(NAME##_op{{}, {std::move(dims), keepdim, false}}, x); \
  }
/// @name Reductions: prod, amax, amin
/// `tw::prod(x)` over all elements, `tw::prod(x, dim, keepdim)` over one dim,
/// `tw::prod(x, {d0, d1}, keepdim)` over several; the same for amax and amin (the maximum and
/// minimum; ties share the gradient).
/// \code
/// auto x = tw::tensor<double>({2, 3}, {1, 2, 3, 4, 5, 6});
/// if (tw::prod(x).item() != 720 || tw::prod(x, 1)(1) != 120) throw std::runtime_error("prod");
/// if (tw::amax(x, 1)(0) != 3 || tw::amin(x, {0, 1}).item() != 1) throw std::runtime_error("amax/amin");
/// \endcode
/// @{
TOWER_REDUCTION_FN(prod)
TOWER_REDUCTION_FN(amax)
TOWER_REDUCTION_FN(amin)
/// @}
#undef TOWER_REDUCTION_FN

namespace detail {
/// Number of elements a reduction over `r` combines, for x's logical shape.
template <class X>
double reduced_count(const char* op, const reduction_dims& r, const X& x) {
  const shape_t xs = shape(x);
  double n = 1;
  for (auto d : r.dims_for(op, static_cast<std::int64_t>(xs.size())))
    n *= static_cast<double>(xs[static_cast<std::size_t>(d)]);
  return n;
}
template <class X>
TOWER_ALWAYS_INLINE auto sum_r(const X& x, const reduction_dims& r) {
  return call_op(sum_op{r.dims, r.keepdim, r.all}, x);
}
template <class X>
TOWER_ALWAYS_INLINE auto amax_r(const X& x, const reduction_dims& r) {
  return call_op(amax_op{{}, r}, x);
}
}  // namespace detail

// Reductions composed of the primitives above (their rules follow from the composition).
#define TOWER_COMPOSITE_REDUCTION(NAME)                                     \
  template <operand X>                                                      \
  auto NAME(const X& x) {                                                   \
    return NAME##_impl(x, reduction_dims{{}, false, true});                 \
  }                                                                         \
  template <operand X>                                                      \
  auto NAME(const X& x, std::int64_t dim, bool keepdim = false) {           \
    return NAME##_impl(x, reduction_dims{{dim}, keepdim, false});           \
  }                                                                         \
  template <operand X>                                                      \
  auto NAME(const X& x, shape_t dims, bool keepdim = false) {               \
    return NAME##_impl(x, reduction_dims{std::move(dims), keepdim, false}); \
  }

/// Mean over dims.
template <class X>
auto mean_impl(const X& x, const reduction_dims& r) {
  return detail::sum_r(x, r) * (1.0 / detail::reduced_count("mean", r, x));
}
/// @name mean
/// `tw::mean(x)`, `tw::mean(x, dim, keepdim)`, `tw::mean(x, {dims...}, keepdim)`.
/// \code
/// auto x = tw::tensor<double>({2, 3}, {1, 2, 3, 4, 5, 6});
/// if (tw::mean(x).item() != 3.5 || tw::mean(x, 0)(1) != 3.5 || tw::mean(x, 1, true)(1, 0) != 5) throw std::runtime_error("mean");
/// \endcode
/// @{
TOWER_COMPOSITE_REDUCTION(mean)
/// @}

/// log(sum(exp(x))) over dims, computed stably around the maximum m: m + log(sum(exp(x - m))).
/// Where the maximum m is infinite, x - m is taken as 0 where x is m, so that an infinite m gives
/// torch's values (inf for a +inf element, -inf when all are -inf; NaN with a NaN) instead of
/// inf - inf, and the gradient is the softmax of x - m, finite there too (a +inf element takes
/// all of it, all -inf share it). A finite m keeps x - m everywhere: at tied maxima its
/// derivative is not 0, and the second derivatives need it.
template <class X>
auto logsumexp_impl(const X& x, const reduction_dims& r) {
  const reduction_dims kept{r.dims, true, r.all};
  auto m = detail::amax_r(x, kept);
  auto at_infinite_max = eq(x, m) * eq(abs(m), std::numeric_limits<double>::infinity());
  auto s = log(detail::sum_r(exp(where(at_infinite_max, 0.0, x - m)), kept)) + m;
  if constexpr (is_scalar_type_v<X>) {
    return s;
  } else {
    const shape_t xs = shape(x);
    const auto d = r.dims_for("logsumexp", static_cast<std::int64_t>(xs.size()));
    shape_t out;
    for (std::size_t k = 0; k < xs.size(); ++k)
      if (r.keepdim) out.push_back(std::find(d.begin(), d.end(), static_cast<std::int64_t>(k)) != d.end() ? 1 : xs[k]);
      else if (std::find(d.begin(), d.end(), static_cast<std::int64_t>(k)) == d.end()) out.push_back(xs[k]);
    return call_op(reshape_op{out}, s);
  }
}
/// @name logsumexp
/// `tw::logsumexp(x)`, `tw::logsumexp(x, dim, keepdim)`, `tw::logsumexp(x, {dims...}, keepdim)`.
/// \code
/// auto x = tw::tensor<double>({2, 3}, {1, 2, 3, 4, 5, 6});
/// double want = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
/// if (std::abs(tw::logsumexp(x, 1)(0) - want) > 1e-14) throw std::runtime_error("logsumexp");
/// \endcode
/// @{
TOWER_COMPOSITE_REDUCTION(logsumexp)
/// @}

/// Variance over dims with Bessel's `correction` (1: unbiased, torch's default; 0: population).
/// \code
/// auto x = tw::tensor<double>({2, 3}, {1, 2, 3, 4, 5, 6});
/// // 1..6: mean 3.5, squared deviations 17.5; row 0: mean 2, squared deviations 2
/// if (tw::var(x).item() != 3.5 || tw::var(x, 1)(0) != 1.0) throw std::runtime_error("var");
/// if (std::abs(tw::var(x, tw::shape_t{1}, false, 0.0)(0) - 2.0 / 3) > 1e-15) throw std::runtime_error("population var");
/// \endcode
template <operand X>
auto var(const X& x, shape_t dims, bool keepdim = false, double correction = 1.0) {
  const reduction_dims r{std::move(dims), keepdim, false}, kept{r.dims, true, false};
  const double n = detail::reduced_count("var", r, x);
  if (n - correction <= 0)
    throw error("var: " + std::to_string(n) + " elements are too few for correction " + std::to_string(correction));
  auto d = x - mean_impl(x, kept);
  return detail::sum_r(d * d, r) * (1.0 / (n - correction));
}
/// Variance over one dim.
template <operand X>
auto var(const X& x, std::int64_t dim, bool keepdim = false, double correction = 1.0) {
  return var(x, shape_t{dim}, keepdim, correction);
}
/// Unbiased variance of all elements.
template <operand X>
auto var(const X& x) {
  shape_t all(static_cast<std::size_t>(rank(x)));
  std::iota(all.begin(), all.end(), 0);
  return var(x, std::move(all));
}

/// The square root of a sum of squares (the 2-norm's last step), whose derivative at 0 is 0:
/// torch's subgradient of the norm at a zero vector (sqrt's own, 1 / (2 * 0), times the squares'
/// 2 x = 0 would be NaN). Its derivatives stay finite at 0 to every order.
struct norm_sqrt_op {
  static constexpr const char* name = "norm";
  static constexpr bool elementwise = true;
  template <class X>
  auto base(const X& x) const {
    return kernels::map(x, [](auto v) { return std::sqrt(v); });
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(*this, x.value);
  }
  /// 1 / (2 out), and 0 where out is 0.
  template <class O>
  static auto half_reciprocal(const O& out) {
    return ne(out, 0.0) * 0.5 / (out + eq(out, 0.0));
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O& out, const X&) const {
    return std::make_tuple(g * half_reciprocal(out));
  }
  template <class O, class X, class T>
  auto jvp(const O& out, const X&, const T& t) const {
    return t * half_reciprocal(out);
  }
};

/// Vector p-norm over dims (p = 1, 2, or infinity); ord 2 is the default, as torch.linalg.vector_norm.
/// \code
/// auto x = tw::tensor<double>({2, 3}, {1, -2, 3, 4, 5, -6});
/// if (tw::norm(x).item() != std::sqrt(91.0) || tw::norm(x, 1.0).item() != 21) throw std::runtime_error("norm");
/// if (tw::norm(x, INFINITY).item() != 6 || tw::norm(x, 2.0, 1)(0) != std::sqrt(14.0)) throw std::runtime_error("norm dims");
/// \endcode
/// The derivative at a zero vector is 0 for every p, as torch's.
template <operand X>
auto norm(const X& x, double p, shape_t dims, bool keepdim = false) {
  const bool all = dims.empty();
  const reduction_dims r{std::move(dims), keepdim, all};
  auto two = [&] { return call_op(norm_sqrt_op{}, detail::sum_r(x * x, r)); };
  auto one = [&] { return detail::sum_r(abs(x), r) * 1.0; };
  auto inf = [&] { return detail::amax_r(abs(x), r) * 1.0; };
  using R = detail::branch_result_t<decltype(two()), decltype(one()), decltype(inf())>;
  if (p == 2) return detail::as_branch<R>(two());
  if (p == 1) return detail::as_branch<R>(one());
  if (std::isinf(p) && p > 0) return detail::as_branch<R>(inf());
  throw error("norm: p = " + std::to_string(p) + " is not supported (use 1, 2 or infinity)");
}
/// The p-norm of all elements (p = 1, 2 or infinity).
template <operand X>
auto norm(const X& x, double p) {
  return norm(x, p, shape_t{});
}
/// The 2-norm of all elements: the p = 2 branch alone (no branch on p at run time).
template <operand X>
auto norm(const X& x) {
  return call_op(norm_sqrt_op{}, detail::sum_r(x * x, reduction_dims{{}, false, true}));
}
template <operand X>
auto norm(const X& x, double p, std::int64_t dim, bool keepdim = false) {
  return norm(x, p, shape_t{dim}, keepdim);
}

#undef TOWER_COMPOSITE_REDUCTION

}  // namespace tower

// prod's rules use narrow, cat and permute (dsl/products.hpp, which layout.hpp includes last).
#include "dsl/layout.hpp"

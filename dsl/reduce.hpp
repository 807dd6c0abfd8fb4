#pragma once
// Reductions: sum over all or some dims (with keepdim), and the composites built on it.
#include <cstdint>
#include <numeric>
#include <tuple>
#include <vector>

#include "dsl/pointwise.hpp"
#include "dsl/shape_ops.hpp"
#include "tower/op.hpp"

namespace tower {

struct sum_op {
  static constexpr const char* name = "sum";
  std::vector<std::int64_t> dims;  // ignored when all
  bool keepdim = false;
  bool all = true;

  std::vector<std::int64_t> dims_for(std::int64_t rank) const {
    if (!all) return kernels::normalize_dims("sum", dims, rank);
    std::vector<std::int64_t> d(static_cast<std::size_t>(rank));
    std::iota(d.begin(), d.end(), 0);
    return d;
  }

  template <class X> auto base(const X& x) const {
    if constexpr (kernels::is_plain_scalar_v<X>) {
      (void)dims_for(0);
      return x;
    } else {
      return kernels::sum(x, dims_for(x.dim()), keepdim);
    }
  }
  template <class BS, class X> auto batch(BS, const X& x) const {
    auto d = dims_for(logical_rank(x));
    for (auto& k : d) ++k;
    return call_op(sum_op{d, keepdim, false}, x.value);
  }
  template <class G, class O, class X> auto vjp(const G& g, const O&, const X& x) const {
    if constexpr (is_scalar_type_v<X>) {
      return std::make_tuple(g);
    } else {
      const shape_t xs = shape(x);
      shape_t kept = xs;
      for (auto d : dims_for(static_cast<std::int64_t>(xs.size()))) kept[static_cast<std::size_t>(d)] = 1;
      return std::make_tuple(call_op(broadcast_to_op{xs}, call_op(reshape_op{kept}, g)));
    }
  }
  template <class O, class X, class T> auto jvp(const O&, const X&, const T& t) const { return call_op(*this, t); }
};

/// Sum of all elements (a scalar: rank 0).
template <operand X>
auto sum(const X& x) { return call_op(sum_op{}, x); }

/// Sum over `dim` (negative counts from the end); with keepdim the dim stays as size 1.
template <operand X>
auto sum(const X& x, std::int64_t dim, bool keepdim = false) { return call_op(sum_op{{dim}, keepdim, false}, x); }

/// Sum over several dims.
template <operand X>
auto sum(const X& x, std::vector<std::int64_t> dims, bool keepdim = false) {
  return call_op(sum_op{std::move(dims), keepdim, false}, x);
}

template <class G, class X>
auto sum_to_like(const G& g, const X& x) {
  if constexpr (is_scalar_type_v<G>) {
    return g;
  } else {
    const shape_t xs = shape(x), gs = shape(g);
    if (xs == gs) return g;
    if (gs.size() < xs.size())
      throw error("sum_to: cannot reduce shape " + detail::shape_str(gs) + " to " + detail::shape_str(xs));
    const std::size_t lead = gs.size() - xs.size();
    std::vector<std::int64_t> dims;
    for (std::size_t k = 0; k < gs.size(); ++k)
      if (k < lead || (xs[k - lead] == 1 && gs[k] != 1)) dims.push_back(static_cast<std::int64_t>(k));
    return call_op(reshape_op{xs}, call_op(sum_op{dims, false, false}, g));
  }
}

/// Inner product of two 1-D tensors.
template <operand X, operand Y>
auto dot(const X& x, const Y& y) {
  if (rank(x) != 1 || rank(y) != 1 || shape(x) != shape(y))
    throw error("dot: expected two 1-D tensors of the same length, got shapes " + detail::shape_str(shape(x)) +
                " and " + detail::shape_str(shape(y)));
  return sum(x * y);
}

}  // namespace tower

#pragma once
// The products of all elements but one, over a reduction's dims: prod's derivative. Computed
// with products only (no division), so a zero element gives torch's gradient (the product of the
// others there, 0 elsewhere; all 0 with two zeros), and every higher derivative is exact too.
// Included at the end of dsl/layout.hpp: it uses narrow, cat and permute.
#include <cstdint>
#include <numeric>
#include <vector>

#include "dsl/layout.hpp"
#include "dsl/reduce.hpp"
#include "dsl/shape_ops.hpp"

namespace tower::detail {

/// For y of shape [..., m] with m >= 2: e[..., i] = prod over j != i of y[..., j]. A tree of
/// pairs: the pairs' products one level up (an odd element is carried up alone), and on the way
/// down each element of a pair gets its partner times its pair's exclusive product. 2 m products
/// in log2(m) levels. y's products must have y's type (products_of_others sees to it).
template <class Y>
auto exclusive_products_last(const Y& y) {
  shape_t lead = shape(y);
  std::int64_t m = lead.back();
  lead.pop_back();
  auto with = [&](std::initializer_list<std::int64_t> tail) {
    shape_t s = lead;
    s.insert(s.end(), tail);
    return s;
  };
  using T = decltype(call_op(narrow_op{-1, 0, 1}, y));
  struct level {
    T a, b;  // the pairs' elements, [..., h, 1]
    std::int64_t h;
    bool odd;
  };
  std::vector<level> levels;
  T cur = call_op(narrow_op{-1, 0, m}, y);
  while (m > 2) {
    const std::int64_t h = m / 2;
    const bool odd = m % 2 != 0;
    const T pairs = call_op(reshape_op{with({h, 2})}, odd ? T(call_op(narrow_op{-1, 0, 2 * h}, cur)) : cur);
    level l{call_op(narrow_op{-1, 0, 1}, pairs), call_op(narrow_op{-1, 1, 1}, pairs), h, odd};
    T up = call_op(reshape_op{with({h})}, l.a * l.b);
    if (odd) up = call_op(cat_op{-1}, up, call_op(narrow_op{-1, m - 1, 1}, cur));
    levels.push_back(std::move(l));
    cur = std::move(up);
    m = h + (odd ? 1 : 0);
  }
  T e = call_op(cat_op{-1}, call_op(narrow_op{-1, 1, 1}, cur), call_op(narrow_op{-1, 0, 1}, cur));  // m == 2: swapped
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    const T ep = call_op(reshape_op{with({it->h, 1})}, it->odd ? T(call_op(narrow_op{-1, 0, it->h}, e)) : e);
    T down = call_op(reshape_op{with({2 * it->h})}, call_op(cat_op{-1}, ep * it->b, ep * it->a));
    if (it->odd) down = call_op(cat_op{-1}, down, call_op(narrow_op{-1, it->h, 1}, e));
    e = std::move(down);
  }
  return e;
}

/// prod's derivative (declared in reduce.hpp): for each element of x, the product of the other
/// elements of its reduction group, x's shape.
template <class X>
auto products_of_others(const X& x, const reduction_dims& r) {
  auto ones = [&] { return x * 0.0 + 1.0; };  // a group of one element: the empty product
  using R = decltype(ones());
  if constexpr (is_scalar_type_v<X>) {
    return ones();
  } else if constexpr (!std::is_same_v<decltype(x * x), X>) {
    // A product may carry more batch levels than its operands (a tangent batched at fewer levels
    // than its primal gains the primal's): start from x as a product, so that every partial
    // product has one type.
    static_assert(std::is_same_v<decltype(x * x), decltype((x * x) * (x * x))>,
                  "tower: internal: products do not keep one type");
    return products_of_others(x * ones_like(x), r);
  } else {
    const shape_t xs = shape(x);
    const auto rank = static_cast<std::int64_t>(xs.size());
    const shape_t dims = r.dims_for(prod_op::name, rank);
    shape_t perm, moved, lead;  // kept dims first, then the reduced ones
    std::int64_t n = 1;
    for (std::int64_t k = 0; k < rank; ++k)
      if (std::find(dims.begin(), dims.end(), k) == dims.end())
        perm.push_back(k), lead.push_back(xs[static_cast<std::size_t>(k)]);
    for (auto d : dims) perm.push_back(d), n *= xs[static_cast<std::size_t>(d)];
    if (n <= 1) return ones();
    for (auto k : perm) moved.push_back(xs[static_cast<std::size_t>(k)]);
    shape_t inverse(perm.size());
    for (std::size_t k = 0; k < perm.size(); ++k)
      inverse[static_cast<std::size_t>(perm[k])] = static_cast<std::int64_t>(k);
    lead.push_back(n);
    const auto grouped = call_op(reshape_op{lead}, call_op(permute_op{perm}, x));
    return R(call_op(permute_op{inverse}, call_op(reshape_op{moved}, exclusive_products_last(grouped))));
  }
}

}  // namespace tower::detail

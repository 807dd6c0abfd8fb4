#pragma once
// What vjp hands grad in place of a scalar: f's outputs and the cotangents to seed them with.
//
// The VJP of f at x for cotangent c is grad of <c, f(x)>; spelled that way, grad runs a product
// and a sum forward and their VJPs (a broadcast and another product) backward, per cotangent.
// With f returning cotangent_seed{c, y}, grad's tape starts each output's adjoint at its
// cotangent instead, as functorch's vjp_fn does: the same numbers without the four extra ops.
// Outer transforms still see every op that touches c (the backward pass dispatches like any
// op), so the result stays differentiable in c and x.
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tower/core/error.hpp"

namespace tower::detail {

template <class C, class Y>
struct cotangent_seed {
  const C& ct;  // an argument of the grad call, alive until its backward pass ends
  Y out;
};

template <class T>
struct is_cotangent_seed : std::false_type {};
template <class C, class Y>
struct is_cotangent_seed<cotangent_seed<C, Y>> : std::true_type {};
template <class T>
inline constexpr bool is_cotangent_seed_v = is_cotangent_seed<std::remove_cvref_t<T>>::value;

/// A cotangent must have its output's shape exactly (functorch's vjp_fn checks the same).
inline void require_cotangent_shape(const shape_t& c, const shape_t& y) {
  if (c != y) throw error("vjp: the cotangent has shape " + shape_str(c) + " but f's output has shape " + shape_str(y));
}

}  // namespace tower::detail

#pragma once
// Values of the static path. A value's type says which transform levels wrap it:
//
//   batched<P, L>     a value batched by the vmap at level L; P is the physical value one level
//                     down, with the batch in dimension 0 (functorch's BatchedTensor).
//   grad_value<V, L>  a value tracked by the grad at level L; V is its primal one level down
//                     (functorch's TensorWrapper at a grad level).
//   grad_value<V, L, A>  the same with an adjoint of type A, which carries levels V does not
//                     (an unbatched weight's per-example gradient is batched). Spell it
//                     grad_value_t<V, L, A>, which drops A when it is V.
//   dual<P, T, L>     a value with a forward-mode tangent at the jvp level L; P is its primal,
//                     T its tangent (which may carry levels the primal does not, as in jacfwd).
//
// Wrappers nest outer-transform-innermost: inside vmap(grad(f)) a value is
// grad_value<batched<tensor<double>, 1>, 2>. Plain values are double, float and tensor<T>.
// Each wrapper carries the serial of the transform call that made it, so a wrapper that escaped
// its transform is recognised as dead and never touches freed state.
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "tower/tensor/fixed.hpp"
#include "tower/kernels/base.hpp"
#include "tower/kernels/shape.hpp"
#include "tower/tensor/tensor.hpp"
#include "tower/core/transform_type.hpp"

namespace tower {

namespace detail {
template <class V>
struct var_node;
}

namespace dyn {
class value;
}

/// True for the runtime path's value type.
template <class X>
inline constexpr bool is_dyn_v = std::is_same_v<std::remove_cvref_t<X>, dyn::value>;

template <class P, int L>
struct batched {
  static_assert(L > 0, "batched: levels start at 1");
  static constexpr int level = L;
  static constexpr transform_type key = transform_type::vmap;
  using physical_type = P;

  P value;                  // physical value, batch in dim 0 (or last: batch_last)
  std::int64_t batch_size;  // size of the batch dim
  std::uint64_t serial;     // the vmap call that made it
  /// The batch is value's last dim, not its first (value is then a tensor of logical rank >= 1).
  /// JAX's batching rules put the batch dim where it is cheapest; tower's put it first, and this
  /// is the one other place: vmap with in_dims -1 and jacfwd's basis start there, elementwise
  /// ops and matmul by an unbatched matrix keep it there, and out_dims -1 takes it as it is, so
  /// jacfwd of tanh(A x) transposes nothing. Every other op sees the batch first
  /// (detail::batch_first, which the vmap interpreter applies before a batching rule).
  bool batch_last = false;
};

template <class V, int L, class... A>
struct grad_value {
  static_assert(L > 0, "grad_value: levels start at 1");
  static_assert(sizeof...(A) <= 1, "grad_value: one adjoint type at most");
  static constexpr int level = L;
  static constexpr transform_type key = transform_type::grad;
  using primal_type = V;
  using adjoint_type = std::tuple_element_t<0, std::tuple<A..., V>>;

  V primal;
  detail::var_node<adjoint_type>* node = nullptr;  // null: a constant at this level
  std::uint64_t serial = 0;                        // the grad call that made it
};

/// grad_value<V, L>, or grad_value<V, L, A> when the adjoint type A is not V.
template <class V, int L, class A>
using grad_value_t = std::conditional_t<std::is_same_v<V, A>, grad_value<V, L>, grad_value<V, L, A>>;

template <class P, class T, int L>
struct dual {
  static_assert(L > 0, "dual: levels start at 1");
  static constexpr int level = L;
  static constexpr transform_type key = transform_type::jvp;
  using primal_type = P;
  using tangent_type = T;

  P primal;
  T tangent;
  std::uint64_t serial = 0;  // the jvp call that made it
};

template <class X>
struct is_static_wrapper : std::false_type {};
template <class P, class T, int L>
struct is_static_wrapper<dual<P, T, L>> : std::true_type {};
template <class P, int L>
struct is_static_wrapper<batched<P, L>> : std::true_type {};
template <class V, int L, class... A>
struct is_static_wrapper<grad_value<V, L, A...>> : std::true_type {};
template <class X>
inline constexpr bool is_static_wrapper_v = is_static_wrapper<std::remove_cvref_t<X>>::value;

/// Level of the outermost wrapper of X (0 for plain values).
template <class X>
constexpr int level_of() {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_static_wrapper_v<D>) return D::level;
  else return 0;
}

/// True when X's outermost wrapper is vmap's (resp. grad's) at level L.
template <class X, int L>
inline constexpr bool is_batched_at_v = false;
template <class P, int L>
inline constexpr bool is_batched_at_v<batched<P, L>, L> = true;
template <class X, int L>
inline constexpr bool is_grad_at_v = false;
template <class V, int L, class... A>
inline constexpr bool is_grad_at_v<grad_value<V, L, A...>, L> = true;
template <class X, int L>
inline constexpr bool is_dual_at_v = false;
template <class P, class T, int L>
inline constexpr bool is_dual_at_v<dual<P, T, L>, L> = true;

/// The type of X's adjoint at its own grad level: X itself unless X is a grad value.
template <class X>
struct adjoint_of {
  using type = X;
};
template <class V, int L, class... A>
struct adjoint_of<grad_value<V, L, A...>> {
  using type = typename grad_value<V, L, A...>::adjoint_type;
};
template <class X>
using adjoint_type_of = typename adjoint_of<std::remove_cvref_t<X>>::type;

/// The innermost plain type of a static value (double, float or tensor<T>).
template <class X>
struct base_type {
  using type = std::remove_cvref_t<X>;
};
template <class P, int L>
struct base_type<batched<P, L>> : base_type<P> {};
template <class V, int L, class... A>
struct base_type<grad_value<V, L, A...>> : base_type<V> {};
template <class P, class T, int L>
struct base_type<dual<P, T, L>> : base_type<P> {};
template <class X>
using base_type_t = typename base_type<std::remove_cvref_t<X>>::type;

namespace detail {
template <class X>
struct element_type_of {
  using type = kernels::element_t<X>;
};
template <class X>
  requires requires { typename X::scalar_type; }
struct element_type_of<X> {  // a value of several elements that is not a fixed (elementwise_jet)
  using type = typename X::scalar_type;
};
}  // namespace detail

/// Element type (double or float) of any static value, also of a tw::fixed of grad's tape-free
/// numbers (scalar_dual) and of the jets vmap's per-example forms hand f.
template <class X>
using scalar_type_t = typename detail::element_type_of<base_type_t<detail::fixeds::scalar_t<base_type_t<X>>>>::type;

/// True when X is, at every level, a bare scalar (no tensor and no batch anywhere inside).
template <class X>
inline constexpr bool is_scalar_type_v = kernels::is_plain_scalar_v<base_type_t<X>>;

namespace detail {
/// The value type one level down: a batched value's physical, a grad value's primal.
template <class X>
struct inner_type {
  using type = X;
};
template <class P, int L>
struct inner_type<batched<P, L>> {
  using type = P;
};
template <class V, int L, class... A>
struct inner_type<grad_value<V, L, A...>> {
  using type = V;
};
template <class P, class T, int L>
struct inner_type<dual<P, T, L>> {
  using type = P;
};

/// X with a tensor base (the physical value of a batched value is always a tensor).
template <class X>
struct tensorize {
  using type = tensor<kernels::element_t<X>>;
};
template <class T>
struct tensorize<tensor<T>> {
  using type = tensor<T>;
};
template <class P, int L>
struct tensorize<batched<P, L>> {
  using type = batched<P, L>;
};
template <class V, int L, class... A>
struct tensorize<grad_value<V, L, A...>> {
  using type = grad_value_t<typename tensorize<V>::type, L,
                            typename tensorize<typename grad_value<V, L, A...>::adjoint_type>::type>;
};
template <class P, class T, int L>
struct tensorize<dual<P, T, L>> {
  using type = dual<typename tensorize<P>::type, typename tensorize<T>::type, L>;
};

template <class Outer, class J>
struct rewrap;
template <class P, int L, class J>
struct rewrap<batched<P, L>, J> {
  using type = batched<typename tensorize<J>::type, L>;
};
template <class V, int L, class... A, class J>
struct rewrap<grad_value<V, L, A...>, J> {
  using type = grad_value<J, L>;
};
// A value lifted into a jvp level is a constant there: its tangent has the primal's type.
template <class P, class T, int L, class J>
struct rewrap<dual<P, T, L>, J> {
  using type = dual<J, J, L>;
};

template <class X, class J>
constexpr auto rewrap_own();

/// X with every wrapper layer of Y added (Y's base kind is ignored).
template <class X, class Y>
constexpr auto lift_levels() {
  constexpr int lx = level_of<X>(), ly = level_of<Y>();
  if constexpr (ly == 0) {
    return std::type_identity<X>{};
  } else if constexpr (ly > lx) {
    using J = typename decltype(lift_levels<X, typename inner_type<Y>::type>())::type;
    if constexpr (Y::key == transform_type::jvp) {
      // A constant at Y's jvp level; its tangent (an adjoint's, or the sum it joins) may carry
      // the levels Y's tangent carries (jacfwd's basis batched by an enclosing vmap).
      using JT =
          typename decltype(lift_levels<J, typename decltype(lift_levels<typename Y::tangent_type,
                                                                         typename Y::primal_type>())::type>())::type;
      return std::type_identity<dual<J, JT, ly>>{};
    } else if constexpr (Y::key == transform_type::grad) {
      // Likewise a constant at Y's grad level whose adjoint may carry the levels Y's does.
      using A = typename decltype(lift_levels<J, typename Y::adjoint_type>())::type;
      return std::type_identity<grad_value_t<J, ly, A>>{};
    } else {
      return std::type_identity<typename rewrap<Y, J>::type>{};
    }
  } else if constexpr (lx > ly) {
    using J = typename decltype(lift_levels<typename inner_type<X>::type, Y>())::type;
    if constexpr (X::key == transform_type::jvp) {
      // A tangent depends on its primal's levels too, so it carries them.
      using TP = typename decltype(lift_levels<typename X::tangent_type, typename X::primal_type>())::type;
      using JT = typename decltype(lift_levels<TP, Y>())::type;
      return std::type_identity<dual<J, JT, lx>>{};
    } else {
      return rewrap_own<X, J>();
    }
  } else {
    using J = typename decltype(lift_levels<typename inner_type<X>::type, typename inner_type<Y>::type>())::type;
    if constexpr (X::key == transform_type::jvp) {
      using TP = typename decltype(lift_levels<typename X::tangent_type, typename X::primal_type>())::type;
      using JT =
          typename decltype(lift_levels<TP, typename decltype(lift_levels<typename Y::tangent_type,
                                                                          typename Y::primal_type>())::type>())::type;
      return std::type_identity<dual<J, JT, lx>>{};
    } else {
      return rewrap_own<X, J>();
    }
  }
}

/// X's own wrapper around J: a grad value's adjoint keeps the levels it carried and gains J's.
template <class X, class J>
constexpr auto rewrap_own() {
  if constexpr (X::key == transform_type::grad) {
    using A = typename decltype(lift_levels<typename X::adjoint_type, J>())::type;
    return std::type_identity<grad_value_t<J, X::level, A>>{};
  } else {
    return std::type_identity<typename rewrap<X, J>::type>{};
  }
}
}  // namespace detail

/// X lifted to carry every level any of Ys carries: the type grad gives a differentiated
/// argument, so that every tracked value in the computation carries all levels in play.
template <class X, class... Ys>
struct lift_levels_of {
  using type = X;
};
template <class X, class Y, class... Ys>
struct lift_levels_of<X, Y, Ys...>
    : lift_levels_of<typename decltype(detail::lift_levels<X, std::remove_cvref_t<Y>>())::type, Ys...> {};
template <class X, class... Ys>
using lift_levels_t = typename lift_levels_of<std::remove_cvref_t<X>, Ys...>::type;

/// Logical shape: what the function being transformed sees.
template <class X>
shape_t shape(const X& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_dyn_v<D>) {
    return x.shape();
  } else if constexpr (is_fixed_v<D>) {
    return fixed_shape<D>();
  } else if constexpr (is_elementwise_jet_v<D>) {
    return shape_t{D::size};
  } else if constexpr (is_jet2_v<D>) {
    return shape_t{};
  } else if constexpr (kernels::is_plain_v<D>) {
    return kernels::shape_of(x);
  } else if constexpr (!requires { D::key; }) {
    return shape_t{};  // a number of grad's tape-free path (scalar_dual.hpp): an element of a fixed
  } else if constexpr (D::key == transform_type::vmap) {
    shape_t s = shape(x.value);
    s.erase(x.batch_last ? s.end() - 1 : s.begin());
    return s;
  } else {
    return shape(x.primal);
  }
}

namespace detail {
/// x with its batch in dim 0: x itself, or a batch_last value's physical value with its last
/// dim moved first (a transpose).
template <class P, int L>
batched<P, L> batch_first(const batched<P, L>& x) {
  if constexpr (is_tensor_v<P>) {
    if (x.batch_last) {
      const auto r = static_cast<std::size_t>(x.value.dim());
      shape_t perm(r);
      perm[0] = static_cast<std::int64_t>(r) - 1;
      for (std::size_t k = 1; k < r; ++k) perm[k] = static_cast<std::int64_t>(k) - 1;
      return {kernels::permute(x.value, std::move(perm)), x.batch_size, x.serial};
    }
  }
  return x;
}
}  // namespace detail

template <class X>
std::int64_t rank(const X& x) {
  if constexpr (kernels::is_plain_scalar_v<X>) return 0;
  else if constexpr (is_dyn_v<X>) return x.rank();  // without building the shape
  else if constexpr (is_fixed_v<X>) return detail::fixeds::rank<X>();
  else return static_cast<std::int64_t>(shape(x).size());
}

}  // namespace tower

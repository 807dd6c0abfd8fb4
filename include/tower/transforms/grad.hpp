#pragma once
// grad(f, argnums, has_aux) and grad_and_value: reverse-mode gradients of a scalar function.
//
//   auto f = [](auto x) { return tw::sin(x) * x; };
//   double d = tw::grad(f)(2.0);                        // cos(2)*2 + sin(2)
//   auto [gx, gz] = tw::grad(g, tw::argnums<0, 2>)(x, y, z);
//
// With one argnum the gradient has the argument's own type; with several, a std::tuple of them.
// grad runs f with grad mode on, and remembers the mode in force outside (prev_grad_mode): when
// it was off, levels below do not record this grad's work (functorch's GradInterpreter.lower).
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "dsl/shape_ops.hpp"
#include "tower/core/force_inline.hpp"
#include "tower/transforms/runtime/bridge.hpp"
#include "tower/core/cotangent_seed.hpp"
#include "tower/static/diagnostics.hpp"
#include "tower/core/grad_mode.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/static/tape.hpp"
#include "tower/static/pytree.hpp"
#include "tower/static/values.hpp"
#include "tower/core/transform_options.hpp"
#include "tower/core/runtime_function.hpp"
#include "tower/transforms/runtime/transforms.hpp"
#include "tower/transforms/static/jacobian_rows.hpp"
#include "tower/transforms/static/level.hpp"

namespace tower {

namespace detail {

template <int N, int... I>
constexpr bool contains_index() {
  return ((I == N) || ...);
}
template <int N, int... I>
constexpr std::size_t index_of() {
  std::size_t k = 0, r = 0;
  ((I == N ? (r = k, ++k) : ++k), ...);
  return r;
}
/// The J-th of I.
template <std::size_t J, int... I>
constexpr int nth() {
  constexpr int i[] = {I...};
  return i[J];
}
/// The first of I (0 when there is none: grad's checks report an empty argnums).
template <int... I>
constexpr int first_of() {
  int r = 0;
  static_cast<void>(((r = I, true) || ...));
  return r;
}

/// Whether a transform's arguments are a tape-free transform's numbers (scalar_duals, or tw::fixed
/// of them): it runs inside one, or inside vmap's probe of one, which declines when it cannot.
template <class... A>
constexpr bool inside_tape_free() {
  return (is_scalar_dual_v<fixeds::scalar_t<A>> || ...);
}

/// An argnums index counted from the end (-1: the last argument) as an index from the front;
/// out-of-range indices stay as they are for the check to report.
template <int I, std::size_t N>
constexpr int normalized_argnum() {
  return I < 0 && I >= -static_cast<int>(N) ? I + static_cast<int>(N) : I;
}

/// A pytree at level L seen one level down (each leaf's primal).
template <int L, class X>
auto unwrap_level(const X& x) {
  return tree_map(
      [](const auto& leaf) {
        if constexpr (is_dyn_v<decltype(leaf)>) return leaf.level() == L ? leaf.get().inner : leaf;
        else if constexpr (level_of<decltype(leaf)>() == L) return leaf.primal;
        else return leaf;
      },
      x);
}

/// Starts the backward pass of the grad call at level L (tape serial) from cotangents: each
/// output y of f on that tape gets c as its adjoint (vjp's cotangent_seed). f's outputs form a
/// pytree (pytree.hpp) and the cotangents one of the same structure (vjp checked it). Outputs
/// that do not depend on the differentiated arguments get nothing; shapes must match exactly.
template <int L, class C, class Y>
void seed_cotangents(const C& c, const Y& y, std::uint64_t serial) {
  static_assert(same_structure<C, Y>(), "tower: internal: vjp checks the cotangent's structure");
  (void)tree_zip_named(
      "vjp: the cotangent and f's output",
      [&](const auto& cl, const auto& yl) {
        require_cotangent_shape(shape(cl), shape(yl));
        using Yl = std::remove_cvref_t<decltype(yl)>;
        if constexpr (level_of<Yl>() == L)
          if (yl.node && yl.serial == serial) yl.node->accumulate(cl);
        return 0;
      },
      c, y);
}

}  // namespace detail

template <class F, class Argnums, bool HasAux, bool WithValue, int Floor = 0>
struct grad_transform;

template <class F, int... I, bool HasAux, bool WithValue, int Floor>
struct grad_transform<F, argnums_t<I...>, HasAux, WithValue, Floor> {
  F f;
  using wrapped_function = F;  // holds f and nothing else (detail::may_capture_values)

  template <class... A>
  auto operator()(const A&... a) const {
    if constexpr ((is_dual_unsupported_v<A> || ...)) {
      return dual_unsupported{};  // inside a probe of a tape-free form, which declines
    } else if constexpr (((I < 0) || ...)) {
      // Negative argnums count from the end, as in torch.func.
      return grad_transform<F, argnums_t<detail::normalized_argnum<I, sizeof...(A)>()...>, HasAux, WithValue, Floor>{f}(
          a...);
    } else if constexpr ((is_scalar_dual_v<A> || ...) || (is_fixed_v<A> || ...)) {
      // tw::fixed arguments, or nested in a tape-free grad (vmap's fused form on numbers): forward
      // mode (forward over forward when nested).
      if constexpr (forward_ok<A...>()) {
        return forward(a...);
      } else if constexpr (detail::inside_tape_free<A...>()) {
        return dual_unsupported{};  // the enclosing tape-free transform (or vmap's probe of it) declines
      } else {
        static_assert(forward_ok<A...>(),
                      "grad: with tw::fixed arguments or inside vmap's fused form on numbers, f must be a function of "
                      "numbers and "
                      "tw::fixed values (at most 32 differentiated numbers in all) that returns a number");
        return diagnostics::failed{};
      }
    } else if constexpr (!decltype(diagnostics::check_grad_args<name, argnums_t<I...>, A...>())::value) {
      return diagnostics::failed{};  // bad arguments, reported before f is traced on them
    } else if constexpr (diagnostics::traced_result_unsupported<F, traced_t<A...>>()) {
      return dual_unsupported{};  // in vmap's probe of a tape-free form, which declines
    } else if constexpr (!decltype(check<A...>())::value) {
      return diagnostics::failed{};  // a static check failed and reported it (docs/diagnostics.md)
    } else if constexpr (is_runtime_function_v<F> || (is_dyn_v<A> || ...)) {
      return run_runtime(a...);
    } else if constexpr (runs_forward<A...>()) {
      // A function of numbers that holds no values: forward mode without a tape, as hand-written
      // code. (One that holds values may hold an enclosing tape-free grad's number, whose type is
      // the one this grad would seed: forward mode would confuse the two, so it takes the tape.)
      return forward(a...);
    } else {
      constexpr int L = pytree_level<A...>() + 1;
      return detail::run_at_level<L, Floor, detail::may_capture_values<F>()>(
          "grad", [&](auto level) { return run<decltype(level)::value>(a...); });
    }
  }

  /// Whether grad of these plain numbers runs forward mode: f holds no values and runs on them
  /// (nested, so that forward_ok is asked only for plain, non-volatile numbers).
  template <class... A>
  static constexpr bool runs_forward() {
    if constexpr (!((std::is_arithmetic_v<A> && !std::is_volatile_v<A>) && ...) || detail::may_capture_values<F>())
      return false;
    else return forward_ok<A...>();
  }

  static constexpr bool forward_path = true;  // forward_ok, forward_body (vmap's fused forms)
  /// Whether `forward` can differentiate f at these argument types: every argument a number, a
  /// scalar_dual (in a nested tape-free grad) or a tw::fixed of them; the differentiated ones of
  /// one floating type (or scalar_dual) with at most 32 elements in all; f's value and aux numbers
  /// or scalar_duals, never dual_unsupported (an op that mixed in a tensor or a transform's value,
  /// or has no rule for fixed values). Instantiates f with scalar_duals.
  template <class... A>
  static constexpr bool forward_ok() {
    if constexpr (is_runtime_function_v<F> || sizeof...(I) == 0 || !(forward_arg_ok<A>() && ...) ||
                  !((I >= 0 && I < static_cast<int>(sizeof...(A))) && ...)) {
      return false;
    } else if constexpr (directions<A...>() > 32) {
      return false;
    } else {
      using X = forward_input_t<A...>;
      if constexpr (!(std::is_floating_point_v<X> || is_scalar_dual_v<X>) ||
                    !(seeds_as<X, detail::fixeds::scalar_t<arg_t<static_cast<std::size_t>(I), A...>>> && ...)) {
        return false;
      } else {
        using R = typename decltype([]<std::size_t... K>(std::index_sequence<K...>) {
          return std::type_identity<
              std::invoke_result_t<const F&, decltype(forward_arg<K, A...>(std::declval<const A&>()))...>>{};
        }(std::index_sequence_for<A...>{}))::type;
        using D = scalar_dual<X, directions<A...>(), shares_tangents<X, directions<A...>()>>;
        if constexpr (!HasAux) {
          return forward_result_ok<R, X, D>();
        } else if constexpr (!requires { typename std::tuple_size<R>::type; }) {
          return false;
        } else if constexpr (std::tuple_size_v<R> != 2) {
          return false;
        } else {
          return forward_result_ok<std::remove_cvref_t<std::tuple_element_t<0, R>>, X, D>() &&
                 !detail::duals::contains_unsupported<std::remove_cvref_t<std::tuple_element_t<1, R>>>();
        }
      }
    }
  }

  /// grad without a tape (scalar_dual.hpp): one pass of f with a direction per differentiated
  /// number (per element of a differentiated tw::fixed). Same numbers and result types as the
  /// taped path; needs forward_ok<A...>().
  template <class... A>
  auto forward(const A&... a) const {
    const bool prev = is_grad_enabled();
    enable_grad on;
    return forward_body(prev, a...);
  }

  /// forward without setting grad mode (the caller runs it with grad mode on; `prev` is the mode
  /// outside). vmap's fused form calls this in its loop over examples. `flatten` inlines f and
  /// every op into it: straight-line code is the point of this path.
  template <class... A>
  [[gnu::flatten]] inline auto forward_body(bool prev, const A&... a) const {
    using X = forward_input_t<A...>;
    using D = scalar_dual<X, directions<A...>(), shares_tangents<X, directions<A...>()>>;
    namespace du = detail::duals;
    auto result = [&]<std::size_t... K>(std::index_sequence<K...>)
                      TOWER_INLINE_LAMBDA { return f(forward_arg<K, A...>(a)...); }(std::index_sequence_for<A...>{});
    const auto& value = [&]() TOWER_INLINE_LAMBDA -> decltype(auto) {
      if constexpr (HasAux) return std::get<0>(result);
      else return (result);
    }();
    using V = std::remove_cvref_t<decltype(value)>;
    // Grad mode off outside a nested tape-free grad: its work is a constant at the levels below.
    auto outside = [&](const X& x) TOWER_INLINE_LAMBDA -> X {
      if constexpr (is_scalar_dual_v<X>) return prev ? x : du::lift<X>(du::base_value(x));
      else return x;
    };
    auto direction = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) TOWER_INLINE_LAMBDA -> X {
      if constexpr (!std::is_same_v<V, D>) return du::lift<X>(0.0);
      else if constexpr (std::is_arithmetic_v<X>)
        return du::tangent<K>(value) + X(0);  // a structural zero is -0.0: +0.0 as the tape gives
      else return outside(du::tangent<K>(value));
    };
    // The gradient of the J-th differentiated argument: its directions, shaped like it.
    auto grad_of = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) TOWER_INLINE_LAMBDA {
      using Arg = arg_t<static_cast<std::size_t>(detail::nth<J, I...>()), A...>;
      constexpr std::size_t first = offset<J, A...>();
      if constexpr (is_fixed_v<Arg>)
        return detail::fixeds::generate<Arg>([&](auto k) TOWER_INLINE_LAMBDA {
          return direction(std::integral_constant<std::size_t, first + decltype(k)::value>{});
        });
      else return direction(std::integral_constant<std::size_t, first>{});
    };
    auto grads = [&]<std::size_t... J>(std::index_sequence<J...>) TOWER_INLINE_LAMBDA {
      if constexpr (sizeof...(J) == 1) return grad_of(std::integral_constant<std::size_t, 0>{});
      else return std::make_tuple(grad_of(std::integral_constant<std::size_t, J>{})...);
    }(std::make_index_sequence<sizeof...(I)>{});
    auto primal = [&] {
      if constexpr (std::is_same_v<V, D>) return outside(value.v);
      else return value;
    };
    auto aux = [&](const auto& r) TOWER_INLINE_LAMBDA {
      return tree_map(
          [](const auto& leaf) TOWER_INLINE_LAMBDA {
            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(leaf)>, D>) return leaf.v;
            else return leaf;
          },
          std::get<1>(r));
    };
    if constexpr (WithValue && HasAux) return std::make_tuple(std::move(grads), primal(), aux(result));
    else if constexpr (WithValue) return std::make_tuple(std::move(grads), primal());
    else if constexpr (HasAux) return std::make_tuple(std::move(grads), aux(result));
    else return grads;
  }

  /// The Jacobian in argument K of the gradient (a Hessian), when f runs on jets
  /// (jacobian_rows.hpp: the outer transform of jacfwd(grad(f)) asks).
  template <int K, class... A>
  static constexpr bool jacobian_rows_ok() {
    if constexpr (HasAux || WithValue || sizeof...(I) != 1 || ((I != K) || ...)) return false;
    else return detail::rows_on_jets<F, K>::template ok<A...>();
  }
  template <int K, class... A>
  TOWER_ALWAYS_INLINE auto jacobian_rows(const A&... a) const {
    return detail::rows_on_jets<F, K>::run(f, a...);
  }

 private:
  template <std::size_t K, class... A>
  using arg_t = std::remove_cvref_t<std::tuple_element_t<K, std::tuple<A...>>>;

  /// An argument the tape-free path takes: a number, a scalar_dual, or a tw::fixed of them.
  template <class A>
  static constexpr bool forward_arg_ok() {
    using S = detail::fixeds::scalar_t<A>;
    return std::is_arithmetic_v<S> || is_scalar_dual_v<S>;
  }

  /// The type of the differentiated numbers on the tape-free path (duals::seed_number_t).
  template <class... A>
  using forward_input_t = detail::duals::seed_number_t<
      detail::fixeds::scalar_t<arg_t<static_cast<std::size_t>(detail::first_of<I...>()), A...>>,
      detail::fixeds::scalar_t<A>...>;
  /// Whether the differentiated numbers S are seeded as X: X itself, or a number lifted to X.
  template <class X, class S>
  static constexpr bool seeds_as = std::is_same_v<X, S> || (is_scalar_dual_v<X> && std::is_arithmetic_v<S>);

  /// Whether the tape-free path's duals share equal stored tangents (scalar_dual.hpp): on plain
  /// numbers with two directions or more (with one there is nothing to save). Not inside another
  /// tape-free transform (X a scalar_dual), where the test seldom folds.
  template <class X, int N>
  static constexpr bool shares_tangents = std::is_arithmetic_v<X> && N >= 2;

  /// Directions of the tape-free path: one per differentiated number or element of a fixed.
  template <class... A>
  static constexpr int directions() {
    return (0 + ... + static_cast<int>(detail::fixeds::numel<arg_t<static_cast<std::size_t>(I), A...>>()));
  }
  /// The first direction of the J-th differentiated argument.
  template <std::size_t J, class... A>
  static constexpr std::size_t offset() {
    constexpr std::array<std::int64_t, sizeof...(A)> width{detail::fixeds::numel<A>()...};
    constexpr std::array<int, sizeof...(I)> index{I...};
    std::size_t o = 0;
    for (std::size_t k = 0; k < J; ++k) o += static_cast<std::size_t>(width[static_cast<std::size_t>(index[k])]);
    return o;
  }

  /// Argument K of f on the tape-free path: scalar_duals with a unit tangent each in their own
  /// direction if K is differentiated (a tw::fixed gets one per element), else the argument.
  template <std::size_t K, class... A>
  static decltype(auto) forward_arg(const arg_t<K, A...>& x) {
    if constexpr (detail::contains_index<static_cast<int>(K), I...>()) {
      namespace du = detail::duals;
      using X = forward_input_t<A...>;
      constexpr int n = directions<A...>();
      constexpr std::size_t first = offset<detail::index_of<static_cast<int>(K), I...>(), A...>();
      auto seed = [&]<std::size_t Own>(const auto& v, std::integral_constant<std::size_t, Own>) {
        return du::seed<X, n, Own, shares_tangents<X, n>>(du::lift<X>(v));
      };
      if constexpr (is_fixed_v<arg_t<K, A...>>)
        return detail::fixeds::generate<arg_t<K, A...>>([&](auto k) {
          return seed(detail::fixeds::flat<decltype(k)::value>(x),
                      std::integral_constant<std::size_t, first + decltype(k)::value>{});
        });
      else return seed(x, std::integral_constant<std::size_t, first>{});
    } else {
      return (x);
    }
  }

  template <class V, class X, class D>
  static constexpr bool forward_result_ok() {
    return std::is_same_v<V, D> || std::is_arithmetic_v<V> || std::is_same_v<V, X>;
  }

  static constexpr diagnostic name = WithValue ? diagnostic("grad_and_value") : diagnostic("grad");

  /// The static checks, before anything else is instantiated: std::true_type, or std::false_type
  /// after reporting the first failure as the compiler's first error line.
  template <class... A>
  static constexpr auto check() {
    if constexpr (!decltype(diagnostics::check_grad_args<name, argnums_t<I...>, A...>())::value)
      return std::false_type{};
    else if constexpr (!decltype(diagnostics::check_callable<name, F, traced_t<A...>, A...>())::value)
      return std::false_type{};
    else return diagnostics::check_grad_result<name, HasAux, diagnostics::traced_result_t<F, traced_t<A...>>>();
  }

  /// The argument types f is called with: std::tuple of exact reference types.
  template <class... A>
  static auto traced() {
    if constexpr (is_runtime_function_v<F> || (is_dyn_v<A> || ...)) {
      return std::type_identity<std::tuple<const std::conditional_t<true, dyn::value, A>&...>>{};
    } else {
      constexpr int L = pytree_level<A...>() + 1;
      return []<std::size_t... K>(std::index_sequence<K...>) {
        return std::type_identity<std::tuple<decltype(wrap<L, K, A, A...>(
            std::declval<const A&>(), std::declval<detail::grad_tape&>(), 0))&...>>{};
      }(std::index_sequence_for<A...>{});
    }
  }
  template <class... A>
  using traced_t = typename decltype(traced<A...>())::type;

  template <class... A>
  auto run_runtime(const A&... a) const {
    constexpr std::size_t N = sizeof...(A);
    auto call = [&](const std::array<dyn::value, N>& w) { return std::apply(f, w); };
    auto r = dyn::run_grad<HasAux>(call, {I...}, std::array<dyn::value, N>{runtime::detail::to_value(a)...});
    auto grads = [&] {
      if constexpr (sizeof...(I) == 1) return r.grads[0];
      else
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
          return std::make_tuple(r.grads[K]...);
        }(std::make_index_sequence<sizeof...(I)>{});
    }();
    if constexpr (WithValue && HasAux) return std::make_tuple(std::move(grads), r.val, r.aux);
    else if constexpr (WithValue) return std::make_tuple(std::move(grads), r.val);
    else if constexpr (HasAux) return std::make_tuple(std::move(grads), r.aux);
    else return grads;
  }

  template <int L, std::size_t K, class X, class... A>
  static auto wrap(const X& x, detail::grad_tape& tape, std::uint64_t serial) {
    if constexpr (detail::contains_index<static_cast<int>(K), I...>()) {
      return tree_map(
          [&](const auto& leaf) {
            using Leaf = std::remove_cvref_t<decltype(leaf)>;
            static_assert(!std::is_integral_v<Leaf>,
                          "grad: cannot differentiate with respect to an integer or bool leaf");
            // The leaf's adjoint carries every level in play (its gradient may differ per example
            // even where the leaf does not); the leaf itself is not copied to those levels.
            using J = lift_levels_over_t<Leaf, A...>;
            return grad_value_t<Leaf, L, J>{leaf, tape.make<detail::var_node<J>>(), serial};
          },
          x);
    } else {
      return x;
    }
  }

  /// The levels below L that f's value carries and its arguments do not (f captured a value of a
  /// live transform, which the arguments do not show), as the type of that value one level down;
  /// std::tuple<> when there are none. Each differentiated leaf's adjoint carries them too, since
  /// its gradient may depend on the captured value (d/dy (x·y) = x, tracked by x's grad).
  template <int L, class... A>
  static auto captured() {
    using R = typename decltype([]<std::size_t... K>(std::index_sequence<K...>) {
      return std::type_identity<decltype(std::apply(
          std::declval<const F&>(),
          std::make_tuple(wrap<L, K, A, A...>(std::declval<const A&>(), std::declval<detail::grad_tape&>(), 0)...)))>{};
    }(std::index_sequence_for<A...>{}))::type;
    using V = typename decltype([] {
      if constexpr (HasAux) return std::type_identity<std::remove_cvref_t<std::tuple_element_t<0, R>>>{};
      else if constexpr (detail::is_cotangent_seed_v<R>) return std::type_identity<decltype(R::out)>{};
      else return std::type_identity<R>{};
    }())::type;
    using Below = decltype(detail::unwrap_level<L>(std::declval<const V&>()));
    if constexpr (carries_levels_beyond<Below, A...>(1, L)) return std::type_identity<Below>{};
    else return std::type_identity<std::tuple<>>{};
  }

  template <int L, class... A>
  auto run(const A&... a) const {
    detail::grad_tape tape;
    const bool prev = is_grad_enabled();
    interpreter_scope scope(transform_type::grad, L);
    scope.entry().state = &tape;
    scope.entry().prev_grad_mode = prev;
    const std::uint64_t serial = scope.entry().serial;
    detail::no_grad_below_guard below(scope.entry());
    enable_grad on;
    detail::bridge_scope bridged(serial);

    using Extra = typename decltype(captured<L, A...>())::type;
    auto args = [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::make_tuple(wrap<L, K, A, A..., Extra>(a, tape, serial)...);
    }(std::index_sequence_for<A...>{});
    auto result = std::apply(f, args);

    auto split = [&]() -> decltype(auto) {
      if constexpr (HasAux) {
        return std::get<0>(result);
      } else {
        return (result);
      }
    };
    const auto& value = split();
    using V = std::remove_cvref_t<decltype(value)>;
    if constexpr (detail::is_cotangent_seed_v<V>) {
      // vjp: each output's adjoint starts at its cotangent (cotangent_seed.hpp).
      static_assert(!HasAux && !WithValue, "tower: internal: a cotangent_seed is vjp's, without aux or value");
      detail::seed_cotangents<L>(value.ct, value.out, serial);
      tape.backward();
    } else {
      if (const shape_t s = shape(value); !s.empty())
        throw error("grad: f must return a scalar, it returned a value of shape " + detail::shape_str(s));
      if constexpr (is_dyn_v<V>) {
        // f handed its values to runtime code (bridge.hpp): sweep the runtime graph back to the
        // bridges, then the static tape.
        if (value.level() == L && value.get().serial == serial && value.get().node) {
          detail::bridge_backward(value, serial);
          tape.backward();
        }
      } else if constexpr (level_of<V>() == L) {
        if (value.node && value.serial == serial) {
          value.node->accumulate(ones_like(value.primal));
          tape.backward();
        }
      }
    }

    auto gradient = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      return tree_zip(
          [](const auto& wrapped, const auto& original) {
            using X = typename std::remove_cvref_t<decltype(wrapped)>::adjoint_type;
            auto* leaf = wrapped.node;
            X g = leaf->adjoint ? std::move(*leaf->adjoint) : detail::convert_adjoint<X>(zeros_like(original));
            return g;
          },
          std::get<K>(args), std::get<K>(std::tie(a...)));
    };
    auto grads = [&] {
      if constexpr (sizeof...(I) == 1)
        return gradient(std::integral_constant<std::size_t, static_cast<std::size_t>(I)>{}...);
      else return std::make_tuple(gradient(std::integral_constant<std::size_t, static_cast<std::size_t>(I)>{})...);
    }();

    if constexpr (WithValue && HasAux)
      return std::make_tuple(std::move(grads), detail::unwrap_level<L>(value),
                             detail::unwrap_level<L>(std::get<1>(result)));
    else if constexpr (WithValue) return std::make_tuple(std::move(grads), detail::unwrap_level<L>(value));
    else if constexpr (HasAux) return std::make_tuple(std::move(grads), detail::unwrap_level<L>(std::get<1>(result)));
    else return grads;
  }
};

template <class F, class A, bool H, bool W, int Fl>
struct is_runtime_function<grad_transform<F, A, H, W, Fl>> : is_runtime_function<F> {};

namespace detail {
template <class... Opt>
struct find_argnums {
  using type = argnums_t<0>;
};
template <int... I, class... Rest>
struct find_argnums<argnums_t<I...>, Rest...> {
  using type = argnums_t<I...>;
};
template <class First, class... Rest>
struct find_argnums<First, Rest...> : find_argnums<Rest...> {};

template <bool WithValue, class F, class... Opt>
auto make_grad(F f, Opt...) {
  static_assert(((std::is_same_v<Opt, has_aux_t> || requires { Opt::count; }) && ...),
                "grad: options are tw::argnums<...> and tw::has_aux");
  constexpr bool aux = (std::is_same_v<Opt, has_aux_t> || ...);
  return grad_transform<F, typename find_argnums<Opt...>::type, aux, WithValue>{std::move(f)};
}
}  // namespace detail

namespace detail {
/// grad inside a tower composite (see run_at_level's Floor).
template <int Floor, class F, int... I>
auto grad_at(F f, argnums_t<I...>) {
  return grad_transform<F, argnums_t<I...>, false, false, Floor>{std::move(f)};
}
}  // namespace detail

/// grad(f), grad(f, argnums<0, 2>), grad(f, has_aux), grad(f, argnums<1>, has_aux).
/// \code
/// auto f = [](auto x, auto y) { return x * x * y; };
/// if (tw::grad(f)(3.0, 2.0) != 12.0) throw std::runtime_error("grad");   // d/dx = 2 x y
/// auto [gx, gy] = tw::grad(f, tw::argnums<0, 1>)(3.0, 2.0);              // (2 x y, x^2)
/// if (gx != 12.0 || gy != 9.0) throw std::runtime_error("argnums");
/// \endcode
template <class F, class... Opt>
auto grad(F f, Opt... opt) {
  return detail::make_grad<false>(std::move(f), opt...);
}

/// grad_and_value(f, ...): (gradient, value), or (gradient, value, aux) with has_aux.
/// \code
/// auto [g, v] = tw::grad_and_value([](auto x) { return tw::sin(x); })(1.0);
/// if (g != std::cos(1.0) || v != std::sin(1.0)) throw std::runtime_error("grad_and_value");
/// \endcode
template <class F, class... Opt>
auto grad_and_value(F f, Opt... opt) {
  return detail::make_grad<true>(std::move(f), opt...);
}

}  // namespace tower

#pragma once
// vjp, jacrev, jacfwd and hessian, built from grad, jvp and vmap as torch.func builds them.
//
//   auto [y, vjp_fn] = tw::vjp(f, x);      // std::get<0>(vjp_fn(u)) = J(x)^T u
//   auto J  = tw::jacrev(f)(x);            // shape: out_shape + in_shape
//   auto J2 = tw::jacfwd(f)(x);            // the same, by forward mode
//   auto H  = tw::hessian(f)(x);           // jacfwd(jacrev(f)): in_shape + in_shape
//
// Every inner transform receives the values it depends on as arguments (never through a
// closure), so levels are always visible to the static path.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dsl/reduce.hpp"
#include "dsl/shape_ops.hpp"
#include "tower/core/force_inline.hpp"
#include "tower/transforms/grad.hpp"
#include "tower/transforms/static/jacobian_rows.hpp"
#include "tower/transforms/jvp.hpp"
#include "tower/static/diagnostics.hpp"
#include "tower/tensor/kept_tensors.hpp"
#include "tower/static/pytree.hpp"
#include "tower/core/transform_options.hpp"
#include "tower/core/runtime_function.hpp"
#include "tower/transforms/vmap.hpp"

namespace tower {

namespace detail {

/// <c, y> summed over every element of every leaf of the pytree y (c has its structure).
template <class C, class Y>
auto inner_product(const C& c, const Y& y) {
  using D = std::remove_cvref_t<Y>;
  if constexpr (is_leaf_v<D>) {
    require_cotangent_shape(shape(c), shape(y));
    if constexpr (is_scalar_type_v<C> && is_scalar_type_v<Y>) return c * y;
    else return sum(c * y);
  } else if constexpr (is_tuple_like<D>::value || is_std_array<D>::value) {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return (inner_product(std::get<K>(c), std::get<K>(y)) + ...);
    }(std::make_index_sequence<std::tuple_size_v<D>>{});
  } else if constexpr (is_std_vector<D>::value) {
    if (c.size() != y.size())
      throw error("vjp: the cotangent is a vector of " + std::to_string(c.size()) + " entries but f's output has " +
                  std::to_string(y.size()));
    if (y.empty()) throw error("vjp: f returned an empty std::vector: there is no output to differentiate");
    auto r = inner_product(c[0], y[0]);
    for (std::size_t k = 1; k < y.size(); ++k) r = r + inner_product(c[k], y[k]);
    return r;
  } else {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return (inner_product(member<K>(c), member<K>(y)) + ...);
    }(std::make_index_sequence<struct_size_v<D>>{});
  }
}

template <std::size_t... I>
constexpr auto argnums_of(std::index_sequence<I...>) {
  return argnums<static_cast<int>(I)...>;
}

/// in_dims(0, none, ..., none) with N nones.
template <std::size_t N>
constexpr auto batch_first_only() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return in_dims(0, ((void)I, none)...);
  }(std::make_index_sequence<N>{});
}

/// in_dims(-1, none, ..., none) with N nones.
template <std::size_t N>
constexpr auto batch_last_only() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return in_dims(-1, ((void)I, none)...);
  }(std::make_index_sequence<N>{});
}

/// Whether grad can start its backward pass from cotangents C of outputs Y (cotangent_seed.hpp):
/// outputs on the static tape (any pytree of them), or one runtime value on the runtime path (C
/// a runtime value too). tw::fixed values and scalar_duals (grad's tape-free path), runtime
/// pytrees and a static f that hands back a runtime value (bridge.hpp) take <c, y>.
template <class C, class Y>
constexpr bool seedable() {
  if constexpr (is_dyn_v<C> || is_dyn_v<Y>) {
    return is_dyn_v<C> && is_dyn_v<Y>;
  } else {
    constexpr bool static_leaf = []<class... L>(std::type_identity<std::tuple<L...>>) {
      return ((!is_fixed_v<L> && !is_scalar_dual_v<L> && !is_dyn_v<L> && !diagnostics::is_failed_v<L>) && ...);
    }(std::type_identity<typename leaf_types<Y>::type>{});
    constexpr bool static_ct = []<class... L>(std::type_identity<std::tuple<L...>>) {
      return (!is_dyn_v<L> && ...);
    }(std::type_identity<typename leaf_types<C>::type>{});
    return static_leaf && static_ct;
  }
}

/// Whether a pytree type holds a runtime value anywhere.
template <class X>
constexpr bool has_dyn_leaf() {
  return []<class... L>(std::type_identity<std::tuple<L...>>) {
    return (is_dyn_v<L> || ...);
  }(std::type_identity<typename leaf_types<std::remove_cvref_t<X>>::type>{});
}

/// The VJP of f at xs for cotangent ct, for the argument indices I... (all when none given):
/// one gradient, or a tuple of them. On the static tape, grad seeds f's outputs with ct.
template <int Floor, class F, int... I, class C, class... X>
auto vjp_apply(const F& f, argnums_t<I...>, const C& ct, const X&... xs) {
  auto pull = [&f](const auto& c, const auto&... x) {
    auto y = f(x...);
    using Y = decltype(y);
    using Ct = std::remove_cvref_t<decltype(c)>;
    if constexpr (seedable<Ct, Y>()) return cotangent_seed<Ct, Y>{c, std::move(y)};
    else return inner_product(c, y);
  };
  if constexpr (is_runtime_function_v<F> || (is_dyn_v<X> || ...) || has_dyn_leaf<C>()) {
    // The runtime path: the cotangent, a pytree of runtime values, is captured (runtime levels
    // need no argument to be seen) and grad's arguments are f's alone.
    const auto c = tree_map([](const auto& leaf) { return runtime::detail::to_value(leaf); }, ct);
    return grad_at<Floor>([&](const auto&... x) { return pull(c, x...); }, argnums<I...>)(xs...);
  } else {
    // The static path: the cotangent is an argument, so that its levels are visible.
    constexpr std::size_t N = sizeof...(X);
    auto h = [&pull](const auto&... a) {
      auto all = std::tie(a...);
      return [&]<std::size_t... K>(std::index_sequence<K...>) {
        return pull(std::get<N>(all), std::get<K>(all)...);
      }(std::make_index_sequence<N>{});
    };
    return grad_at<Floor>(h, argnums<I...>)(xs..., ct);
  }
}

/// The first example of a tensor whose leading `batch_dims` dims are batch dims.
template <class T>
tensor<T> first_example_tensor(const tensor<T>& x, std::size_t batch_dims) {
  if (batch_dims == 0) return x;  // shares the storage
  const shape_t s(x.shape().begin() + static_cast<std::ptrdiff_t>(batch_dims), x.shape().end());
  const std::int64_t n = numel_of(s);
  if (n > x.numel()) return tensor<T>(s, buffer<T>(static_cast<std::size_t>(n), T(0)));  // an empty batch
  return tensor<T>(s, copy_buffer(x.data(), static_cast<std::size_t>(n)));
}

/// One example of x at the lowest level: each wrapper's primal, and for each vmap level the
/// first example (a physical value keeps its batch dim first, so the batch dims of all levels
/// lead the innermost tensor). jacrev runs f on it to learn the output's shape: under
/// hessian's jacfwd the probe on x itself carried eight tangents per op (a quarter of the time).
template <class X>
auto first_example_leaf(const X& x, std::size_t batch_dims = 0) {
  if constexpr (is_static_wrapper_v<X>) {
    if constexpr (std::remove_cvref_t<X>::key == transform_type::vmap)
      return first_example_leaf(batch_first(x).value, batch_dims + 1);
    else return first_example_leaf(x.primal, batch_dims);
  } else if constexpr (is_dyn_v<X>) {
    // The runtime path's wrappers, likewise: all vmap levels' batch dims lead the plain tensor.
    const dyn::value* v = &x;
    for (; v->level() > 0; v = &v->get().inner) batch_dims += v->get().key == transform_type::vmap;
    if (batch_dims == 0) return *v;
    std::optional<tensor<double>> scratch;
    return dyn::value(first_example_tensor(v->plain_ref(scratch), batch_dims));
  } else if constexpr (is_tensor_v<X>) {
    return first_example_tensor(x, batch_dims);
  } else {
    return x;
  }
}

/// Whether a vmap level batching x has no examples: then first_example_leaf has no example to
/// give, only zeros, which need not be in f's domain (a singular matrix for solve).
template <class X>
bool empty_batch_leaf(const X& x) {
  if constexpr (is_static_wrapper_v<X>) {
    if constexpr (std::remove_cvref_t<X>::key == transform_type::vmap)
      return x.batch_size == 0 || empty_batch_leaf(x.value);
    else return empty_batch_leaf(x.primal);
  } else if constexpr (is_dyn_v<X>) {
    std::size_t batch_dims = 0;
    const dyn::value* v = &x;
    for (; v->level() > 0; v = &v->get().inner) batch_dims += v->get().key == transform_type::vmap;
    const shape_t s = v->shape();  // all vmap levels' batch dims lead the plain tensor
    return std::find(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(batch_dims), 0) !=
           s.begin() + static_cast<std::ptrdiff_t>(batch_dims);
  } else {
    return false;
  }
}

/// The basis jacrev and jacfwd push through f: [n] + s, row i = e_i (the kernels find its zeros:
/// kernels/linalg.hpp's product_into). Kept
/// per thread and shared (kept_tensors.hpp): a Jacobian in a loop (Newton's method) asks for the
/// same basis every iteration (building it was 3% of jacrev on a 64 x 64 map).
template <class T>
tensor<T> identity_basis(std::int64_t n, shape_t s) {
  s.insert(s.begin(), n);
  return kept_per_thread<T>(s, [&] {
    buffer<T> e(static_cast<std::size_t>(n * n), T(0));
    for (std::int64_t i = 0; i < n; ++i) e[static_cast<std::size_t>(i * n + i)] = T(1);
    return tensor<T>(s, std::move(e));
  });
}

/// Converts plain arguments to dyn::value when F is a type-erased runtime function.
template <class F, class X>
decltype(auto) for_function(const X& x) {
  if constexpr (is_runtime_function_v<F> && !is_dyn_v<X>) return runtime::detail::to_value(x);
  else return (x);
}

/// The Jacobian j ([n_out] + x's shape, per leaf) as out_shape + x's shape; for a pytree
/// argument x, j has x's structure (grad's gradient) and each leaf is reshaped.
template <class J, class X>
auto reshape_jacobian(const J& j, const shape_t& out_shape, const X& x) {
  if constexpr (!is_leaf_v<X>) {
    return tree_zip([&](const auto& jl, const auto& xl) { return reshape_jacobian(jl, out_shape, xl); }, j, x);
  } else {
    shape_t s = out_shape, in = shape(x);
    s.insert(s.end(), in.begin(), in.end());
    return reshape(j, s);
  }
}

/// The number of elements of all leaves of a pytree x.
template <class X>
std::int64_t tree_numel(const X& x) {
  std::int64_t n = 0;
  tree_for_each([&](const auto& leaf) { n += numel_of(shape(leaf)); }, x);
  return n;
}

/// jacfwd's tangents for a pytree argument x of n = tree_numel(x) elements: x's structure, leaf
/// [n] + its shape, together the rows of the identity (leaf j holds the columns of its elements).
/// vmap over all of them pushes every direction of every leaf in one pass.
template <class T, class X>
auto pytree_basis(const X& x) {
  const std::int64_t n = tree_numel(x);
  const tensor<T> eye = identity_basis<T>(n, {n});
  std::int64_t offset = 0;  // tree_map visits the leaves in order
  return tree_map(
      [&](const auto& leaf) {
        const shape_t s = shape(leaf);
        const std::int64_t k = numel_of(s);
        shape_t rows = s;
        rows.insert(rows.begin(), n);
        tensor<T> b = reshape(narrow(eye, 1, offset, k), rows);
        offset += k;
        return b;
      },
      x);
}

/// jacfwd's columns cols ([n] + out_shape, for pytree_basis(x)) as x's structure of Jacobians,
/// leaf out_shape + its shape.
template <class C, class X>
auto pytree_columns(const C& cols, const X& x) {
  const shape_t cs = shape(cols);
  const shape_t os(cs.begin() + 1, cs.end());
  std::int64_t offset = 0;
  return tree_map(
      [&](const auto& leaf) {
        const std::int64_t k = numel_of(shape(leaf));
        auto j = reshape_jacobian(movedim(narrow(cols, 0, offset, k), 0, -1), os, leaf);
        offset += k;
        return j;
      },
      x);
}

}  // namespace detail

namespace detail {

/// Whether f runs on these argument types without an op that fixed values or scalar_duals cannot
/// carry: a transform says so itself (forward_ok), a plain function by its result.
template <class F, class... A>
constexpr bool runs_forward() {
  if constexpr (requires { F::template forward_ok<A...>(); }) return F::template forward_ok<A...>();
  else if constexpr (!std::is_invocable_v<const F&, const A&...>) return false;
  else return !duals::contains_unsupported<std::remove_cvref_t<std::invoke_result_t<const F&, const A&...>>>();
}

/// jacrev and jacfwd on tw::fixed arguments (or nested in a tape-free transform): forward mode,
/// one direction per element of argument K, no tape and no basis tensor. The Jacobian has shape
/// out_shape + in_shape as fixed values: fixed<fixed<T, n>, m> for m outputs and n inputs.
/// jacrev gives the same numbers this way (forward and reverse mode differ only in rounding).
template <class F, int K>
struct forward_jacobian {
  template <class... A>
  using arg_t = std::remove_cvref_t<std::tuple_element_t<static_cast<std::size_t>(K), std::tuple<A...>>>;
  template <class... A>
  using input_t = duals::seed_number_t<fixeds::scalar_t<arg_t<A...>>, fixeds::scalar_t<A>...>;
  template <class... A>
  static constexpr int directions = static_cast<int>(fixeds::numel<arg_t<A...>>());

  template <std::size_t J, class... A>
  static decltype(auto) seeded(const A&... a) {
    return seeded_arg<K, J>(
        [](const arg_t<A...>& x) {
          using X = input_t<A...>;
          constexpr int n = directions<A...>;
          auto seed = [&]<std::size_t Own>(const auto& v, std::integral_constant<std::size_t, Own>) {
            return duals::seed<X, n, Own>(duals::lift<X>(v));
          };
          if constexpr (is_fixed_v<arg_t<A...>>)
            return fixeds::generate<arg_t<A...>>([&](auto k) { return seed(fixeds::flat<decltype(k)::value>(x), k); });
          else return seed(x, std::integral_constant<std::size_t, 0>{});
        },
        a...);
  }

  /// Whether F computes its own result's Jacobian in argument K (jacobian_rows.hpp): then that
  /// is this transform's result, and no seed is made here.
  template <class... A>
  static constexpr bool asks_rows() {
    if constexpr (requires { F::template jacobian_rows_ok<K, A...>(); }) return F::template jacobian_rows_ok<K, A...>();
    else return false;
  }

  template <class... A>
  static auto call(const F& f, const A&... a) {
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      return f(seeded<J>(a...)...);
    }(std::index_sequence_for<A...>{});
  }

  template <class... A>
  static constexpr bool ok() {
    if constexpr (asks_rows<A...>()) {
      return true;
    } else if constexpr (K < 0 || K >= static_cast<int>(sizeof...(A))) {
      return false;
    } else if constexpr (!((std::is_arithmetic_v<fixeds::scalar_t<A>> || is_scalar_dual_v<fixeds::scalar_t<A>>) &&
                           ...)) {
      return false;
    } else if constexpr (!(std::is_floating_point_v<input_t<A...>> || is_scalar_dual_v<input_t<A...>>) ||
                         directions<A...> > 32) {
      return false;
    } else {
      using S = typename decltype([]<std::size_t... J>(std::index_sequence<J...>) {
        return std::type_identity<
            std::tuple<std::remove_cvref_t<decltype(seeded<J>(std::declval<const A&>()...))>...>>{};
      }(std::index_sequence_for<A...>{}))::type;
      constexpr bool runs = []<class... Sd>(std::type_identity<std::tuple<Sd...>>) {
        return runs_forward<F, Sd...>();
      }(std::type_identity<S>{});
      if constexpr (!runs) return false;
      else
        return output_ok<std::remove_cvref_t<decltype(call(std::declval<const F&>(), std::declval<const A&>()...))>,
                         input_t<A...>>();
    }
  }
  /// An output the Jacobian can be read from: a number or scalar_dual (of X's levels), or a fixed of them.
  template <class O, class X>
  static constexpr bool output_ok() {
    using S = fixeds::scalar_t<O>;
    if constexpr (is_scalar_dual_v<S>) return std::is_same_v<typename S::value_type, X>;
    else return std::is_arithmetic_v<S> || std::is_same_v<S, X>;
  }

  template <class... A>
  static auto run(const F& f, bool prev, const A&... a) {
    if constexpr (asks_rows<A...>()) return f.template jacobian_rows<K>(a...);
    else return run_nested(f, prev, a...);
  }

  template <class... A>
  static auto run_nested(const F& f, bool prev, const A&... a) {
    using X = input_t<A...>;
    using In = arg_t<A...>;
    const auto out = call(f, a...);
    // Grad mode off outside: a nested result is a constant at the levels below (as grad does).
    auto outside = [&](const X& v) -> X {
      if constexpr (is_scalar_dual_v<X>) return prev ? v : duals::lift<X>(duals::base_value(v));
      else return v;
    };
    auto tangent = [&]<std::size_t D>(const auto& y, std::integral_constant<std::size_t, D>) -> X {
      using Y = std::remove_cvref_t<decltype(y)>;
      constexpr bool carries = [] {
        if constexpr (is_scalar_dual_v<Y>) return std::is_same_v<typename Y::value_type, X>;
        else return false;  // f's output does not depend on the argument: zeros
      }();
      if constexpr (carries) {
        if constexpr (std::is_arithmetic_v<X>) return duals::tangent<D>(y) + X(0);  // a structural zero is -0.0: +0.0
        else return outside(duals::tangent<D>(y));
      } else {
        return duals::lift<X>(0.0);
      }
    };
    auto row = [&](const auto& y) {
      if constexpr (is_fixed_v<In>) return fixeds::generate<In>([&](auto k) { return tangent(y, k); });
      else return tangent(y, std::integral_constant<std::size_t, 0>{});
    };
    using O = std::remove_cvref_t<decltype(out)>;
    if constexpr (is_fixed_v<O>)
      return fixeds::generate<O>([&](auto k) { return row(fixeds::flat<decltype(k)::value>(out)); });
    else return row(out);
  }
};

}  // namespace detail

namespace detail {
/// f's first result, for transforms of a function returning (output, aux).
template <class F>
struct first_result {
  F f;
  template <class... A>
  auto operator()(const A&... a) const {
    return std::get<0>(f(a...));
  }
};
}  // namespace detail

template <class F>
struct is_runtime_function<detail::first_result<F>> : is_runtime_function<F> {};

namespace detail {
/// Whether the last of P... is has_aux_t (vjp and jvp take it after the primals, as torch.func
/// takes has_aux=True).
template <class... P>
constexpr bool ends_with_has_aux() {
  if constexpr (sizeof...(P) == 0) return false;
  else return std::is_same_v<std::tuple_element_t<sizeof...(P) - 1, std::tuple<P...>>, has_aux_t>;
}

template <bool HasAux, class F, class... P>
auto vjp_impl(F f, const P&... primals) {
  using Full = decltype(f(for_function<F>(primals)...));
  if constexpr (!decltype(diagnostics::check_differentiable_output<"vjp", HasAux, Full>())::value) {
    return diagnostics::failed{};
  } else {
    auto full = f(for_function<F>(primals)...);
    if constexpr (HasAux) require_some_output("vjp", std::get<0>(full));
    else require_some_output("vjp", full);
    using G = std::conditional_t<HasAux, first_result<F>, F>;
    using Out = std::remove_cvref_t<decltype(std::declval<const G&>()(for_function<F>(primals)...))>;
    auto vjp_fn = [g = G{std::move(f)}, xs = std::make_tuple(for_function<F>(primals)...)](const auto& ct) {
      using C = std::remove_cvref_t<decltype(ct)>;
      if constexpr (!decltype(diagnostics::check_cotangent<C, Out>())::value) {
        return diagnostics::failed{};
      } else {
        return std::apply(
            [&](const auto&... x) {
              constexpr int L = pytree_level<C, P...>() + 1;
              return run_composite<L>("vjp", [&](auto floor) {
                auto gr = vjp_apply<decltype(floor)::value>(g, argnums_of(std::index_sequence_for<P...>{}), ct, x...);
                if constexpr (sizeof...(P) == 1) return std::make_tuple(std::move(gr));
                else return gr;
              });
            },
            xs);
      }
    };
    if constexpr (HasAux)
      return std::make_tuple(std::get<0>(std::move(full)), std::move(vjp_fn), std::get<1>(std::move(full)));
    else return std::make_pair(std::move(full), std::move(vjp_fn));
  }
}
}  // namespace detail

/// vjp(f, primals...) -> (f(primals...), vjp_fn); vjp_fn(cotangent) returns a std::tuple with
/// one gradient per primal. f may return any pytree of tensors and floating-point numbers; the
/// cotangent has its structure. vjp_fn is itself differentiable (it re-runs f under grad).
/// vjp(f, primals..., tw::has_aux): f returns (output, aux); the result is (output, vjp_fn, aux).
/// \code
/// auto [y, vjp_fn] = tw::vjp([](auto x) { return tw::sin(x); }, tw::tensor<double>{0.0, 1.0});
/// auto [g] = vjp_fn(tw::tensor<double>{1.0, 1.0});
/// if (y(1) != std::sin(1.0) || std::abs(g(1) - std::cos(1.0)) > 1e-15) throw std::runtime_error("vjp");
/// \endcode
template <class F, class... P>
auto vjp(F f, const P&... primals) {
  if constexpr (detail::ends_with_has_aux<P...>()) {
    auto all = std::tie(primals...);
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return detail::vjp_impl<true>(std::move(f), std::get<K>(all)...);
    }(std::make_index_sequence<sizeof...(P) - 1>{});
  } else {
    return detail::vjp_impl<false>(std::move(f), primals...);
  }
}

namespace detail {
/// The output shape jacrev last saw f return, for the argument shapes it was called with: the
/// basis of cotangents needs it before the pass that computes y, and finding it by running f
/// once more on plain values was 15% of jacrev on a 64 x 64 map (torch.func's vjp keeps the
/// graph instead; a static tape cannot outlive its pass). A remembered shape is checked against
/// y in the pass itself; when f's shape changed (a tensor it captured by reference changed
/// shape, say), the pass stops (stale_output_shape) and jacrev runs f to learn the new one.
/// Shared by the copies of one jacrev (they hold the same f) and locked: a jacrev may be called
/// from several threads.
class output_shape_memo {
 public:
  template <class... A>
  std::optional<shape_t> find(const A&... a) {
    const std::lock_guard<std::mutex> lock(m_);
    if (!valid_ || in_.size() != sizeof...(A)) return std::nullopt;
    std::size_t k = 0;
    const bool same = ((in_[k++] == key(a)) && ...);
    return same ? std::optional<shape_t>(out_) : std::nullopt;
  }
  template <class... A>
  void keep(const shape_t& out, const A&... a) {
    const std::lock_guard<std::mutex> lock(m_);
    in_ = {key(a)...};
    out_ = out;
    valid_ = true;
  }

 private:
  /// A tensor argument's shape; a number's, {-1} (no tensor has it).
  template <class A>
  static shape_t key(const A& a) {
    if constexpr (is_tensor_v<A>) return a.shape();
    else return shape_t{-1};
  }
  std::mutex m_;
  std::vector<shape_t> in_;
  shape_t out_;
  bool valid_ = false;
};
struct stale_output_shape {};
}  // namespace detail

namespace detail {
/// f's output leaf at one place of its pytree output (get, from tree_map_path): jacrev and
/// jacfwd of a pytree output take one Jacobian per leaf.
template <class F, class Get>
struct output_leaf {
  F f;
  Get get;
  using wrapped_function = F;  // get holds no values (detail::may_capture_values)
  template <class... A>
  auto operator()(const A&... a) const {
    const auto out = f(a...);
    return get(out);
  }
};
}  // namespace detail

template <class F, class G>
struct is_runtime_function<detail::output_leaf<F, G>> : is_runtime_function<F> {};

namespace detail {
/// The entry shared by jacrev and jacfwd: type-erased functions get dyn::values; on the static
/// path the level check runs once here, and Derived::body<Floor> builds the Jacobian.
template <class Derived, class F, int... I>
struct jacobian_entry {
  static constexpr bool forward_path = true;  // forward_ok, forward_body (vmap's fused_fixed.hpp)
  /// Whether the forward path (detail::forward_jacobian) takes these arguments.
  template <class... A>
  static constexpr bool forward_ok() {
    if constexpr (sizeof...(I) != 1) return false;
    else return forward_jacobian<F, I...>::template ok<A...>();
  }
  /// Whether the forward path asks f for its derivative along the differentiated argument's
  /// identity directions (jacobian_rows.hpp): a second-order transform that runs on jets.
  template <class... A>
  static constexpr bool asks_rows() {
    if constexpr (sizeof...(I) != 1) return false;
    else return forward_jacobian<F, I...>::template asks_rows<A...>();
  }
  /// The Jacobian in argument K of this transform's result (the gradient of a scalar f: a
  /// Hessian), when f runs on jets (jacobian_rows.hpp: the outer transform of a Hessian asks).
  template <int K, class... A>
  static constexpr bool jacobian_rows_ok() {
    if constexpr (sizeof...(I) != 1 || ((I != K) || ...)) return false;
    else return detail::rows_on_jets<F, K>::template ok<A...>();
  }
  template <int K, class... A>
  TOWER_ALWAYS_INLINE auto jacobian_rows(const A&... a) const {
    return detail::rows_on_jets<F, K>::run(static_cast<const Derived&>(*this).f, a...);
  }
  /// The forward path with grad mode on; `prev` is the mode outside (vmap's fused loop sets it once).
  template <class... A>
  TOWER_ALWAYS_INLINE auto forward_body(bool prev, const A&... a) const {
    return forward_jacobian<F, I...>::run(static_cast<const Derived&>(*this).f, prev, a...);
  }
  template <class... A>
  auto forward(const A&... a) const {
    const bool prev = is_grad_enabled();
    enable_grad on;
    return forward_body(prev, a...);
  }

  template <class... A>
  auto operator()(const A&... a) const {
    const auto& self = static_cast<const Derived&>(*this);
    if constexpr ((is_dual_unsupported_v<A> || ...)) {
      return dual_unsupported{};  // inside a probe of a tape-free form, which declines
    } else if constexpr ((is_fixed_v<A> || ...) || (is_scalar_dual_v<A> || ...)) {
      // tw::fixed arguments, or nested in a tape-free transform: forward mode (forward_jacobian).
      if constexpr (Derived::template forward_ok<A...>()) {
        return self.forward(a...);
      } else if constexpr (inside_tape_free<A...>()) {
        return dual_unsupported{};  // the enclosing tape-free transform (or vmap's probe of it) declines
      } else {
        static_assert(
            Derived::template forward_ok<A...>(),
            "jacrev/jacfwd: with tw::fixed arguments or inside vmap's fused form, f must be a function of numbers and "
            "tw::fixed values (at most 32 numbers in the differentiated argument, one argnum) that returns numbers or "
            "tw::fixed values");
        return diagnostics::failed{};
      }
    } else if constexpr (((I < 0) || ...)) {
      // Negative argnums count from the end, as in torch.func.
      using N = typename Derived::template rebind<F, argnums_t<normalized_argnum<I, sizeof...(A)>()...>>;
      return N{{}, self.f}(a...);
    } else if constexpr (is_runtime_function_v<F> && !(is_dyn_v<A> && ...)) {
      return self(runtime::detail::to_value(a)...);
    } else if constexpr (!decltype(check<A...>())::value) {
      return diagnostics::failed{};  // a static check failed and reported it (docs/diagnostics.md)
    } else {
      if constexpr ((is_dyn_v<A> || ...)) return run_body<0>(a...);
      else
        return run_composite<pytree_level<A...>() + 1, may_capture_values<F>()>(
            Derived::name.text, [&](auto floor) { return run_body<decltype(floor)::value>(a...); });
    }
  }

 private:
  /// The static checks, before anything else is instantiated.
  template <class... A>
  static constexpr auto check() {
    if constexpr (!decltype(diagnostics::check_grad_args<Derived::name, argnums_t<I...>, A...>())::value)
      return std::false_type{};
    else if constexpr (!std::is_invocable_v<const F&, const A&...>)
      return diagnostics::check_callable<Derived::name, F, std::tuple<const A&...>, A...>();
    else
      return diagnostics::check_differentiable_output<Derived::name, false,
                                                      std::invoke_result_t<const F&, const A&...>>();
  }

  /// Derived::body for a tensor or number output; for a pytree output, one Jacobian per leaf in
  /// the output's structure, each a tuple over argnums when there are several (as torch.func).
  template <int Floor, class... A>
  auto run_body(const A&... a) const {
    const auto& self = static_cast<const Derived&>(*this);
    using Out = std::remove_cvref_t<std::invoke_result_t<const F&, const A&...>>;
    if constexpr (is_leaf_v<Out>) {
      return self.template body<Floor>(a...);
    } else {
      // The output's structure (a vector's length) from f on one example of the arguments.
      const auto probe = self.f(tree_map([](const auto& leaf) { return first_example_leaf(leaf); }, a)...);
      return tree_map_path(
          [&](const auto&, auto get) {
            using G = output_leaf<F, decltype(get)>;
            return typename Derived::template rebind<G, argnums_t<I...>>{{}, G{self.f, get}}.template body<Floor>(a...);
          },
          probe);
    }
  }
};
}  // namespace detail

template <class F, class Argnums>
struct jacrev_transform;

template <class F, int... I>
struct jacrev_transform<F, argnums_t<I...>> : detail::jacobian_entry<jacrev_transform<F, argnums_t<I...>>, F, I...> {
  F f;
  using wrapped_function = F;  // f and a memo of output shapes, no values (detail::may_capture_values)
  std::shared_ptr<detail::output_shape_memo> memo = std::make_shared<detail::output_shape_memo>();
  static constexpr diagnostic name = "jacrev";
  template <class G, class A>
  using rebind = jacrev_transform<G, A>;

  template <int Floor, class... A>
  auto body(const A&... a) const {
    // The output's type (whether it is a number) without running f; its shape from the memo
    // or from f on one example of the arguments.
    auto probe = [&] { return f(tree_map([](const auto& leaf) { return detail::first_example_leaf(leaf); }, a)...); };
    using Out = decltype(probe());
    if constexpr (is_scalar_type_v<Out>) {
      return detail::grad_at<Floor>(f, argnums<I...>)(a...);
    } else {
      // Plain arguments only: under enclosing transforms the probe is one example's worth anyway.
      constexpr bool memoised = ((is_tensor_v<A> || std::is_arithmetic_v<A>) && ...);
      if constexpr (memoised) {
        if (const std::optional<shape_t> os = memo->find(a...)) {
          try {
            return rows<Floor, true>(*os, a...);
          } catch (const detail::stale_output_shape&) {}
        }
      }
      if constexpr (!memoised) {
        // An empty batch: f's output shape from f on the batch itself, which runs no example
        // (as functorch, where f always sees the batch).
        bool empty = false;
        (tree_for_each([&](const auto& leaf) { empty = empty || detail::empty_batch_leaf(leaf); }, a), ...);
        if (empty) return rows<Floor, false>(shape(f(a...)), a...);
      }
      const shape_t os = shape(probe());
      if constexpr (memoised) memo->keep(os, a...);
      return rows<Floor, false>(os, a...);
    }
  }

  /// The Jacobian for output shape os: vmap of the VJP over the basis of cotangents. Checked:
  /// os came from the memo, and a y of another shape stops the pass (stale_output_shape).
  template <int Floor, bool Checked, class... A>
  auto rows(const shape_t& os, const A&... a) const {
    if constexpr (Checked) {
      auto checked_f = [this, &os](const auto&... x) {
        auto y = f(x...);
        if (shape(y) != os) throw detail::stale_output_shape{};
        return y;
      };
      return rows_of<Floor>(checked_f, os, a...);
    } else {
      return rows_of<Floor>(f, os, a...);
    }
  }

  template <int Floor, class G, class... A>
  auto rows_of(const G& g, const shape_t& os, const A&... a) const {
    auto by_rows = [&] {
      const auto basis = detail::identity_basis<double>(numel_of(os), os);
      auto all = detail::vmap_at<Floor>(
          [&g](const auto& ct, const auto&... x) { return detail::vjp_apply<Floor>(g, argnums<I...>, ct, x...); },
          detail::batch_first_only<sizeof...(A)>())(detail::for_function<F>(basis), a...);
      if constexpr (sizeof...(I) == 1) {
        return detail::reshape_jacobian(all, os, std::get<I...>(std::tie(a...)));
      } else {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
          return std::make_tuple(detail::reshape_jacobian(std::get<K>(all), os, std::get<I>(std::tie(a...)))...);
        }(std::make_index_sequence<sizeof...(I)>{});
      }
    };
    if constexpr (sizeof...(I) == 1 &&
                  (is_leaf_v<std::tuple_element_t<static_cast<std::size_t>(I), std::tuple<A...>>> && ...)) {
      // A rank-0 output that is not a number type (a scalar tensor, or a number wrapped by
      // enclosing transforms, as in hessian = jacfwd(jacrev(f))): jacrev is grad, without a
      // vmap over a basis of one cotangent (28% of vmap(hessian) on R^8).
      using R = decltype(by_rows());
      if (os.empty()) {
        auto gr = detail::grad_at<Floor>(g, argnums<I...>)(a...);
        if constexpr (std::is_same_v<decltype(gr), R>) return gr;
        else return detail::convert_adjoint<R>(std::move(gr));
      }
    }
    return by_rows();
  }
};

template <class F, class Argnums>
struct jacfwd_transform;

template <class F, int... I>
struct jacfwd_transform<F, argnums_t<I...>> : detail::jacobian_entry<jacfwd_transform<F, argnums_t<I...>>, F, I...> {
  F f;
  using wrapped_function = F;  // holds f and nothing else (detail::may_capture_values)
  static constexpr diagnostic name = "jacfwd";
  template <class G, class A>
  using rebind = jacfwd_transform<G, A>;

  template <int Floor, class... A>
  auto body(const A&... a) const {
    if constexpr (sizeof...(I) == 1) return column<Floor, I...>(a...);
    else return std::make_tuple(column<Floor, I>(a...)...);
  }

  /// The Jacobian with respect to argument K: jvp along each basis direction of that argument.
  template <int Floor, int K, class... A>
  auto column(const A&... a) const {
    const auto& xk = std::get<K>(std::tie(a...));
    auto tangents_for = [](const auto& v, const auto& xs) {
      return [&]<std::size_t... J>(std::index_sequence<J...>) {
        return std::make_tuple([&] {
          if constexpr (J == static_cast<std::size_t>(K)) return v;
          else return tree_map([](const auto& leaf) { return zeros_like(leaf); }, std::get<J>(xs));
        }()...);
      }(std::index_sequence_for<A...>{});
    };
    auto pushed = [f = f, &tangents_for](const auto& v, const auto&... x) {
      auto xs = std::make_tuple(x...);
      return detail::jvp_at<Floor>(f, xs, tangents_for(v, xs)).second;
    };
    using Xk = std::remove_cvref_t<decltype(xk)>;
    if constexpr (!is_leaf_v<Xk>) {
      // A pytree argument: a Jacobian per leaf, in its structure, from one vmap over the
      // directions of all its leaves.
      using T = scalar_type_t<std::tuple_element_t<0, typename detail::leaf_types<Xk>::type>>;
      return detail::pytree_columns(
          detail::vmap_at<Floor>(pushed, detail::batch_first_only<sizeof...(A)>())(detail::pytree_basis<T>(xk), a...),
          xk);
    } else if constexpr (is_scalar_type_v<Xk>) {
      using S = scalar_type_t<std::remove_cvref_t<decltype(xk)>>;  // float with a float argument
      return detail::jvp_at<Floor>(f, std::make_tuple(a...), tangents_for(S(1), std::make_tuple(a...))).second;
    } else {
      const shape_t is = shape(xk);
      const std::int64_t n = numel_of(is);
      // Tangents of x's element type (float with float; the runtime path's values are double).
      using T = std::conditional_t<is_dyn_v<Xk>, double, scalar_type_t<Xk>>;
      const auto basis = detail::identity_basis<T>(n, is);
      // Batch last needs plain values around it: under an enclosing transform's wrappers every
      // op would move it first again (a transpose each).
      if constexpr (is_runtime_function_v<F> || !(kernels::is_plain_v<A> && ...)) {
        auto cols = detail::vmap_at<Floor>(pushed, detail::batch_first_only<sizeof...(A)>())(
            detail::for_function<F>(basis), a...);
        // cols: [n_in] + out_shape -> out_shape + in_shape
        const shape_t cs = shape(cols);
        const shape_t os(cs.begin() + 1, cs.end());
        return detail::reshape_jacobian(movedim(cols, 0, -1), os, xk);
      } else {
        // The basis with its batch last (in_shape + [n_in]: the same identity, symmetric), so
        // that elementwise ops and matmul keep the batch last (batched::batch_last) and cols
        // comes out as out_shape + [n_in] with no transpose.
        shape_t last = is;
        last.push_back(n);
        auto cols = detail::vmap_at<Floor>(pushed, detail::batch_last_only<sizeof...(A)>(), out_dims(-1))(
            basis.with_shape(last), a...);
        const shape_t cs = shape(cols);
        const shape_t os(cs.begin(), cs.end() - 1);
        return detail::reshape_jacobian(cols, os, xk);
      }
    }
  }
};

namespace detail {
/// A Jacobian transform of f's first result, returning (jacobian, aux) with aux = f's second
/// result, evaluated once and passed through untouched (torch.func's has_aux).
template <class J, class F>
struct with_aux {
  J jac;
  F f;
  template <class... A>
  auto operator()(const A&... a) const {
    auto full = f(for_function<F>(a)...);  // a type-erased f takes runtime values
    static_assert(
        requires { std::tuple_size<decltype(full)>::value; },
        "jacobian: with has_aux, f must return an (output, aux) pair");
    return std::make_pair(jac(a...), std::get<1>(std::move(full)));
  }
};

template <template <class, class> class T, class F, class... Opt>
auto make_jacobian(F f) {
  static_assert(((std::is_same_v<Opt, has_aux_t> || requires { Opt::count; }) && ...),
                "jacrev/jacfwd/hessian: options are tw::argnums<...> and tw::has_aux");
  using A = typename find_argnums<Opt...>::type;
  if constexpr ((std::is_same_v<Opt, has_aux_t> || ...)) {
    using G = first_result<F>;
    return with_aux<T<G, A>, F>{T<G, A>{{}, G{f}}, std::move(f)};
  } else {
    return T<F, A>{{}, std::move(f)};
  }
}
}  // namespace detail

/// jacrev(f), jacrev(f, argnums<0, 1>), jacrev(f, has_aux): Jacobian by reverse mode (vmap of vjp
/// over a basis). With has_aux, f returns (output, aux) and the result is (jacobian, aux).
/// \code
/// auto J = tw::jacrev([](auto x) { return x * x; })(tw::tensor<double>{1, 2});   // diag(2 x)
/// if (J.shape() != tw::shape_t{2, 2} || J(1, 1) != 4 || J(0, 1) != 0) throw std::runtime_error("jacrev");
/// \endcode
template <class F, class... Opt>
auto jacrev(F f, Opt...) {
  return detail::make_jacobian<jacrev_transform, F, Opt...>(std::move(f));
}

/// jacfwd(f), jacfwd(f, argnums<...>), jacfwd(f, has_aux): Jacobian by forward mode (vmap of jvp
/// \code
/// auto J = tw::jacfwd([](auto x) { return tw::sin(x); })(tw::tensor<double>{0, 1});   // diag(cos x)
/// if (J(0, 0) != 1 || std::abs(J(1, 1) - std::cos(1.0)) > 1e-15 || J(1, 0) != 0) throw std::runtime_error("jacfwd");
/// \endcode
/// over a basis).
template <class F, class... Opt>
auto jacfwd(F f, Opt...) {
  return detail::make_jacobian<jacfwd_transform, F, Opt...>(std::move(f));
}

/// hessian(f), hessian(f, argnums<...>) = jacfwd(jacrev(f)): shape in_shape + in_shape for a scalar f.
/// \code
/// auto H = tw::hessian([](auto x) { return tw::sum(x * x * x); })(tw::tensor<double>{1, 2});   // diag(6 x)
/// if (H.shape() != tw::shape_t{2, 2} || H(1, 1) != 12 || H(0, 1) != 0) throw std::runtime_error("hessian");
/// \endcode
template <class F, int... I>
auto hessian(F f, argnums_t<I...> a = {}) {
  if constexpr (sizeof...(I) == 0) return jacfwd(jacrev(std::move(f)));
  else return jacfwd(jacrev(std::move(f), a), a);
}

template <class F, class A>
struct is_runtime_function<jacrev_transform<F, A>> : is_runtime_function<F> {};
template <class F, class A>
struct is_runtime_function<jacfwd_transform<F, A>> : is_runtime_function<F> {};

}  // namespace tower

#pragma once
// vmap(f, in_dims, out_dims): f mapped over a batch dimension of its arguments.
//
//   auto f = [](auto x, auto y) { return tw::sum(x * y); };
//   tw::tensor<double> r = tw::vmap(f, tw::in_dims(0, tw::none))(X, y);   // X: [B, d], y: [d] -> [B]
//
// On the static path each batched argument becomes batched<P, L> (batch moved to dim 0) and
// every op inside f runs its batching rule; outputs get the batch moved to out_dims (default 0).
// A tensor batched along its last dim (in_dims -1) keeps the batch there through the ops that
// can (batched::batch_last): with out_dims -1 an elementwise f moves no data at all.
// An output that does not depend on the batch is broadcast along it, as in functorch.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "dsl/layout.hpp"
#include "dsl/shape_ops.hpp"
#include "tower/static/diagnostics.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/static/pytree.hpp"
#include "tower/core/randomness.hpp"
#include "tower/static/values.hpp"
#include "tower/tensor/batch_size.hpp"
#include "tower/transforms/static/fused_fixed.hpp"
#include "tower/transforms/static/fused_vmap.hpp"
#include "tower/core/transform_options.hpp"
#include "tower/transforms/parallel_vmap.hpp"
#include "tower/core/runtime_function.hpp"
#include "tower/transforms/runtime/transforms.hpp"
#include "tower/transforms/static/level.hpp"

namespace tower {

namespace detail {

/// A struct of member_dim entries (D) needs an argument of the same struct template (X).
template <class D, class X>
constexpr bool check_member_dims() {
  constexpr bool same_template = [] {
    if constexpr (!is_hana_struct_v<X>) return false;
    else if constexpr (!requires { typename rebind_struct<X, member_dim>::type; }) return false;
    else return std::is_same_v<typename rebind_struct<X, member_dim>::type, D>;
  }();
  static_assert(
      same_template,
      "vmap: an in_dims entry that is a struct of tw::member_dim needs an argument of the same struct template");
  return same_template;
}

/// Calls f(dim, leaf) for each leaf of x that an in_dims entry batches (an int applies to every
/// leaf below it, tw::none to none, a tuple entry pairs with the argument's elements).
template <class D, class X, class F>
void for_each_in_dim(const D& d, const X& x, F&& f) {
  if constexpr (std::is_same_v<D, none_t>) {
  } else if constexpr (std::is_integral_v<D>) {
    tree_for_each([&](const auto& leaf) { f(static_cast<std::int64_t>(d), leaf); }, x);
  } else if constexpr (is_member_dims_v<D>) {
    if constexpr (check_member_dims<D, X>()) {
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        ((member<K>(d).dim ? for_each_in_dim(*member<K>(d).dim, member<K>(x), f) : void()), ...);
      }(std::make_index_sequence<struct_size_v<X>>{});
    }
  } else {
    static_assert(std::tuple_size_v<D> == std::tuple_size_v<X>,
                  "vmap: an in_dims entry does not match its argument's structure");
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (for_each_in_dim(std::get<K>(d), std::get<K>(x), f), ...);
    }(std::make_index_sequence<std::tuple_size_v<D>>{});
  }
}

/// x with every leaf batched by the in_dims entry d replaced by f(dim, leaf). A member of a struct
/// entry given tw::none is lift(leaf) instead: a struct's members have one type.
template <class D, class X, class F, class Lift = std::identity>
auto map_in_dim(const D& d, const X& x, F&& f, Lift lift = {}) {
  if constexpr (std::is_same_v<D, none_t>) {
    return x;
  } else if constexpr (std::is_integral_v<D>) {
    return tree_map([&](const auto& leaf) { return f(static_cast<std::int64_t>(d), leaf); }, x);
  } else if constexpr (is_member_dims_v<D>) {
    if constexpr (!check_member_dims<D, X>()) {
      return x;  // reported
    } else {
      using T = typename struct_leaf<X>::type;
      using U = decltype(map_in_dim(std::int64_t{0}, std::declval<const T&>(), f));
      typename rebind_struct<X, U>::type r{};
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        ((member<K>(r) =
              member<K>(d).dim ? map_in_dim(*member<K>(d).dim, member<K>(x), f) : U(tree_map(lift, member<K>(x)))),
         ...);
      }(std::make_index_sequence<struct_size_v<X>>{});
      return r;
    }
  } else {
    static_assert(std::tuple_size_v<D> == std::tuple_size_v<X>,
                  "vmap: an in_dims entry does not match its argument's structure");
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      if constexpr (requires { x.first; })
        return std::make_pair(map_in_dim(std::get<0>(d), x.first, f, lift),
                              map_in_dim(std::get<1>(d), x.second, f, lift));
      else if constexpr (requires {
                           std::get<0>(x);
                           x[0];
                         })
        return std::array{map_in_dim(std::get<K>(d), x[K], f, lift)...};
      else return std::make_tuple(map_in_dim(std::get<K>(d), std::get<K>(x), f, lift)...);
    }(std::make_index_sequence<std::tuple_size_v<D>>{});
  }
}

/// Concatenates one output (a pytree, reached from each chunk by `get`) of every chunk along its
/// batch dim.
template <class T, class P, class Get>
T cat_chunks(const std::vector<P>& parts, Get get, std::int64_t out_dim) {
  const T& first = get(parts.front());
  if constexpr (is_leaf_v<T>) {
    std::vector<T> xs;
    for (const auto& p : parts) xs.push_back(get(p));
    const auto r = static_cast<std::int64_t>(shape(xs.front()).size());
    return cat(xs, out_dim < 0 ? out_dim + r : out_dim);
  } else if constexpr (requires { first.first; }) {
    return T{
        cat_chunks<decltype(first.first)>(
            parts, [&](const P& p) -> const auto& { return get(p).first; }, out_dim),
        cat_chunks<decltype(first.second)>(parts, [&](const P& p) -> const auto& { return get(p).second; }, out_dim)};
  } else if constexpr (requires { std::tuple_size<T>::value; }) {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return T{cat_chunks<std::tuple_element_t<K, T>>(
          parts, [&](const P& p) -> const auto& { return std::get<K>(get(p)); }, out_dim)...};
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (detail::is_std_vector<T>::value) {
    T r;
    for (std::size_t i = 0; i < first.size(); ++i)
      r.push_back(
          cat_chunks<typename T::value_type>(parts, [&](const P& p) -> const auto& { return get(p).at(i); }, out_dim));
    return r;
  } else {
    T r{};
    constexpr std::size_t n = decltype(boost::hana::length(boost::hana::accessors<T>()))::value;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((boost::hana::second(boost::hana::at_c<K>(boost::hana::accessors<T>()))(r) = cat_chunks<std::remove_cvref_t<
            decltype(boost::hana::second(boost::hana::at_c<K>(boost::hana::accessors<T>()))(first))>>(
            parts,
            [&](const P& p) -> const auto& {
              return boost::hana::second(boost::hana::at_c<K>(boost::hana::accessors<T>()))(get(p));
            },
            out_dim)),
       ...);
    }(std::make_index_sequence<n>{});
    return r;
  }
}

/// Brings a static vmap's output back to plain form: batch at out_dim.
template <int L, class R>
auto unbatch(const R& r, std::int64_t out_dim, std::int64_t bs, std::uint64_t serial) {
  if constexpr (is_dyn_v<R>) {
    return dyn::detail::unbatch(r, out_dim, bs, L, serial);  // f returned runtime values (bridge.hpp)
  } else if constexpr (is_batched_at_v<R, L>) {
    if (r.serial != serial) throw error("vmap: the function returned a value batched by another vmap call");
    const shape_t s = shape(r.value);
    const std::int64_t rank = static_cast<std::int64_t>(s.size()), d = out_dim_of(out_dim, s);
    if constexpr (is_tensor_v<decltype(r.value)>)
      if (r.batch_last) {
        if (d == rank - 1) return r.value;  // out_dims -1: where the batch already is
        const auto first = batch_first(r);
        return d == 0 ? first.value : movedim(first.value, 0, d);
      }
    return d == 0 ? r.value : movedim(r.value, 0, d);
  } else {
    // Not batched: the same value for every example, broadcast along the batch.
    shape_t s = shape(r), one = s, full = s;
    one.insert(one.begin(), 1);
    full.insert(full.begin(), bs);
    auto b = broadcast_to(reshape(r, one), full);
    const std::int64_t d = out_dim_of(out_dim, full);
    return d == 0 ? b : movedim(b, 0, d);
  }
}

/// out_dims as a pytree prefix of f's result: 0 for everything when empty, the single entry for
/// the whole result, else the tuple of entries (one per element of a tuple-like result).
template <class... D>
auto out_prefix(const out_dims_t<D...>& out) {
  if constexpr (sizeof...(D) == 0) return std::int64_t{0};
  else if constexpr (sizeof...(D) == 1) return std::get<0>(out.dims);
  else return out.dims;
}

/// r with each leaf replaced by f(entry, leaf), the entry (an int or tw::none) the prefix p
/// gives it; a std::tuple entry pairs with the elements of a tuple, pair or array (which keep
/// their kind).
template <class P, class R, class F>
auto map_out_dim(const P& p, const R& r, F&& f) {
  using D = std::remove_cvref_t<R>;
  if constexpr (std::is_integral_v<P> || std::is_same_v<P, none_t>) {
    return tree_map([&](const auto& leaf) { return f(p, leaf); }, r);
  } else {
    static_assert(
        is_tuple_like<D>::value || is_std_array<D>::value,
        "vmap: a std::tuple entry of out_dims needs a std::tuple, std::pair or std::array output at its place");
    if constexpr (is_tuple_like<D>::value || is_std_array<D>::value) {
      static_assert(std::tuple_size_v<P> == std::tuple_size_v<D>,
                    "vmap: a std::tuple entry of out_dims must have one entry per element of the output at its place");
      return [&]<std::size_t... K>(std::index_sequence<K...>) {
        if constexpr (requires { r.first; })
          return std::make_pair(map_out_dim(std::get<0>(p), r.first, f), map_out_dim(std::get<1>(p), r.second, f));
        else if constexpr (is_std_array<D>::value) return std::array{map_out_dim(std::get<K>(p), r[K], f)...};
        else return std::make_tuple(map_out_dim(std::get<K>(p), std::get<K>(r), f)...);
      }(std::make_index_sequence<std::tuple_size_v<D>>{});
    }
  }
}

/// The outputs of every chunk joined along their out dims (p, as for map_out_dim); an output
/// with entry tw::none does not depend on the batch: the first chunk's.
template <class T, class Pf, class P, class Get>
T cat_out_chunks(const std::vector<P>& parts, Get get, const Pf& p) {
  if constexpr (std::is_same_v<Pf, none_t>) {
    return get(parts.front());
  } else if constexpr (std::is_integral_v<Pf>) {
    return cat_chunks<T>(parts, get, p);
  } else {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return T{cat_out_chunks<std::tuple_element_t<K, T>>(
          parts, [&](const P& q) -> const auto& { return std::get<K>(get(q)); }, std::get<K>(p))...};
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  }
}

[[noreturn]] inline void batched_none_output(const shape_t& s) {
  throw error("vmap: out_dims is tw::none for an output (shape " + shape_str(s) +
              " per example) that depends on the batch; give it a batch dim in out_dims");
}

/// An output whose out_dims entry is tw::none: it must not depend on the batch (functorch
/// raises too), and comes back as f returned it.
template <int L, class R>
auto none_output(const R& r, std::uint64_t serial) {
  if constexpr (is_dyn_v<R>) {
    if (r.level() == L && r.get().serial == serial) batched_none_output(r.shape());
    return r;
  } else if constexpr (is_batched_at_v<R, L>) {
    batched_none_output(shape(r));
    return r.value;
  } else {
    return r;
  }
}

}  // namespace detail

template <class F, class InDims, class OutDims, class Strategy = strategy::automatic_t, int Floor = 0>
struct vmap_transform {
  F f;
  InDims in;
  OutDims out;
  vmap_options opts{};
  using wrapped_function = F;  // f and options, no values (detail::may_capture_values)

  template <class... A>
  auto operator()(const A&... a) const {
    // randomness=error: a random op anywhere inside raises, in every form (tower/core/randomness.hpp).
    const detail::randomness_guard random_ops(opts.randomness);
    if constexpr ((is_dual_unsupported_v<A> || ...)) {
      return dual_unsupported{};  // inside a probe of a tape-free form, which declines
    } else if constexpr (detail::is_single_int_in_dims_v<InDims> && sizeof...(A) > 1) {
      return every_argument<A...>()(a...);  // in_dims(d) on several arguments: d for each
    } else if constexpr (detail::fused_fixed::involved<InDims, A...>()) {
      return run_plan(plan(a...), a...);  // tw::fixed_rows in in_dims, or tw::fixed arguments (fused_fixed.hpp)
    } else if constexpr (!decltype(check<A...>())::value) {
      return diagnostics::failed{};  // a static check failed and reported it (docs/diagnostics.md)
    } else if constexpr (is_runtime_function_v<F> || (is_dyn_v<A> || ...)) {
      return run_runtime(a...);
    } else {
      static_assert((is_pytree_v<A> && ...), "vmap: arguments must be numbers, tensors or pytrees of them");
      return run_plan(plan(a...), a...);
    }
  }

  /// check -> plan -> run: the static path's physical form for these arguments, chosen here and
  /// nowhere else (detail::vmap_plan); run_plan runs it.
  template <class... A>
  detail::vmap_plan plan(const A&... a) const {
    namespace ff = detail::fused_fixed;
    namespace fz = detail::fused;
    using P = detail::vmap_plan;
    // The loops do not restore the generator per example: randomness=error only, no chunks.
    const bool plain_run = opts.chunk_size <= 0 && opts.randomness == randomness_kind::error;
    if constexpr (ff::involved<InDims, A...>()) {
      if constexpr (fixed_loop<A...>())
        if (plain_run)
          if (const std::int64_t bs = ff::batch_size(in, a...); bs > 0) return {P::loop, bs};
      return {};  // batching rules, each fixed_rows<N> entry 0
    } else if constexpr (std::is_same_v<Strategy, strategy::fused_t> || std::is_same_v<Strategy, strategy::packets_t>) {
      static_assert(
          fused_applies<A...>() && detail::is_flat_out_dims_v<OutDims>,
          "vmap: strategy::fused and ::packets need plain arguments, in_dims of ints or tw::none and out_dims of ints");
      static_assert((fz::is_plain_v<A> && ...),
                    "vmap: strategy::fused and ::packets need plain arguments (numbers, tensors), not values of an "
                    "enclosing transform");
      // randomness=same or different: batching rules, which draw once for all examples or one
      // example at a time.
      if (opts.randomness != randomness_kind::error) return {};
      const std::int64_t bs = fz::batch_size(in, a...);
      if (bs == 0)
        throw error(std::is_same_v<Strategy, strategy::fused_t> ? "vmap: strategy::fused needs at least one example"
                                                                : "vmap: strategy::packets needs at least one example");
      if constexpr (std::is_same_v<Strategy, strategy::packets_t>) {
        // chunk_size(n): packets of n examples, as on the runtime path.
        return {P::packets, bs, 0, 0, opts.chunk_size > 0 ? opts.chunk_size : fz::packet_size(in, a...)};
      } else {
        if constexpr (fz::scalar_candidate<F, InDims, A...>())
          if (fz::scalar_examples<InDims>(a...))
            return {numbers_loop<A...>() ? P::loop : P::per_example, bs, 0, 0, 0, true};
        return {P::per_example, bs};
      }
    } else if constexpr (automatic_forms<A...>()) {
      // (Packets restore the generator per packet: randomness=same too.)
      if (opts.chunk_size > 0 || opts.randomness == randomness_kind::different) return {};
      if (plain_run) {
        if constexpr (numbers_loop<A...>())
          if (const std::int64_t bs =
                  ff::batch_size(ff::rows_at<sizeof...(A), 0>(in, std::index_sequence_for<A...>{}), a...);
              bs > 0)
            return {P::loop, bs};
        if constexpr (requires { F::forward_path; })
          if (const auto c = ff::choose_rows<batched_t<A...>, 0, F, InDims, OutDims>(in, a...); c.bs > 0)
            return {P::loop, c.bs, c.arg, c.rows};
      }
      const std::int64_t bs = fz::batch_size(in, a...);
      if (const std::int64_t packet = fz::automatic_packet(bs, fz::example_numbers(in, a...)))
        return {P::packets, bs, 0, 0, packet};
    }
    return {};
  }

  /// Runs plan p (see plan()).
  template <class... A>
  auto run_plan(const detail::vmap_plan& p, const A&... a) const {
    namespace ff = detail::fused_fixed;
    namespace fz = detail::fused;
    using P = detail::vmap_plan;
    if constexpr (ff::involved<InDims, A...>()) {
      // As the automatic loop below: an op f's fixed values take in part raises, and the tensor
      // form runs f.
      if constexpr (fixed_loop<A...>())
        if (p.form == P::loop) try {
            return ff::run<F, InDims>(f, out, p.bs, a...);
          } catch (const error&) {}
      return on_tensors(a...);
    } else if constexpr (std::is_same_v<Strategy, strategy::fused_t> || std::is_same_v<Strategy, strategy::packets_t>) {
      using R = decltype(strategy_result(a...));
      if (p.form == P::batched) {
        using Batched = vmap_transform<F, InDims, OutDims, strategy::batched_t, Floor>;
        if constexpr (std::is_same_v<decltype(Batched{f, in, out, opts}(a...)), R>)
          return Batched{f, in, out, opts}(a...);
        else
          throw error(
              "vmap: strategy::fused and ::packets take randomness=error only for this f; use strategy::batched");
      }
      if constexpr (std::is_same_v<Strategy, strategy::packets_t>) {
        return fz::run_packets(f, in, out, p.bs, p.packet, opts.randomness, a...);
      } else {
        if constexpr (fz::scalar_candidate<F, InDims, A...>()) {
          if constexpr (numbers_loop<A...>())
            if (p.form == P::loop) return ff::run<F, numbers_in<A...>>(f, out, p.bs, a...);
          if (p.scalar) return fz::run<true>(f, in, out, p.bs, a...);
        }
        return fz::run<false>(f, in, out, p.bs, a...);
      }
    } else {
      if constexpr (automatic_forms<A...>()) {
        using R = batched_t<A...>;
        if (p.form == P::loop) {
          // An op that takes fixed values only in part (sum over one dim of a matrix, with
          // keepdim) says so with a tower::error on the first example: batching rules then run
          // f, and report any error of f's own again.
          try {
            if constexpr (numbers_loop<A...>())
              if (p.rows == 0) return ff::run<F, numbers_in<A...>>(f, out, p.bs, a...);
            if constexpr (requires { F::forward_path; })
              return ff::run_rows<R, 0, 1>(f, in, out, {p.bs, p.rows_arg, p.rows}, a...);
          } catch (const error&) {}
        } else if (p.form == P::packets) {
          if constexpr (std::is_same_v<decltype(fz::run_packets(f, in, out, p.bs, p.packet, opts.randomness, a...)), R>)
            return fz::run_packets(f, in, out, p.bs, p.packet, opts.randomness, a...);
        }
      }
      return batched_run(a...);
    }
  }

  template <class... A>
  auto batched_run(const A&... a) const {
    constexpr int L = pytree_level<A...>() + 1;
    return detail::run_at_level<L, Floor, detail::may_capture_values<F>()>(
        "vmap", [&](auto level) { return run_chunked<decltype(level)::value>(a...); });
  }
  template <class... A>
  static auto batched_type() {  // (a function body: the class is complete there, for clang)
    return std::type_identity<decltype(std::declval<const vmap_transform&>().batched_run(
        std::declval<const A&>()...))>{};
  }
  template <class... A>
  using batched_t = typename decltype(batched_type<A...>())::type;

  /// strategy::automatic's other forms (loops, packets) apply to these types: plain arguments,
  /// in_dims of ints and none, out_dims of ints, a result of numbers and tensors.
  template <class... A>
  static constexpr bool automatic_forms() {
    if constexpr (!std::is_same_v<Strategy, strategy::automatic_t> || !fused_applies<A...>() ||
                  !detail::is_flat_out_dims_v<OutDims>)
      return false;
    else return detail::fused::plain_result_v<batched_t<A...>>;
  }

  /// strategy::fused's result type (the per-example forms').
  template <class... A>
  auto strategy_result(const A&... a) const {
    if constexpr (std::is_same_v<Strategy, strategy::packets_t>)
      return detail::fused::run_packets(f, in, out, 1, 1, opts.randomness, a...);
    else return detail::fused::run<false>(f, in, out, 1, a...);
  }

  template <class... A>
  using numbers_in = detail::fused_fixed::numbers_in_t<InDims, A...>;
  /// The loop on numbers (every batched argument [B]) for a first-order transform f.
  template <class... A>
  static constexpr bool numbers_loop() {
    if constexpr (std::is_same_v<Strategy, strategy::fused_t>) {
      if constexpr (!detail::fused::scalar_candidate<F, InDims, A...>()) return false;
      else
        return detail::fused_fixed::loop_ok<decltype(detail::fused::run<true>(
                                                std::declval<const F&>(), std::declval<const InDims&>(),
                                                std::declval<const OutDims&>(), 1, std::declval<const A&>()...)),
                                            F, numbers_in<A...>, OutDims, A...>();
    } else if constexpr (!automatic_forms<A...>() || !detail::fused_fixed::first_order<F>()) {
      return false;
    } else {
      return detail::fused_fixed::loop_ok<batched_t<A...>, F, numbers_in<A...>, OutDims, A...>();
    }
  }

  /// The loop on tw::fixed_rows / tw::fixed arguments as given.
  template <class... A>
  static constexpr bool fixed_loop() {
    if constexpr (std::is_same_v<Strategy, strategy::batched_t> || std::is_same_v<Strategy, strategy::packets_t> ||
                  !detail::is_flat_out_dims_v<OutDims>)
      return false;
    else if constexpr (!detail::fused_fixed::applies<F, InDims, A...>()) return false;
    else
      return std::is_same_v<decltype(detail::fused_fixed::run<F, InDims>(std::declval<const F&>(),
                                                                         std::declval<const OutDims&>(), 1,
                                                                         std::declval<const A&>()...)),
                            decltype(std::declval<const vmap_transform&>().on_tensors(std::declval<const A&>()...))>;
  }

 private:
  /// This vmap with in_dims(d) spelled out as in_dims(d, d, ...), one entry per argument, so
  /// that every form of vmap (fused, packets, rows) applies as it does to that spelling.
  template <class... A>
  auto every_argument() const {
    const std::int64_t d = std::get<0>(in.dims);
    using All = in_dims_t<std::conditional_t<true, std::int64_t, A>...>;
    return vmap_transform<F, All, OutDims, Strategy, Floor>{f, All{{(static_cast<void>(sizeof(A)), d)...}}, out, opts};
  }

 public:
  /// vmap with tw::fixed_rows entries or tw::fixed arguments on tensors: each fixed_rows<N>
  /// entry 0, each fixed argument a tensor. When the loop applies but declines at run time
  /// (chunk_size, randomness, no examples), automatic's other forms decline for the same
  /// reasons: batching rules run, and with in_dims for "0 everywhere" this is the instantiation
  /// vmap(f, strategy::batched) makes, not one more copy of the batched form (compile time).
  template <class... A>
  auto on_tensors(const A&... a) const {
    namespace ff = detail::fused_fixed;
    constexpr bool loop = !std::is_same_v<Strategy, strategy::batched_t> &&
                          !std::is_same_v<Strategy, strategy::packets_t> && detail::is_flat_out_dims_v<OutDims> &&
                          ff::applies<F, InDims, A...>();
    using Fallback =
        std::conditional_t<loop && std::is_same_v<Strategy, strategy::automatic_t>, strategy::batched_t, Strategy>;
    const auto plain_in = ff::plain_in_dims(in);
    const vmap_transform<F, std::remove_cvref_t<decltype(plain_in)>, OutDims, Fallback, Floor> v{f, plain_in, out,
                                                                                                 opts};
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return v(ff::plain_arg<InDims, I>(a)...);
    }(std::index_sequence_for<A...>{});
  }

  /// The fused and packet forms (fused_vmap.hpp) take in_dims entries that are ints or none for
  /// plain arguments; nested entries, an int for every argument and pytrees take the batched form.
  template <class... A>
  static constexpr bool fused_applies() {
    if constexpr (std::is_same_v<InDims, in_dims_all_t>) return false;
    else
      return []<class... D>(std::type_identity<std::tuple<D...>>) {
        return ((std::is_integral_v<D> || std::is_same_v<D, none_t>) && ...);
      }(std::type_identity<std::remove_cvref_t<decltype(InDims::dims)>>{}) &&
             (kernels::is_plain_v<A> && ...);
  }

  /// The static checks, before anything else is instantiated: std::true_type, or std::false_type
  /// after reporting the first failure as the compiler's first error line.
  template <class... A>
  static constexpr auto check() {
    if constexpr (!decltype(diagnostics::check_vmap_args<InDims, A...>())::value) return std::false_type{};
    else if constexpr (!decltype(diagnostics::check_callable<"vmap", F, traced_t<A...>, A...>())::value)
      return std::false_type{};
    else return diagnostics::check_vmap_result<OutDims, diagnostics::traced_result_t<F, traced_t<A...>>>();
  }

  /// The argument types f is called with: std::tuple of exact reference types.
  template <class... A>
  static auto traced() {
    if constexpr (is_runtime_function_v<F> || (is_dyn_v<A> || ...)) {
      return std::type_identity<std::tuple<const std::conditional_t<true, dyn::value, A>&...>>{};
    } else {
      constexpr int L = pytree_level<A...>() + 1;
      return []<std::size_t... I>(std::index_sequence<I...>) {
        return std::type_identity<std::tuple<decltype(std::declval<const vmap_transform&>().template wrap<L, I>(
            std::declval<const A&>(), std::int64_t{}, std::uint64_t{}))&...>>{};
      }(std::index_sequence_for<A...>{});
    }
  }
  template <class... A>
  using traced_t = typename decltype(traced<A...>())::type;

  template <class... A>
  auto run_runtime(const A&... a) const {
    constexpr std::size_t N = sizeof...(A);
    std::array<std::optional<std::int64_t>, N> dims;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((dims[I] = [&]() -> std::optional<std::int64_t> {
         const auto d = detail::in_dim_at<InDims, I>(in);
         using D = std::remove_cvref_t<decltype(d)>;
         static_assert(std::is_same_v<D, none_t> || std::is_integral_v<D>, "vmap: nested in_dims need the static path");
         if constexpr (std::is_same_v<D, none_t>) return std::nullopt;
         else return d;
       }()),
       ...);
    }(std::index_sequence_for<A...>{});
    const std::array<dyn::value, N> args{runtime::detail::to_value(a)...};
    if constexpr (!detail::is_flat_out_dims_v<OutDims>) {
      // Nested or tw::none entries: every output batched at 0, then each leaf placed by its
      // entry. A tw::none output is checked where f returns it (batched by this vmap: an error)
      // and kept as f returned it.
      std::vector<dyn::value> kept;
      auto call = [&](const std::array<dyn::value, N>& w) {
        auto r = std::apply(f, w);
        const interpreter_entry& e = retrieve_current_interpreter();
        kept.clear();
        (void)detail::map_out_dim(detail::out_prefix(out), r, [&](auto d, const dyn::value& v) {
          if constexpr (std::is_same_v<decltype(d), none_t>) {
            if (v.level() == e.level && v.get().serial == e.serial) detail::batched_none_output(v.shape());
            kept.push_back(v);
          }
          return 0;
        });
        return r;
      };
      const auto all = dyn::run_vmap(call, dims, shape_t{0}, args, opts.randomness, opts.chunk_size, false);
      std::size_t k = 0;
      return detail::map_out_dim(detail::out_prefix(out), all, [&](auto d, const dyn::value& v) {
        if constexpr (std::is_same_v<decltype(d), none_t>) return kept.at(k++);
        else
          return d == 0 ? v
                        : movedim(v, 0, tensor<double>::normalize_dim(d, static_cast<std::int64_t>(v.shape().size())));
      });
    } else {
      shape_t outs;
      std::apply([&](auto... o) { (outs.push_back(o), ...); }, out.dims);
      auto call = [&](const std::array<dyn::value, N>& w) { return std::apply(f, w); };
      return dyn::run_vmap(call, dims, outs, args, opts.randomness,
                           opts.chunk_size > 0 ? opts.chunk_size : runtime_packet(a...), runtime_fuses(a...));
    }
  }

  /// Whether the runtime path may trace f and run it fused (transforms/runtime/fusion.hpp): a top-level vmap
  /// over tensors, strategy::automatic or strategy::fused, no chunk_size, randomness=error.
  template <class... A>
  bool runtime_fuses(const A&...) const {
    constexpr bool plain = ((is_tensor_v<A> || std::is_arithmetic_v<A>) && ...);
    constexpr bool may = std::is_same_v<Strategy, strategy::automatic_t> || std::is_same_v<Strategy, strategy::fused_t>;
    return plain && may && opts.chunk_size <= 0 && opts.randomness == randomness_kind::error;
  }

  /// The runtime path's packets of examples (fused_vmap.hpp's strategy::packets; there are no
  /// other forms here): the same sizes and the same choice as strategy::automatic on the static
  /// path, for a top-level vmap over tensors without random ops (randomness=error, as there).
  /// 0: the whole batch at once.
  template <class... A>
  std::int64_t runtime_packet(const A&... a) const {
    namespace fz = detail::fused;
    constexpr bool plain = ((is_tensor_v<A> || std::is_arithmetic_v<A>) && ...);
    constexpr bool may =
        std::is_same_v<Strategy, strategy::automatic_t> || std::is_same_v<Strategy, strategy::packets_t>;
    if constexpr (!plain || !may) {
      return 0;
    } else {
      if (opts.randomness != randomness_kind::error) return 0;
      std::int64_t bs = -1;
      bool ok = true;
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (fz::merge_fast<InDims, I>(in, a, bs, ok), ...);
      }(std::index_sequence_for<A...>{});
      if (!ok || bs <= 0) return 0;  // run_vmap reports the problem
      if (std::is_same_v<Strategy, strategy::packets_t>) return fz::packet_size(in, a...);
      return fz::automatic_packet(bs, fz::example_numbers(in, a...));
    }
  }

  /// With chunk_size, runs the batch a chunk at a time and concatenates the outputs.
  /// (randomness=different: one example at a time; randomness=same: each chunk draws what the
  /// whole batch would, tower/core/randomness.hpp.)
  template <int L, class... A>
  auto run_chunked(const A&... a) const {
    const std::int64_t chunk = detail::chunk_for(opts.randomness, opts.chunk_size);
    if (chunk <= 0) return run<L>(a...);
    std::int64_t bs = -1;
    std::string first;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (find_batch_size<I>(a, bs, first), ...);
    }(std::index_sequence_for<A...>{});
    if (bs <= chunk) return run<L>(a...);
    using R = decltype(run<L>(a...));
    std::vector<R> parts;
    const detail::same_draws draws(opts.randomness);
    for (std::int64_t start = 0; start < bs; start += chunk) {
      const std::int64_t len = std::min(chunk, bs - start);
      draws.next();
      parts.push_back([&]<std::size_t... I>(std::index_sequence<I...>) {
        return run<L>(detail::map_in_dim(detail::in_dim_at<InDims, I>(in), a, [&](std::int64_t d, const auto& leaf) {
          return narrow(leaf, d, start, len);
        })...);
      }(std::index_sequence_for<A...>{}));
    }
    return detail::cat_out_chunks<R>(parts, [](const R& p) -> const R& { return p; }, detail::out_prefix(out));
  }

  template <int L, class... A>
  auto run(const A&... a) const {
    interpreter_scope scope(transform_type::vmap, L);
    scope.entry().randomness = opts.randomness;
    const std::uint64_t serial = scope.entry().serial;
    std::int64_t bs = -1;
    std::string first;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (find_batch_size<I>(a, bs, first), ...);
    }(std::index_sequence_for<A...>{});
    detail::require_batched(bs);
    scope.entry().batch_size = bs;
    auto wrapped = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::make_tuple(wrap<L, I>(a, bs, serial)...);
    }(std::index_sequence_for<A...>{});
    auto r = std::apply(f, wrapped);
    return unbatch_all<L>(r, bs, serial);
  }

  template <std::size_t I, class X>
  void find_batch_size(const X& x, std::int64_t& bs, std::string& first) const {
    detail::for_each_in_dim(detail::in_dim_at<InDims, I>(in), x, [&](std::int64_t d, const auto& leaf) {
      static_assert(!std::is_arithmetic_v<std::remove_cvref_t<decltype(leaf)>>,
                    "vmap: a scalar argument cannot be batched; give it tw::none in in_dims");
      detail::merge_batch_size(I, d, shape(leaf), bs, first);
    });
  }

  template <int L, std::size_t I, class X>
  auto wrap(const X& x, std::int64_t bs, std::uint64_t serial) const {
    return detail::map_in_dim(
        detail::in_dim_at<InDims, I>(in), x,
        [&](std::int64_t d, const auto& leaf) {
          using Leaf = std::remove_cvref_t<decltype(leaf)>;
          const auto r = static_cast<std::int64_t>(shape(leaf).size());
          const std::int64_t dd = d < 0 ? d + r : d;
          // A tensor batched along its last dim keeps the batch there (batched::batch_last).
          if constexpr (is_tensor_v<Leaf>)
            if (r >= 2 && dd == r - 1) return batched<Leaf, L>{leaf, bs, serial, true};
          return batched<Leaf, L>{dd == 0 ? leaf : movedim(leaf, dd, 0), bs, serial};
        },
        [&](const auto& leaf) {
          // A struct member given tw::none beside batched ones: the same value for every example.
          using Leaf = std::remove_cvref_t<decltype(leaf)>;
          static_assert(is_tensor_v<Leaf>,
                        "vmap: a struct argument with tw::member_dim entries must have tensor members");
          shape_t one = leaf.shape(), full = one;
          one.insert(one.begin(), 1);
          full.insert(full.begin(), bs);
          return batched<Leaf, L>{Leaf(broadcast_to(reshape(leaf, one), full)), bs, serial};
        });
  }

  template <int L, class R>
  auto unbatch_all(const R& r, std::int64_t bs, std::uint64_t serial) const {
    return detail::map_out_dim(detail::out_prefix(out), r, [&](auto d, const auto& leaf) {
      if constexpr (std::is_same_v<decltype(d), none_t>) return detail::none_output<L>(leaf, serial);
      else return detail::unbatch<L>(leaf, d, bs, serial);
    });
  }
};

template <class F, class I, class O, class S, int Fl>
struct is_runtime_function<vmap_transform<F, I, O, S, Fl>> : is_runtime_function<F> {};

namespace detail {
/// vmap inside a tower composite (see run_at_level's Floor).
template <int Floor, class F, class... D, class... O>
auto vmap_at(F f, in_dims_t<D...> in, out_dims_t<O...> out = {}) {
  // The basis vmaps of jacrev, jacfwd and hessian evaluate f at one point: a random op draws
  // once for every basis direction (randomness=same), and only a user's vmap raises.
  return vmap_transform<F, in_dims_t<D...>, out_dims_t<O...>, strategy::automatic_t, Floor>{
      std::move(f), in, out, {0, randomness_kind::same}};
}
}  // namespace detail

namespace detail {
template <class... Opt>
struct find_in_dims {
  using type = in_dims_t<>;
};
template <class... D, class... Rest>
struct find_in_dims<in_dims_t<D...>, Rest...> {
  using type = in_dims_t<D...>;
};
template <class First, class... Rest>
  requires std::is_integral_v<First>
struct find_in_dims<First, Rest...> {
  using type = in_dims_all_t;
};
template <class First, class... Rest>
struct find_in_dims<First, Rest...> : find_in_dims<Rest...> {};
template <class... Opt>
struct find_out_dims {
  using type = out_dims_t<>;
};
template <class... D, class... Rest>
struct find_out_dims<out_dims_t<D...>, Rest...> {
  using type = out_dims_t<D...>;
};
template <class First, class... Rest>
struct find_out_dims<First, Rest...> : find_out_dims<Rest...> {};

template <class R, class O>
void set_vmap_option(R& r, const O& o) {
  if constexpr (std::is_integral_v<O>) r.in = decltype(r.in){static_cast<std::int64_t>(o)};
  else if constexpr (std::is_same_v<O, randomness_t>) r.opts.randomness = o.kind;
  else if constexpr (std::is_same_v<O, chunk_size_t>) r.opts.chunk_size = o.size;
  else if constexpr (std::is_same_v<O, decltype(r.in)>) r.in = o;
  else if constexpr (std::is_same_v<O, decltype(r.out)>) r.out = o;
}

template <class T>
concept vmap_option = std::is_integral_v<T> || std::is_same_v<T, randomness_t> || std::is_same_v<T, chunk_size_t> ||
                      std::is_same_v<T, parallel_t> || vmap_strategy<T> || requires(T t) { t.dims; };

template <class... Opt>
struct find_strategy {
  using type = strategy::automatic_t;
};
template <class First, class... Rest>
  requires vmap_strategy<First>
struct find_strategy<First, Rest...> {
  using type = First;
};
template <class First, class... Rest>
struct find_strategy<First, Rest...> : find_strategy<Rest...> {};
}  // namespace detail

/// vmap(f, options...): options in any order — in_dims(...) (or an int for every argument),
/// out_dims(...), chunk_size(n), randomness::error / same / different, and the physical form:
/// strategy::automatic (default), ::fused, ::packets, ::batched (fused_vmap.hpp), and
/// tw::parallel / tw::parallel(n) (<tower/parallel.hpp>, docs/parallel.md).
/// \code
/// auto X = tw::tensor<double>{{1, 2}, {3, 4}};
/// auto y = tw::vmap([](auto x, auto w) { return tw::dot(x, w); }, tw::in_dims(0, tw::none))(X, tw::tensor<double>{1, -1});
/// if (y(0) != -1 || y(1) != -1) throw std::runtime_error("vmap");   // one dot per row
/// auto Y = tw::vmap([](auto c) { return c * 2.0; }, tw::in_dims(1), tw::out_dims(1), tw::chunk_size(1))(X);
/// if (Y(0, 1) != 4) throw std::runtime_error("in_dims, out_dims");   // column by column
/// \endcode
template <class F, detail::vmap_option... Opt>
auto vmap(F f, Opt... opt) {
  using In = typename detail::find_in_dims<Opt...>::type;
  using Out = typename detail::find_out_dims<Opt...>::type;
  using S = typename detail::find_strategy<Opt...>::type;
  vmap_transform<F, In, Out, S> r{std::move(f), {}, {}, {}};
  (detail::set_vmap_option(r, opt), ...);
  if constexpr ((std::is_same_v<Opt, parallel_t> || ...)) {
    parallel_t p;
    ((p =
          [&] {
            if constexpr (std::is_same_v<Opt, parallel_t>) return opt;
            else return p;
          }()),
     ...);
    return parallel_vmap_transform<decltype(r)>{std::move(r), p};
  } else {
    return r;
  }
}

}  // namespace tower

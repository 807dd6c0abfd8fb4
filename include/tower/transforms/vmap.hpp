#pragma once
// vmap(f, in_dims, out_dims): f mapped over a batch dimension of its arguments.
//
//   auto f = [](auto x, auto y) { return tw::sum(x * y); };
//   tw::tensor<double> r = tw::vmap(f, tw::in_dims(0, tw::none))(X, y);   // X: [B, d], y: [d] -> [B]
//
// On the static path each batched argument becomes batched<P, L> (batch moved to dim 0) and
// every op inside f runs its batching rule; outputs get the batch moved to out_dims (default 0).
// An output that does not depend on the batch is broadcast along it, as in functorch.
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "dsl/shape_ops.hpp"
#include "tower/interpreter_stack.hpp"
#include "tower/static_values.hpp"
#include "tower/transforms/batch_size.hpp"
#include "tower/transforms/fused_vmap.hpp"
#include "tower/transforms/options.hpp"
#include "tower/transforms/runtime_function.hpp"
#include "tower/transforms/runtime_transforms.hpp"
#include "tower/transforms/static_level.hpp"

namespace tower {

namespace detail {

template <class InDims, std::size_t N>
auto in_dim_at(const InDims& in) {
  if constexpr (std::tuple_size_v<decltype(in.dims)> == 0) return std::int64_t{0};
  else return std::get<N>(in.dims);
}

template <class OutDims, std::size_t N>
std::int64_t out_dim_at(const OutDims& out) {
  if constexpr (std::tuple_size_v<decltype(out.dims)> == 0) return 0;
  else if constexpr (std::tuple_size_v<decltype(out.dims)> == 1) return std::get<0>(out.dims);
  else return std::get<N>(out.dims);
}

/// Brings a static vmap's output back to plain form: batch at out_dim.
template <int L, class R>
auto unbatch(const R& r, std::int64_t out_dim, std::int64_t bs, std::uint64_t serial) {
  if constexpr (is_batched_at_v<R, L>) {
    if (r.serial != serial) throw error("vmap: the function returned a value batched by another vmap call");
    const std::int64_t rank = static_cast<std::int64_t>(shape(r.value).size());
    const std::int64_t d = tensor<double>::normalize_dim(out_dim, rank);
    return d == 0 ? r.value : movedim(r.value, 0, d);
  } else {
    // Not batched: the same value for every example, broadcast along the batch.
    shape_t s = shape(r), one = s, full = s;
    one.insert(one.begin(), 1);
    full.insert(full.begin(), bs);
    auto b = broadcast_to(reshape(r, one), full);
    const std::int64_t d = tensor<double>::normalize_dim(out_dim, static_cast<std::int64_t>(full.size()));
    return d == 0 ? b : movedim(b, 0, d);
  }
}

}  // namespace detail

template <class F, class InDims, class OutDims, class Strategy = strategy::automatic_t>
struct vmap_transform {
  F f;
  InDims in;
  OutDims out;

  template <class... A>
  auto operator()(const A&... a) const {
    static_assert(std::tuple_size_v<decltype(in.dims)> == 0 || std::tuple_size_v<decltype(in.dims)> == sizeof...(A),
                  "vmap: in_dims must have one entry per argument of f");
    if constexpr (is_runtime_function_v<F> || (is_dyn_v<A> || ...)) {
      return run_runtime(a...);
    } else if constexpr (std::is_same_v<Strategy, strategy::fused_t> || std::is_same_v<Strategy, strategy::packets_t>) {
      return detail::try_fused_vmap<Strategy>(f, in, out, a...);  // per example / per packet (fused_vmap.hpp)
    } else {
      constexpr int L = detail::predicted_level<A...>();
      auto batched_run = [&] { return detail::run_at_level<L>("vmap", [&](auto level) { return run<decltype(level)::value>(a...); }); };
      if constexpr (std::is_same_v<Strategy, strategy::automatic_t>) {
        auto r = detail::try_fused_vmap<Strategy>(f, in, out, a...);  // fused / packets when they pay (fused_vmap.hpp)
        if constexpr (std::is_same_v<decltype(r), std::optional<decltype(batched_run())>>)
          if (r) return std::move(*r);
      }
      return batched_run();
    }
  }

 private:
  template <class... A>
  auto run_runtime(const A&... a) const {
    constexpr std::size_t N = sizeof...(A);
    std::array<std::optional<std::int64_t>, N> dims;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((dims[I] = [&]() -> std::optional<std::int64_t> {
         const auto d = detail::in_dim_at<InDims, I>(in);
         if constexpr (std::is_same_v<decltype(d), const none_t>) return std::nullopt;
         else return d;
       }()), ...);
    }(std::index_sequence_for<A...>{});
    std::vector<std::int64_t> outs;
    std::apply([&](auto... o) { (outs.push_back(o), ...); }, out.dims);
    auto call = [&](const std::array<dyn::value, N>& w) { return std::apply(f, w); };
    return dyn::run_vmap(call, dims, outs, std::array<dyn::value, N>{runtime::detail::to_value(a)...});
  }

  template <int L, class... A>
  auto run(const A&... a) const {
    interpreter_scope scope(transform_type::vmap, L);
    const std::uint64_t serial = scope.entry().serial;
    std::int64_t bs = -1;
    std::string first;
    [&]<std::size_t... I>(std::index_sequence<I...>) { (find_batch_size<I>(a, bs, first), ...); }(std::index_sequence_for<A...>{});
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
    const auto d = detail::in_dim_at<InDims, I>(in);
    if constexpr (!std::is_same_v<decltype(d), const none_t>) {
      static_assert(!std::is_arithmetic_v<X>, "vmap: a scalar argument cannot be batched; give it tw::none in in_dims");
      detail::merge_batch_size(I, d, shape(x), bs, first);
    }
  }

  template <int L, std::size_t I, class X>
  auto wrap(const X& x, std::int64_t bs, std::uint64_t serial) const {
    const auto d = detail::in_dim_at<InDims, I>(in);
    if constexpr (std::is_same_v<decltype(d), const none_t>) {
      return x;
    } else {
      const auto r = static_cast<std::int64_t>(shape(x).size());
      const std::int64_t dd = d < 0 ? d + r : d;
      return batched<X, L>{dd == 0 ? x : movedim(x, dd, 0), bs, serial};
    }
  }

  template <int L, class R>
  auto unbatch_all(const R& r, std::int64_t bs, std::uint64_t serial) const {
    if constexpr (requires { std::tuple_size<R>::value; }) {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::make_tuple(detail::unbatch<L>(std::get<I>(r), detail::out_dim_at<OutDims, I>(out), bs, serial)...);
      }(std::make_index_sequence<std::tuple_size_v<R>>{});
    } else {
      return detail::unbatch<L>(r, detail::out_dim_at<OutDims, 0>(out), bs, serial);
    }
  }
};

template <class F, class I, class O, class S>
struct is_runtime_function<vmap_transform<F, I, O, S>> : is_runtime_function<F> {};

/// vmap(f), vmap(f, in_dims(...)), vmap(f, in_dims(...), out_dims(...)), vmap(f, 0).
template <class F>
auto vmap(F f) { return vmap_transform<F, in_dims_t<>, out_dims_t<>>{std::move(f), {}, {}}; }
template <class F, class... D>
auto vmap(F f, in_dims_t<D...> in) { return vmap_transform<F, in_dims_t<D...>, out_dims_t<>>{std::move(f), in, {}}; }
template <class F, class... D, class... O>
auto vmap(F f, in_dims_t<D...> in, out_dims_t<O...> out) {
  return vmap_transform<F, in_dims_t<D...>, out_dims_t<O...>>{std::move(f), in, out};
}
template <class F, class... O>
auto vmap(F f, out_dims_t<O...> out) { return vmap_transform<F, in_dims_t<>, out_dims_t<O...>>{std::move(f), {}, out}; }

/// The same with a physical form forced: tw::strategy::fused, ::packets, ::batched (or ::automatic).
template <class F, vmap_strategy S>
auto vmap(F f, S) { return vmap_transform<F, in_dims_t<>, out_dims_t<>, S>{std::move(f), {}, {}}; }
template <class F, class... D, vmap_strategy S>
auto vmap(F f, in_dims_t<D...> in, S) { return vmap_transform<F, in_dims_t<D...>, out_dims_t<>, S>{std::move(f), in, {}}; }
template <class F, class... D, class... O, vmap_strategy S>
auto vmap(F f, in_dims_t<D...> in, out_dims_t<O...> out, S) {
  return vmap_transform<F, in_dims_t<D...>, out_dims_t<O...>, S>{std::move(f), in, out};
}

}  // namespace tower

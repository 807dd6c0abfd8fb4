#pragma once
// vmap's per-example forms: fused per-example evaluation and packets of examples
// (docs/architecture.md, "vmap has several physical forms, one meaning").
//
//   tw::vmap(f, tw::in_dims(0, tw::none), tw::strategy::fused)(X, w);    // a loop of f over examples
//   tw::vmap(f, tw::in_dims(0, tw::none), tw::strategy::batched)(X, w);  // batching rules, [B, ...] tensors
//   tw::vmap(f, tw::in_dims(0, tw::none))(X, w);                          // strategy::automatic
//
// The batched form runs each op once on a [B, ...] tensor (its batching rule). The fused form runs
// f once per example on plain per-example values and stacks the results, so a chain of
// elementwise ops on scalars stays in registers and nothing batch-sized is materialised:
// vmap(grad(f)) over scalars becomes a loop calling grad(f) on doubles. Both give the same
// numbers (bench/fused_vmap_test.cpp checks it), with the same batch-size errors, up to the last
// bits: with -march=native FMA contraction may differ between the forms' code, and
// transcendentals on tensors come from libmvec (kernels/vector_math.hpp, within 4 ulp) where
// numbers use <cmath>.
//
// A per-example slice of a batched argument is a plain value: a tensor, or a number (`double`,
// `float`) when every batched argument is 1-D, f is a grad transform (vmap(grad(f)),
// vmap(grad_and_value(f))) and every unbatched argument is a number — a function of scalars.
// Unbatched arguments are passed as they are. Caveat: a number is a different C++ type from a
// rank-0 tensor, and ranks are known only at run time, so under vmap(grad(f)) with tensor
// batched arguments and number unbatched ones f is also compiled for numbers; a function that
// cannot compile for numbers (one that calls movedim on its argument, say) needs
// strategy::batched. Other functions never see numbers they were not given.
//
// strategy::packets runs batching rules on packets of examples (about 4096 numbers of each
// batched argument per packet, or chunk_size(n) examples), so a long chain of ops on a large
// batch keeps its intermediates in cache instead of streaming batch-sized tensors through memory
// once per op.
//
// strategy::automatic (the default) first takes fused_fixed.hpp's per-example loop when f is a
// first-order transform and every batched argument is [B] (numbers), or one is [B, N] with
// N <= TOWER_AUTOMATIC_FIXED_ROWS (fixed rows); else packets when a batched argument holds at
// least 2^17 numbers, else batching rules on the whole batch (vmap_transform::plan chooses).
// It never picks the taped per-example form, since that compiles f for numbers or tensor
// examples, which a function written for batched tensors may not accept; strategy::fused asks
// for it. strategy::fused, ::packets and ::batched force a form. A fused vmap or a packet loop
// pushes no interpreter of its own level: f runs as if called directly (per example), or under
// a batched vmap per packet.
//
// Per example on numbers, vmap(grad(f)) runs grad without a tape when it can (grad's
// forward_ok): fused_fixed.hpp's loop of straight-line code over examples, vectorised.
// Otherwise (f mixes in a tensor or a transform's value) grad records its runtime tape per
// example (typed nodes in an arena, ~20 ns per op on doubles).
// Tensor examples always take the tape, which is why automatic never picks the per-example form.

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dsl/shape_ops.hpp"
#include "tower/core/grad_mode.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/kernels/base.hpp"
#include "tower/tensor/lent_rows.hpp"
#include "tower/core/randomness.hpp"
#include "tower/static/values.hpp"
#include "tower/tensor/tensor.hpp"
#include "tower/tensor/batch_size.hpp"
#include "tower/core/transform_options.hpp"

namespace tower {
template <class F, class Argnums, bool HasAux, bool WithValue, int Floor>
struct grad_transform;
template <class F, class InDims, class OutDims, class Strategy, int Floor>
struct vmap_transform;
}  // namespace tower

namespace tower {

namespace strategy {
/// The library chooses (see fused_vmap.hpp).
struct automatic_t {};
/// Run f once per example on plain values and stack the results. On the runtime path (a
/// type-erased f): trace f once and run its per-example program on lanes of examples
/// (transforms/runtime/fusion.hpp), as strategy::automatic does there.
struct fused_t {};
/// Run each op's batching rule on [B, ...] tensors.
struct batched_t {};
/// Run batching rules on packets of examples small enough that every intermediate stays in cache.
struct packets_t {};
/// tw::strategy::automatic, a vmap option (the default).
inline constexpr automatic_t automatic{};
/// tw::strategy::fused: a per-example loop.
inline constexpr fused_t fused{};
/// tw::strategy::batched: batching rules.
inline constexpr batched_t batched{};
/// tw::strategy::packets: batching rules on cache-sized packets of examples (with
/// tw::chunk_size(n), packets of n examples).
/// \code
/// auto f = [](auto x) { return tw::sum(tw::sin(x) * x); };
/// auto X = tw::reshape(tw::arange<double>(8), {4, 2});
/// auto a = tw::vmap(tw::grad(f), tw::strategy::automatic)(X), b = tw::vmap(tw::grad(f), tw::strategy::fused)(X);
/// auto c = tw::vmap(tw::grad(f), tw::strategy::batched)(X), d = tw::vmap(tw::grad(f), tw::strategy::packets)(X);
/// for (double g : {a(3, 1), b(3, 1), c(3, 1), d(3, 1)}) if (std::abs(g - (std::cos(7.0) * 7 + std::sin(7.0))) > 1e-14) throw std::runtime_error("strategy");
/// \endcode
inline constexpr packets_t packets{};
}  // namespace strategy

/// A vmap strategy option (tw::strategy::automatic, fused, batched or packets).
template <class S>
concept vmap_strategy = std::is_same_v<S, strategy::automatic_t> || std::is_same_v<S, strategy::fused_t> ||
                        std::is_same_v<S, strategy::batched_t> || std::is_same_v<S, strategy::packets_t>;

namespace detail {

/// in_dims' entry for argument N (in_dims(d) for every argument, none given: 0).
template <class InDims, std::size_t N>
auto in_dim_at(const InDims& in) {
  if constexpr (std::is_same_v<InDims, in_dims_all_t>) return in.dim;
  else if constexpr (std::tuple_size_v<decltype(in.dims)> == 0) return std::int64_t{0};
  else return std::get<N>(in.dims);
}

/// out_dims' entry for output N of a flat out_dims (one entry: for every output).
template <class OutDims, std::size_t N>
std::int64_t out_dim_at(const OutDims& out) {
  if constexpr (std::tuple_size_v<decltype(out.dims)> == 0) return 0;
  else if constexpr (std::tuple_size_v<decltype(out.dims)> == 1) return std::get<0>(out.dims);
  else return std::get<N>(out.dims);
}

}  // namespace detail

namespace detail::fused {

template <class InDims, std::size_t I>
inline constexpr bool is_batched_arg_v =
    !std::is_same_v<std::remove_cvref_t<decltype(in_dim_at<InDims, I>(std::declval<InDims>()))>, none_t>;

template <class OutDims, std::size_t I>
std::int64_t out_dim(const OutDims& out) {
  if constexpr (std::tuple_size_v<decltype(out.dims)> == 0) return 0;
  else if constexpr (std::tuple_size_v<decltype(out.dims)> == 1) return std::get<0>(out.dims);
  else return std::get<I>(out.dims);
}

template <class X>
inline constexpr bool is_plain_v = kernels::is_plain_v<X>;

/// A value f may return per example: plain numbers and tensors, and tuples of them.
template <class R>
struct plain_result : std::bool_constant<is_plain_v<R>> {};
template <class... R>
struct plain_result<std::tuple<R...>> : std::bool_constant<(is_plain_v<R> && ...)> {};
template <class R>
inline constexpr bool plain_result_v = plain_result<std::remove_cvref_t<R>>::value;

/// One batched argument with its batch moved to the front, cut into examples.
template <class X, bool Scalar>
struct sliced {
  using T = kernels::element_t<X>;
  tensor<T> front;  // batch in dim 0
  shape_t example_shape;
  std::int64_t example_numel = 1;

  sliced(const X& x, std::int64_t dim) {
    const auto r = static_cast<std::int64_t>(x.dim());
    const std::int64_t d = dim < 0 ? dim + r : dim;
    front = d == 0 ? x : kernels::movedim(x, d, 0);
    example_shape.assign(front.shape().begin() + 1, front.shape().end());
    example_numel = numel_of(example_shape);
  }
  auto operator[](std::int64_t b) const {
    if constexpr (Scalar) return front.data()[b];
    else
      return tensor<T>(example_shape,
                       copy_buffer(front.data() + b * example_numel, static_cast<std::size_t>(example_numel)));
  }
};

/// Collects one plain per-example result into a [B, ...] tensor.
template <class R>
struct stacker {
  using T = kernels::element_t<R>;
  std::int64_t bs;
  shape_t example_shape;
  buffer<T> data;

  explicit stacker(std::int64_t b) : bs(b), packets(b) {}
  void put(std::int64_t b, const R& r) {
    if constexpr (kernels::is_plain_scalar_v<R>) {
      if (b == 0) data.resize(static_cast<std::size_t>(bs));
      data[static_cast<std::size_t>(b)] = r;
    } else {
      const auto n = static_cast<std::size_t>(r.numel());
      if (b == 0) {
        example_shape = r.shape();
        data.resize(static_cast<std::size_t>(bs) * n);
      } else if (r.shape() != example_shape) {
        throw error("vmap: f returned values of shapes " + detail::shape_str(example_shape) + " and " +
                    detail::shape_str(r.shape()) + " for different examples");
      }
      std::copy(r.data(), r.data() + n, data.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(b) * n));
    }
  }
  packet_rows<T> packets;  // put_rows: the [B, ...] result, packet by packet
  void put_rows(std::int64_t b0, const tensor<T>& r) { packets.put(b0, r); }

  tensor<T> finish(std::int64_t out_dim) {
    tensor<T> t;
    if (packets.started()) {
      t = packets.whole();
    } else {
      shape_t s = example_shape;
      s.insert(s.begin(), bs);
      t = tensor<T>(std::move(s), std::move(data));
    }
    const std::int64_t d = out_dim_of(out_dim, t.shape());
    return d == 0 ? t : kernels::movedim(t, 0, d);
  }
};

template <class R>
struct stack_all {
  stacker<R> s;
  explicit stack_all(std::int64_t b) : s(b) {}
  void put(std::int64_t b, const R& r) { s.put(b, r); }
  /// Computes packet rows [b0, b0 + n) with compute() and stores them. From the second packet on,
  /// a tensor result is computed in its rows of the output when the kernel that makes it takes
  /// them (lent_rows.hpp's kernel loans); if another value took them, the result is copied over
  /// them (put_rows). Results of several values are always copied: one output's kernel could
  /// take another's rows.
  template <class Compute>
  void put_rows(std::int64_t b0, std::int64_t n, Compute&& compute) {
    if constexpr (is_tensor_v<R>) s.packets.compute(b0, n, compute);
    else s.put_rows(b0, compute());
  }
  template <class OutDims>
  auto finish(const OutDims& out) {
    return s.finish(out_dim_at<OutDims, 0>(out));
  }
};
template <class... R>
struct stack_all<std::tuple<R...>> {
  std::tuple<stacker<R>...> s;
  explicit stack_all(std::int64_t b) : s(stacker<R>(b)...) {}
  void put(std::int64_t b, const std::tuple<R...>& r) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (std::get<I>(s).put(b, std::get<I>(r)), ...);
    }(std::index_sequence_for<R...>{});
  }
  void put_rows(std::int64_t b0, const std::tuple<R...>& r) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (std::get<I>(s).put_rows(b0, std::get<I>(r)), ...);
    }(std::index_sequence_for<R...>{});
  }
  template <class Compute>
  void put_rows(std::int64_t b0, std::int64_t, Compute&& compute) {
    put_rows(b0, compute());
  }
  template <class OutDims>
  auto finish(const OutDims& out) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::make_tuple(std::get<I>(s).finish(out_dim_at<OutDims, I>(out))...);
    }(std::index_sequence_for<R...>{});
  }
};

/// An argument that vmap does not batch: every example sees it as it is.
template <class X>
struct unbatched {
  const X* x;
  const X& get() const { return *x; }
};

/// The argument f sees for example b: a slice of a batched argument, or the argument itself.
template <class InDims, bool Scalar, std::size_t I, class X>
auto prepare(const InDims& in, const X& x) {
  if constexpr (is_batched_arg_v<InDims, I>) {
    static_assert(is_tensor_v<X>, "vmap: a scalar argument cannot be batched; give it tw::none in in_dims");
    return sliced<X, Scalar>(x, in_dim_at<InDims, I>(in));
  } else {
    return unbatched<X>{&x};
  }
}
template <class P>
decltype(auto) example_of(const P& p, std::int64_t b) {
  if constexpr (requires { p.get(); }) return p.get();
  else return p[b];
}

/// The per-example argument types of f (Scalar: batched arguments' examples are numbers).
template <class InDims, bool Scalar, class Seq, class... A>
struct example_types;
template <class InDims, bool Scalar, std::size_t... I, class... A>
struct example_types<InDims, Scalar, std::index_sequence<I...>, A...> {
  template <std::size_t K, class X>
  static auto one() {
    if constexpr (!is_batched_arg_v<InDims, K>) return std::type_identity<const X&>{};
    else if constexpr (Scalar) return std::type_identity<kernels::element_t<X>>{};
    else return std::type_identity<tensor<kernels::element_t<X>>>{};
  }
  template <class F>
  using result_of = std::invoke_result_t<const F&, typename decltype(one<I, A>())::type...>;
};

template <class InDims, std::size_t I, class X>
void merge_one(const InDims& in, const X& x, std::int64_t& bs, std::string& first) {
  if constexpr (is_batched_arg_v<InDims, I>) merge_batch_size(I, in_dim_at<InDims, I>(in), shape(x), bs, first);
}

/// The batch size without building messages; ok = false sends batch_size to the checked path.
template <class InDims, std::size_t I, class X>
void merge_fast(const InDims& in, const X& x, std::int64_t& bs, bool& ok) {
  if constexpr (is_batched_arg_v<InDims, I>) {
    if constexpr (is_tensor_v<X>) {
      const std::int64_t r = x.dim(), d = in_dim_at<InDims, I>(in);
      if (d < -r || d >= r) {
        ok = false;
        return;
      }
      const std::int64_t n = x.shape()[static_cast<std::size_t>(d < 0 ? d + r : d)];
      if (bs < 0) bs = n;
      else if (n != bs) ok = false;
    } else {
      ok = false;
    }
  }
}

/// Batch size, with the batched form's checks and messages.
template <class InDims, class... A>
std::int64_t batch_size(const InDims& in, const A&... a) {
  std::int64_t bs = -1;
  bool ok = true;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (merge_fast<InDims, I>(in, a, bs, ok), ...);
  }(std::index_sequence_for<A...>{});
  if (ok && bs >= 0) return bs;
  bs = -1;
  std::string first;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (merge_one<InDims, I>(in, a, bs, first), ...);
  }(std::index_sequence_for<A...>{});
  require_batched(bs);
  return bs;
}

/// True when every batched argument is 1-D (its examples are numbers).
template <class InDims, class... A>
bool scalar_examples(const A&... a) {
  bool ok = true;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((ok = ok && (!is_batched_arg_v<InDims, I> ||
                  [&] {
                    if constexpr (is_tensor_v<A>) return a.dim() == 1;
                    else return false;
                  }())),
     ...);
  }(std::index_sequence_for<A...>{});
  return ok;
}

/// The fused loop: f on every example, results stacked at out_dims.
template <bool Scalar, class F, class InDims, class OutDims, class... A>
auto run(const F& f, const InDims& in, const OutDims& out, std::int64_t bs, const A&... a) {
  using Seq = std::index_sequence_for<A...>;
  auto prepared = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple(prepare<InDims, Scalar, I>(in, a)...);
  }(Seq{});
  auto call = [&](std::int64_t b) {
    return std::apply([&](const auto&... p) { return f(example_of(p, b)...); }, prepared);
  };
  using R = std::remove_cvref_t<decltype(call(0))>;
  static_assert(plain_result_v<R>,
                "vmap: strategy::fused needs f to return numbers, tensors or tuples of them per example");
  stack_all<R> stacked(bs);
  for (std::int64_t b = 0; b < bs; ++b) stacked.put(b, call(b));
  return stacked.finish(out);
}

/// Examples per packet: about 4096 numbers per example-sized intermediate, so a packet's
/// intermediates (tens of KiB per op) stay in cache and the allocator recycles them.
inline constexpr std::int64_t packet_numbers = 4096;

template <class InDims, std::size_t I, class X>
std::int64_t example_numel(const InDims& in, const X& x) {
  if constexpr (is_batched_arg_v<InDims, I> && is_tensor_v<X>) {
    const std::int64_t r = x.dim(), d0 = in_dim_at<InDims, I>(in), d = d0 < 0 ? d0 + r : d0;
    const std::int64_t n = d >= 0 && d < r ? x.size(d) : 0;
    return n > 0 ? x.numel() / n : 1;
  } else {
    return 1;
  }
}

/// The largest number of numbers in one example of a batched argument.
template <class InDims, class... A>
std::int64_t example_numbers(const InDims& in, const A&... a) {
  std::int64_t per = 1;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((per = std::max(per, example_numel<InDims, I>(in, a))), ...);
  }(std::index_sequence_for<A...>{});
  return per;
}

template <class InDims, class... A>
std::int64_t packet_size(const InDims& in, const A&... a) {
  return std::max<std::int64_t>(8, packet_numbers / example_numbers(in, a...));
}

/// strategy::automatic uses packets when a batched argument holds at least this many numbers
/// (1 MiB of doubles): below it the whole batch's intermediates stay in cache anyway and the
/// fixed cost per op and packet is pure loss (logistic regression, d = 16, B = 4096, is slower
/// in packets; Lennard-Jones with B = 2^20 faster).
inline constexpr std::int64_t packets_min_numbers = std::int64_t{1} << 17;

/// ... and when an example holds at most this many numbers. Wider examples leave few examples
/// per packet, so copying rows in and out and the fixed cost per op and packet are not repaid
/// (logistic regression, d = 256, B = 4096, is faster batched).
inline constexpr std::int64_t packets_max_example_numbers = 64;

/// strategy::automatic's choice for bs examples of per numbers each: the packet size, or 0 for
/// the batched form over the whole batch.
inline std::int64_t automatic_packet(std::int64_t bs, std::int64_t per) {
  const std::int64_t packet = std::max<std::int64_t>(8, packet_numbers / per);
  return bs >= 4 * packet && bs * per >= packets_min_numbers && per <= packets_max_example_numbers ? packet : 0;
}

/// A packet of examples [b0, b0 + n) of a batched argument whose batch is in dim 0: a view of
/// its storage, no copy.
template <class T>
tensor<T> rows(const tensor<T>& front, std::int64_t b0, std::int64_t n) {
  return leading_rows(front, b0, n);
}

/// Batching rules on packets of `packet` examples; results stacked at out_dims.
template <class F, class InDims, class OutDims, class... A>
auto run_packets(const F& f, const InDims& in, const OutDims& out, std::int64_t bs, std::int64_t packet,
                 randomness_kind randomness, const A&... a) {
  using Seq = std::index_sequence_for<A...>;
  // Batched arguments with their batch in dim 0; in_dims for the packets accordingly.
  auto fronts = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple([&]() {
      if constexpr (is_batched_arg_v<InDims, I>) {
        static_assert(is_tensor_v<A>, "vmap: a scalar argument cannot be batched; give it tw::none in in_dims");
        const std::int64_t r = a.dim(), d0 = in_dim_at<InDims, I>(in), d = d0 < 0 ? d0 + r : d0;
        return d == 0 ? a : kernels::movedim(a, d, 0);
      } else {
        return unbatched<A>{&a};
      }
    }()...);
  }(Seq{});
  InDims in0 = in;
  std::apply(
      [](auto&... d) {
        ((d =
              [&] {
                if constexpr (std::is_same_v<std::remove_cvref_t<decltype(d)>, none_t>) return d;
                else return std::remove_cvref_t<decltype(d)>(0);
              }()),
         ...);
      },
      in0.dims);
  const vmap_transform<F, InDims, out_dims_t<>, strategy::batched_t, 0> v{f, in0, {}, {0, randomness}};
  const same_draws draws(randomness);  // randomness=same: each packet draws what the whole batch would
  auto call = [&](std::int64_t b0, std::int64_t n) {
    draws.next();
    return std::apply(
        [&](const auto&... p) {
          return v([&]() -> decltype(auto) {
            if constexpr (requires { p.get(); }) return p.get();
            else return rows(p, b0, n);
          }()...);
        },
        fronts);
  };
  using R = std::remove_cvref_t<decltype(call(0, 1))>;
  stack_all<R> stacked(bs);
  for (std::int64_t b0 = 0; b0 < bs; b0 += packet) {
    const std::int64_t n = std::min(packet, bs - b0);
    stacked.put_rows(b0, n, [&] { return call(b0, n); });
  }
  return stacked.finish(out);
}

template <class F>
struct is_grad_family : std::false_type {};
template <class F, class Argnums, bool HasAux, bool WithValue, int Fl>
struct is_grad_family<grad_transform<F, Argnums, HasAux, WithValue, Fl>> : std::true_type {};

/// Whether examples that are numbers may be passed as numbers (see the header comment): f is a
/// grad transform (vmap(grad(f)), vmap(grad_and_value(f))), batched arguments are tensors,
/// unbatched arguments are numbers, and f returns plain values for numbers.
template <class F, class InDims, class... A, std::size_t... I>
constexpr bool scalar_candidate_args(std::index_sequence<I...>) {
  if constexpr (!((is_batched_arg_v<InDims, I> ? is_tensor_v<A> : kernels::is_plain_scalar_v<A>) && ...)) {
    return false;
  } else {
    using R = typename example_types<InDims, true, std::index_sequence_for<A...>, A...>::template result_of<F>;
    return plain_result_v<R>;
  }
}
// (Function templates, not generic lambdas: clang instantiates a discarded if-constexpr branch
// of a generic lambda, which would compile f for numbers whatever it is.)
template <class F, class InDims, class... A>
constexpr bool scalar_candidate() {
  if constexpr (!is_grad_family<F>::value || sizeof...(A) == 0) return false;
  else return scalar_candidate_args<F, InDims, A...>(std::index_sequence_for<A...>{});
}

/// Where example b of each argument is read: a batched tensor's data (contiguous, batch in dim 0),
/// or the unbatched argument itself.
template <class InDims, class... A>
auto sources(const A&... a) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple([&]() {
      if constexpr (is_batched_arg_v<InDims, I>) return a.data();
      else return &a;
    }()...);
  }(std::index_sequence_for<A...>{});
}

}  // namespace detail::fused

}  // namespace tower

#pragma once
// vmap with tw::fixed_rows<N> in in_dims, or with tw::fixed arguments (fixed.hpp).
//
//   auto forces = tw::vmap(tw::grad(energy), tw::in_dims(tw::fixed_rows<3>));     // R: [B, 3]
//   auto grads = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, tw::fixed_rows<16>, 0));
//   grads(w, X, Y);   // w: tw::fixed<double, 16>, X: [B, 16], Y: [B]  ->  [B, 16]
//
// When f is grad(g), grad_and_value(g), jacrev(g) or jacfwd(g) (g not itself a transform) and g
// runs on numbers and fixed vectors (the transform's forward_ok), vmap runs one loop over examples: row b of each fixed_rows argument is loaded as a
// tw::fixed<T, N>, element b of each other batched argument (1-D) as a number, grad runs without
// a tape, and each result is stored straight into its [B, ...] output. After inlining this is
// the loop one writes by hand, and the compiler vectorises it across examples.
//
// Otherwise (another f, a strategy that asks for batching rules, chunk_size or randomness, other
// shapes) vmap runs as if each fixed_rows<N> entry were 0 and each fixed argument a tensor, after
// checking that a fixed_rows argument is [B, N]. Both give the same numbers and types.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tower/core/force_inline.hpp"
#include "tower/tensor/fixed.hpp"
#include "tower/kernels/base.hpp"
#include "tower/tensor/lent_rows.hpp"
#include "tower/tensor/tensor.hpp"
#include "tower/transforms/static/fused_vmap.hpp"
#include "tower/core/transform_options.hpp"

namespace tower::detail::fused_fixed {

template <class InDims>
using dims_tuple_t = std::remove_cvref_t<decltype(std::declval<InDims>().dims)>;

template <class InDims, std::size_t I>
using entry_t = std::remove_cvref_t<std::tuple_element_t<I, dims_tuple_t<InDims>>>;

/// Whether vmap with these in_dims and arguments goes through this header.
template <class InDims, class... A>
constexpr bool involved() {
  if constexpr (std::is_same_v<InDims, in_dims_all_t>) return (is_fixed_v<A> || ...);
  else
    return []<class... D>(std::type_identity<std::tuple<D...>>) {
      return (is_fixed_rows_v<D> || ...);
    }(std::type_identity<dims_tuple_t<InDims>>{}) ||
           (is_fixed_v<A> || ...);
}

/// The value f sees for argument I per example, on the fixed path.
template <class InDims, std::size_t I, class X>
auto example_type() {
  using D = entry_t<InDims, I>;
  if constexpr (is_fixed_rows_v<D>) return std::type_identity<fixed<kernels::element_t<X>, D::size>>{};
  else if constexpr (std::is_same_v<D, none_t>) return std::type_identity<std::remove_cvref_t<X>>{};
  else return std::type_identity<kernels::element_t<X>>{};
}
template <class InDims, std::size_t I, class X>
using example_t = typename decltype(example_type<InDims, I, X>())::type;

/// Per-example results on this path: numbers and fixed values, or a std::tuple of them.
template <class R>
constexpr std::size_t components() {
  if constexpr (requires { typename std::tuple_size<R>::type; }) return std::tuple_size_v<R>;
  else return 1;
}
template <std::size_t K, class R>
const auto& component(const R& r) {
  if constexpr (requires { typename std::tuple_size<R>::type; }) return std::get<K>(r);
  else return r;
}
template <class C>
inline constexpr bool storable_v = std::is_arithmetic_v<fixeds::scalar_t<C>>;

/// Whether every component of R is storable.
template <class R>
constexpr bool flat_result() {
  return []<std::size_t... K>(std::index_sequence<K...>) {
    return (storable_v<std::remove_cvref_t<decltype(component<K>(std::declval<const R&>()))>> && ...);
  }(std::make_index_sequence<components<R>()>{});
}

/// Whether argument I (of type X) has a type the fixed path takes for its in_dims entry.
template <class InDims, std::size_t I, class X>
constexpr bool arg_ok() {
  using D = entry_t<InDims, I>;
  if constexpr (std::is_same_v<D, none_t>)
    return std::is_arithmetic_v<X> || (is_fixed_v<X> && std::is_arithmetic_v<fixeds::scalar_t<X>>);
  else if constexpr (is_fixed_rows_v<D> || std::is_integral_v<D>) return is_tensor_v<X>;
  else return false;
}

/// A transform with a forward path (grad, grad_and_value, jacrev, jacfwd) of a function that is
/// not itself one.
template <class F>
constexpr bool first_order() {
  if constexpr (!requires { F::forward_path; }) return false;
  else return !requires { std::remove_cvref_t<decltype(std::declval<const F&>().f)>::forward_path; };
}

/// Second order takes this path only on elementwise_jets (jacobian_rows.hpp): forward over
/// forward mode per example carries n + n^2 derivatives on every element through every op,
/// slower than batching rules on R^8 and minutes to compile.
template <class F, class... E>
constexpr bool second_order_on_jets() {
  if constexpr (requires { F::template asks_rows<E...>(); }) return F::template asks_rows<E...>();
  else return false;
}

/// Whether f's forward path takes the per-example values and returns numbers or fixed values.
// (Function templates, not lambdas folded over packs: clang 14 crashes on those.)
template <class F, class InDims, std::size_t... I, class... A>
constexpr bool runs_per_example(std::index_sequence<I...>, std::type_identity<std::tuple<A...>>) {
  if constexpr (!(arg_ok<InDims, I, std::remove_cvref_t<A>>() && ...)) return false;
  else if constexpr (!first_order<F>() && !second_order_on_jets<F, example_t<InDims, I, A>...>()) return false;
  else if constexpr (!F::template forward_ok<example_t<InDims, I, A>...>()) return false;
  else
    return flat_result<decltype(std::declval<const F&>().forward_body(
        true, std::declval<const example_t<InDims, I, A>&>()...))>();
}

/// Whether the fixed path can run at all for these types: in_dims of fixed_rows, ints and none
/// (no nesting), tensors for batched arguments, numbers and fixed values for the others, and f a
/// first-order transform whose tape-free path takes the per-example values, or a Hessian on
/// elementwise_jets.
template <class F, class InDims, class... A>
constexpr bool applies() {
  if constexpr (std::is_same_v<InDims, in_dims_all_t> || !requires { F::forward_path; }) {
    return false;
  } else if constexpr (std::tuple_size_v<dims_tuple_t<InDims>> != sizeof...(A)) {
    return false;
  } else {
    return runs_per_example<F, InDims>(std::index_sequence_for<A...>{}, std::type_identity<std::tuple<A...>>{});
  }
}

/// The batch size if every batched argument has the shape the loop reads ([B, N] for
/// fixed_rows<N>, [B] batched along dim 0 or -1 for an int entry), else -1 (vmap then takes the
/// tensor path, whose checks report any mismatch).
template <class InDims, class... A>
std::int64_t batch_size(const InDims& in, const A&... a) {
  std::int64_t bs = -1;
  bool ok = true;
  auto one = [&]<std::size_t I, class X>(std::integral_constant<std::size_t, I>, const X& x) {
    using D = entry_t<InDims, I>;
    if constexpr (!std::is_same_v<D, none_t>) {
      std::int64_t n = -1;
      if constexpr (!is_tensor_v<X>) {
      } else if constexpr (is_fixed_rows_v<D>) {
        if (x.dim() == 2 && x.size(1) == D::size) n = x.size(0);
      } else if (const std::int64_t d = std::get<I>(in.dims); x.dim() == 1 && (d == 0 || d == -1)) {
        n = x.size(0);
      }
      if (n < 0 || (bs >= 0 && n != bs)) ok = false;
      bs = n;
    }
  };
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (one(std::integral_constant<std::size_t, I>{}, a), ...);
  }(std::index_sequence_for<A...>{});
  return ok && bs > 0 ? bs : -1;
}

/// One output: [B, shape of C] numbers, written example by example.
template <class C>
struct column {
  using T = fixeds::scalar_t<C>;
  static constexpr std::int64_t width = fixeds::numel<C>();
  buffer<T> data;
  std::optional<tensor<T>> rows;  // the rows tw::parallel lends, when it does (lent_rows.hpp)
  T* p;
  /// n examples; a padded block (more examples than it returns) never takes lent rows.
  column(std::int64_t n, bool padded) {
    if (!padded && lent_output<T>(n * width)) [[unlikely]] {
      rows = take_loan(lent_output_slot<T>(), shape(n), p);
    } else {
      data = buffer<T>(static_cast<std::size_t>(n * width));
      p = data.data();
    }
  }
  static shape_t shape(std::int64_t bs) {
    shape_t s{bs};
    if constexpr (is_fixed_v<C>) {
      const shape_t e = fixed_shape<C>();
      s.insert(s.end(), e.begin(), e.end());
    }
    return s;
  }
  [[gnu::always_inline]] inline void store(std::int64_t b, const C& c) {
    T* o = p + b * width;
    [&]<std::size_t... E>(std::index_sequence<E...>) {
      ((o[E] = static_cast<T>(fixeds::flat<E>(c))), ...);
    }(std::make_index_sequence<static_cast<std::size_t>(width)>{});
  }
  tensor<T> finish(std::int64_t bs, std::int64_t out_dim) {
    if (!rows) data.resize(static_cast<std::size_t>(bs * width));  // a padded block's extra examples
    tensor<T> t = rows ? std::move(*rows) : tensor<T>(shape(bs), std::move(data));
    const std::int64_t d = out_dim_of(out_dim, t.shape());
    return d == 0 ? t : kernels::movedim(t, 0, d);
  }
};

/// Numbers per example of argument I on the fixed path (0: unbatched).
template <class InDims, std::size_t I>
constexpr std::int64_t example_width() {
  using D = entry_t<InDims, I>;
  if constexpr (std::is_same_v<D, none_t>) return 0;
  else if constexpr (is_fixed_rows_v<D>) return D::size;
  else return 1;
}

/// The loop over examples alone, flattened: f's body and the stores are inlined into it, while
/// the set-up and the results around it (allocation, padding, movedim) stay ordinary calls, so
/// each instantiation of the loop (one per candidate row size) carries f's body and little else.
template <bool OneCopy, std::int64_t Block, class Put>
[[gnu::flatten]] TOWER_LOOP_FUNCTION void run_blocks(const Put& put, std::int64_t n) {
  // Grad mode on for f's body, set here: with no call between this store and the loop, the
  // compiler knows the mode f reads is on, and drops the selects that a mode unknown inside the
  // loop would put on every tangent.
  enable_grad on;
  std::int64_t i = 0;
  for (; i + Block <= n || (OneCopy && i < n); i += Block) {
    const std::int64_t i0 = std::min(i, n - Block);  // OneCopy: the last block overlaps
    TOWER_NO_ALIAS_LOOP
    for (std::int64_t j = 0; j < Block; ++j) put(i0 + j);
  }
  if constexpr (!OneCopy)
    for (; i < n; ++i) put(i);
}

/// The loop: example b's arguments loaded from the batched tensors, grad's tape-free body, the
/// results stored. Blocks of 64 examples keep the inner loop's trip count fixed (GCC vectorises
/// such loops at -O2); run_blocks, flattened, inlines f and every op into it.
///
/// Each loop over examples is one more copy of f's inlined body for the optimiser, which is most
/// of the compile time of a vmap over a second-order transform (per-example Hessians). Their
/// body is compiled once: the last block overlaps the one before it (examples are independent,
/// so those computed twice are stored twice with the same numbers), and a batch of fewer than 64
/// examples runs as one block whose extra examples repeat the last one and are not stored.
/// A first-order body is cheap to compile and may be called on one example (vmap at batch size
/// 1), so it keeps a loop for the remainder.
template <class F, class InDims, class OutDims, class... A>
auto run(const F& f, const OutDims& out, std::int64_t bs, const A&... a) {
  constexpr std::int64_t block = 64;
  constexpr bool one_copy = !first_order<F>();
  // The whole batch as one padded block (one_copy and bs < block): each batched argument's
  // examples, then copies of its last one.
  const bool padded = one_copy && bs > 0 && bs < block;
  const std::int64_t n = padded ? block : bs;
  auto src = fused::sources<InDims>(a...);
  auto pads = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple([&] {
      using T = std::remove_cvref_t<decltype(*std::get<I>(src))>;
      constexpr std::int64_t w = example_width<InDims, I>();
      buffer<T> p;
      if (w > 0 && padded) {
        p.resize(static_cast<std::size_t>(block * w));
        for (std::int64_t b = 0; b < block; ++b)
          std::memcpy(p.data() + b * w, std::get<I>(src) + std::min(b, bs - 1) * w,
                      sizeof(T) * static_cast<std::size_t>(w));
        std::get<I>(src) = p.data();
      }
      return p;
    }()...);
  }(std::index_sequence_for<A...>{});
  (void)pads;
  const bool prev = is_grad_enabled();
  auto example = [&](std::int64_t b) TOWER_INLINE_LAMBDA {
    return [&]<std::size_t... I>(std::index_sequence<I...>) TOWER_INLINE_LAMBDA {
      return f.forward_body(prev, [&]() TOWER_INLINE_LAMBDA -> decltype(auto) {
        using D = entry_t<InDims, I>;
        const auto* p = std::get<I>(src);
        if constexpr (std::is_same_v<D, none_t>) {
          return *p;
        } else if constexpr (is_fixed_rows_v<D>) {
          const auto* row = p + b * D::size;
          if constexpr (!first_order<F>()) {
            // A Hessian on jets: one block copy (vector moves). N scalar stores, which the
            // seed's vector load would stall on (no store forwarding), cost ~10% of the example.
            // (A first-order body is vectorised across examples, which the copy would prevent.)
            fixed<std::remove_cvref_t<decltype(*p)>, D::size> x;
            std::memcpy(x.e.data(), row, sizeof(x.e));
            return x;
          } else {
            return fixeds::generate<example_t<InDims, I, A>>(
                [&](auto k) TOWER_INLINE_LAMBDA { return row[decltype(k)::value]; });
          }
        } else {
          return p[b];
        }
      }()...);
    }(std::index_sequence_for<A...>{});
  };
  using R = std::remove_cvref_t<decltype(example(0))>;
  constexpr std::size_t C = components<R>();
  return [&]<std::size_t... K>(std::index_sequence<K...>) TOWER_INLINE_LAMBDA {
    static_assert((storable_v<std::remove_cvref_t<decltype(component<K>(std::declval<const R&>()))>> && ...),
                  "vmap: internal: the fixed path's per-example results must be numbers or tw::fixed values");
    std::tuple<column<std::remove_cvref_t<decltype(component<K>(std::declval<const R&>()))>>...> cols{
        column<std::remove_cvref_t<decltype(component<K>(std::declval<const R&>()))>>(n, padded)...};
    auto put = [&](std::int64_t b) TOWER_INLINE_LAMBDA {
      const R r = example(b);
      (std::get<K>(cols).store(b, component<K>(r)), ...);
    };
    run_blocks<one_copy, block>(put, n);
    auto results = std::make_tuple(std::get<K>(cols).finish(bs, out_dim_at<OutDims, K>(out))...);
    if constexpr (C == 1 && !requires { typename std::tuple_size<R>::type; }) return std::get<0>(std::move(results));
    else return results;
  }(std::make_index_sequence<C>{});
}

/// The in_dims for the tensor path: each fixed_rows<N> entry becomes 0.
template <class InDims>
auto plain_in_dims(const InDims& in) {
  if constexpr (std::is_same_v<InDims, in_dims_all_t>) {
    return in;
  } else if constexpr ([]<class... D>(std::type_identity<std::tuple<D...>>) {
                         return (is_fixed_rows_v<D> && ...);
                       }(std::type_identity<dims_tuple_t<InDims>>{})) {
    return in_dims_t<>{};  // every entry 0: vmap's default, the same instantiation as vmap(f)
  } else {
    return std::apply(
        [](const auto&... d) {
          return in_dims_t<
              std::conditional_t<is_fixed_rows_v<decltype(d)>, std::int64_t, std::remove_cvref_t<decltype(d)>>...>{
              {[&] {
                if constexpr (is_fixed_rows_v<decltype(d)>) return std::int64_t{0};
                else return d;
              }()...}};
        },
        in.dims);
  }
}

/// An argument for the tensor path: a fixed value as a tensor, after checking a fixed_rows
/// argument's shape (a tensor, or a runtime value holding one).
template <class InDims, std::size_t I, class X>
auto plain_arg(const X& x) {
  if constexpr (!std::is_same_v<InDims, in_dims_all_t>) {
    using D = entry_t<InDims, I>;
    if constexpr (is_fixed_rows_v<D>) {
      static_assert(is_tensor_v<X> || is_dyn_v<X>,
                    "vmap: an argument with in_dims entry tw::fixed_rows<N> must be a tensor of shape [B, N]");
      if (const shape_t s = shape(x); s.size() != 2 || s[1] != D::size)
        throw error("vmap: in_dims entry fixed_rows<" + std::to_string(D::size) + "> needs a tensor of shape [B, " +
                    std::to_string(D::size) + "], got " + detail::shape_str(x.shape()));
    }
  }
  if constexpr (is_fixed_v<X>) return to_tensor(x);
  else return x;
}

}  // namespace tower::detail::fused_fixed

// Automatic fixed rows: strategy::automatic takes the fixed path on its own when exactly one
// batched argument is a [B, N] tensor with N <= TOWER_AUTOMATIC_FIXED_ROWS (default 8), batched
// along dim 0, every other batched argument is [B] and every unbatched one a number: vmap runs as
// if that argument's in_dims entry were fixed_rows<N>. The spelling a JAX user writes,
// vmap(grad(energy))(R) with R of shape [B, 3], is then one loop over examples at hand-written
// speed (docs/performance.md), with N known only at run time.
//
// This instantiates f's tape-free path on tw::fixed values for every N up to the limit, so f
// must compile on them whenever it compiles on tensors: ops without a rule for fixed values
// return dual_unsupported, composites whose branches differ give way as a whole
// (branch_result_t), a size mismatch between fixed values of duals is dual_unsupported, and a
// fixed of duals handed to type-erased code makes a dyn::value (dyn_value.hpp); in each case vmap
// declines and runs batching rules. An op that takes fixed values only in part throws a
// tower::error on the first example, and batching rules run f instead (vmap_transform::run_plan).
// f may put such a result beside one the loop takes (dual_unsupported, scalar_dual.hpp): in a
// braced list to stack or cat, a conditional expression (both decline), or a variable assigned
// one after the other (raises on the first example). A braced std::vector of both, or a lambda
// returning both, cannot compile on these values (C++ deduces one type there): such an f needs
// strategy::batched.
// The op tables build and pass at the limit (tests/automatic_rows_test.cpp).
// Define TOWER_AUTOMATIC_FIXED_ROWS (the same in every translation unit of a program) to another
// limit: 8 covers per-example Hessians on R^8 (vmap(hessian(f))(X) on elementwise jets); each
// candidate N is one more instantiation of f's loop (docs/performance.md has the compile times);
// 0 turns it off. strategy::batched always runs batching rules.
#ifndef TOWER_AUTOMATIC_FIXED_ROWS
#define TOWER_AUTOMATIC_FIXED_ROWS 8
#endif

namespace tower::detail::fused_fixed {

/// InDims (of ints and none, or empty for "0 everywhere") spelled out, one entry per argument,
/// with entry P (if any) replaced by fixed_rows<N>. (A function template, not a generic lambda:
/// clang would instantiate fixed_rows<N> in the discarded branch.)
template <std::size_t J, std::size_t P, int N, class InDims>
auto rows_entry(const InDims& in) {
  if constexpr (J == P) return fixed_rows_t<N>{};
  else return in_dim_at<InDims, J>(in);
}
template <std::size_t P, int N, class InDims, std::size_t... I>
auto rows_at(const InDims& in, std::index_sequence<I...>) {
  return in_dims_t<decltype(rows_entry<I, P, N>(in))...>{{rows_entry<I, P, N>(in)...}};
}

/// Whether the loop runs f with in_dims In and gives the result type R of the form it stands in for.
template <class R, class F, class In, class OutDims, class... A>
constexpr bool loop_ok() {
  if constexpr (!applies<F, In, A...>()) return false;
  else
    return std::is_same_v<decltype(run<F, In>(std::declval<const F&>(), std::declval<const OutDims&>(), 1,
                                              std::declval<const A&>()...)),
                          R>;
}

/// in_dims "0 everywhere" (or of ints and none) spelled out: the loop on numbers.
template <class InDims, class... A>
using numbers_in_t = decltype(rows_at<sizeof...(A), 0>(std::declval<const InDims&>(), std::index_sequence_for<A...>{}));

/// strategy::automatic's rows (the rule above): argument P is [B, n] batched along dim 0 and
/// the loop runs for that n: its batch size (and plan.rows_arg, plan.rows set), else -1.
template <class R, std::size_t P, int N, class F, class InDims, class OutDims, class... A>
std::int64_t rows_batch(const InDims& in, std::int64_t n, const A&... a) {
  if constexpr (N > TOWER_AUTOMATIC_FIXED_ROWS) return -1;
  else if (n != N) return rows_batch<R, P, N + 1, F, InDims, OutDims>(in, n, a...);
  else if constexpr (!loop_ok<R, F, decltype(rows_at<P, N>(in, std::index_sequence_for<A...>{})), OutDims, A...>())
    return -1;
  else return batch_size(rows_at<P, N>(in, std::index_sequence_for<A...>{}), a...);
}

/// The argument whose rows the loop reads and their size, with the batch size, or bs = -1.
struct rows_choice {
  std::int64_t bs = -1;
  std::size_t arg = 0;
  std::int64_t rows = 0;
};
template <class R, std::size_t P, class F, class InDims, class OutDims, class... A>
rows_choice choose_rows(const InDims& in, const A&... a) {
  if constexpr (P >= sizeof...(A) || TOWER_AUTOMATIC_FIXED_ROWS < 1) {
    return {};
  } else {
    using X = std::remove_cvref_t<std::tuple_element_t<P, std::tuple<A...>>>;
    if constexpr (is_tensor_v<X> && fused::is_batched_arg_v<InDims, P>) {
      const auto& x = std::get<P>(std::tie(a...));
      if (const std::int64_t d = in_dim_at<InDims, P>(in); x.dim() == 2 && (d == 0 || d == -2))
        if (const std::int64_t bs = rows_batch<R, P, 1, F, InDims, OutDims>(in, x.size(1), a...); bs > 0)
          return {bs, P, x.size(1)};
    }
    return choose_rows<R, P + 1, F, InDims, OutDims>(in, a...);
  }
}

/// Runs the loop on argument P's rows of n numbers (choose_rows' choice).
template <class R, std::size_t P, int N, class F, class InDims, class OutDims, class... A>
R run_rows(const F& f, const InDims& in, const OutDims& out, const rows_choice& c, const A&... a) {
  if constexpr (P >= sizeof...(A)) {
    throw error("vmap: internal: no loop for the chosen rows");
  } else if constexpr (N > TOWER_AUTOMATIC_FIXED_ROWS || !(is_tensor_v<std::tuple_element_t<P, std::tuple<A...>>> &&
                                                           fused::is_batched_arg_v<InDims, P>)) {
    return run_rows<R, P + 1, 1>(f, in, out, c, a...);
  } else {
    using In = decltype(rows_at<P, N>(in, std::index_sequence_for<A...>{}));
    if constexpr (loop_ok<R, F, In, OutDims, A...>())
      if (c.arg == P && c.rows == N) return run<F, In>(f, out, c.bs, a...);
    return run_rows<R, P, N + 1>(f, in, out, c, a...);
  }
}

}  // namespace tower::detail::fused_fixed

namespace tower::detail {

/// The physical form a static vmap runs on its arguments (vmap_transform::plan chooses it,
/// vmap_transform::run_plan runs it): batching rules on [B, ...] tensors (batch-last included,
/// with chunks and randomness); the loop above, whose examples are numbers (rows 0) or rows of a
/// [B, rows] argument read as tw::fixed values; f once per example on numbers or tensors with its
/// tape (strategy::fused); or batching rules on packets of examples (fused_vmap.hpp).
struct vmap_plan {
  enum form_t { batched, loop, per_example, packets };
  form_t form = batched;
  std::int64_t bs = 0;
  std::size_t rows_arg = 0;  // loop: the argument read as rows (automatic; rows > 0)
  std::int64_t rows = 0;
  std::int64_t packet = 0;  // packets: examples per packet
  bool scalar = false;      // per_example: examples are numbers
};

}  // namespace tower::detail

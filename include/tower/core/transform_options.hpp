#pragma once
// Transform options, spelled as in torch.func: in_dims, out_dims, none, argnums, has_aux.
//
//   tw::vmap(f, tw::in_dims(tw::none, 0, -1), tw::out_dims(0));
//   tw::grad(f, tw::argnums<0, 2>, tw::has_aux);
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "tower/core/error.hpp"
#include "tower/core/interpreter_stack.hpp"

namespace tower {

/// An argument that vmap does not batch.
struct none_t {};
/// tw::none: an in_dims entry for an argument every example shares (functorch's None).
/// \code
/// auto y = tw::vmap([](auto x, auto c) { return x * c; }, tw::in_dims(0, tw::none))(tw::tensor<double>{1, 2}, 10.0);
/// if (y(1) != 20) throw std::runtime_error("none");
/// \endcode
inline constexpr none_t none{};

/// An in_dims entry for a [B, N] tensor: batch in dim 0, and f sees each row as a
/// tw::fixed<T, N> (fixed.hpp), a vector whose size the compiler knows. vmap(grad(f)) then runs
/// grad's tape-free path per example in one loop (fused_fixed.hpp). The result is the same as
/// with entry 0; where that path does not apply, vmap runs f on tensors with entry 0.
/// \code
/// auto energy = [](auto r) { return 1.0 / tw::sum(r * r); };   // gradient -2 r / |r|^4
/// auto R = tw::tensor<double>{{1, 0, 0}, {0, 2, 0}};
/// auto forces = tw::vmap(tw::grad(energy), tw::in_dims(tw::fixed_rows<3>))(R);   // R: [B, 3]
/// if (forces.shape() != tw::shape_t{2, 3} || forces(0, 0) != -2 || forces(1, 1) != -4.0 / 16) throw std::runtime_error("fixed_rows");
/// \endcode
template <int N>
struct fixed_rows_t {
  static_assert(N >= 1, "tw::fixed_rows: the row size must be at least 1");
  static constexpr int size = N;
};
/// tw::fixed_rows<N>: the in_dims entry of fixed_rows_t<N>.
template <int N>
inline constexpr fixed_rows_t<N> fixed_rows{};
/// Whether D is a tw::fixed_rows<N> entry.
template <class D>
struct is_fixed_rows : std::false_type {};
template <int N>
struct is_fixed_rows<fixed_rows_t<N>> : std::true_type {};
template <class D>
inline constexpr bool is_fixed_rows_v = is_fixed_rows<std::remove_cvref_t<D>>::value;

/// An in_dims entry for one member of a Hana struct argument: an int or tw::none. in_dims takes
/// a struct of the argument's template over member_dim (torch.func: a dict of in_dims for a dict
/// argument); members given tw::none are the same for every example.
/// \code
/// #include <boost/hana/define_struct.hpp>
/// template <class T> struct params { BOOST_HANA_DEFINE_STRUCT(params, (T, a), (T, b)); };
/// int main() {
///   const tw::tensor<double> A({2, 3}, {1, 2, 3, 4, 5, 6}), c({3}, {10, 20, 30});
///   auto f = [](const auto& p) { return tw::sum(p.a * p.b); };
///   // a batched along 0 (2 examples), b the same for both: [1*10 + 2*20 + 3*30, 4*10 + 5*20 + 6*30]
///   const auto r = tw::vmap(f, tw::in_dims(params<tw::member_dim>{0, tw::none}))(params<tw::tensor<double>>{A, c});
///   return r.data()[0] == 140.0 && r.data()[1] == 320.0 ? 0 : 1;
/// }
/// \endcode
struct member_dim {
  std::optional<std::int64_t> dim = 0;  // a member left out batches along 0, as in_dims' default
  constexpr member_dim() = default;
  constexpr member_dim(std::int64_t d) : dim(d) {}
  constexpr member_dim(none_t) : dim(std::nullopt) {}
};

namespace detail {
/// A struct template instance over member_dim (an in_dims entry for a Hana struct argument).
template <class D>
inline constexpr bool is_member_dims_v = false;
template <template <class> class S>
inline constexpr bool is_member_dims_v<S<member_dim>> = true;

template <class D>
using dim_entry_t = std::conditional_t<std::is_same_v<D, none_t> || is_fixed_rows_v<D>, D, std::int64_t>;

/// An in_dims entry: an int, tw::none, or (for a tuple-like argument) a std::tuple of entries.
template <class D>
struct in_dim_entry {
  using type = dim_entry_t<D>;
};
template <template <class> class S>
struct in_dim_entry<S<member_dim>> {
  using type = S<member_dim>;
};
template <class... D>
struct in_dim_entry<std::tuple<D...>> {
  using type = std::tuple<typename in_dim_entry<D>::type...>;
};
template <class D>
using in_dim_entry_t = typename in_dim_entry<D>::type;

template <class D>
inline constexpr bool is_in_dim_entry_v =
    std::is_integral_v<D> || std::is_same_v<D, none_t> || is_fixed_rows_v<D> || is_member_dims_v<D>;
template <class... D>
inline constexpr bool is_in_dim_entry_v<std::tuple<D...>> = (is_in_dim_entry_v<D> && ...);

template <class D>
auto to_in_dim_entry(const D& d) {
  if constexpr (std::is_same_v<D, none_t> || is_fixed_rows_v<D> || is_member_dims_v<D>) return d;
  else if constexpr (std::is_integral_v<D>) return static_cast<std::int64_t>(d);
  else return std::apply([](const auto&... e) { return std::make_tuple(to_in_dim_entry(e)...); }, d);
}
}  // namespace detail

/// Per-argument batch dims of vmap: an int (negative counts from the end), tw::none, or
/// tw::fixed_rows<N>; for a tuple-like argument, a std::tuple of entries per element (nested pytrees).
/// A single int means every argument: tw::in_dims(0) on f(x, y) is tw::in_dims(0, 0).
template <class... D>
struct in_dims_t {
  std::tuple<D...> dims;
};
/// in_dims(d...): one entry per argument of f, `tw::in_dims(tw::none, 0, -1)`; a single int is
/// every argument.
/// \code
/// auto y = tw::vmap([](auto x, auto w) { return x * w; }, tw::in_dims(-1, tw::none))(tw::tensor<double>{{1, 2}}, 3.0);
/// if (y.shape() != tw::shape_t{2, 1} || y(1, 0) != 6) throw std::runtime_error("in_dims");   // batch from the last dim
/// \endcode
template <class... D>
  requires(detail::is_in_dim_entry_v<D> && ...)
constexpr auto in_dims(D... d) {
  return in_dims_t<detail::in_dim_entry_t<D>...>{{detail::to_in_dim_entry(d)...}};
}

namespace detail {
/// in_dims(d) with a single int: for a function of several arguments it means d for every
/// argument (vmap_transform spells it out as one entry per argument).
template <class InDims>
inline constexpr bool is_single_int_in_dims_v = false;
template <>
inline constexpr bool is_single_int_in_dims_v<in_dims_t<std::int64_t>> = true;
}  // namespace detail

/// Per-output dims where vmap puts the batch: one entry per element of a tuple-like result (or a
/// single entry for the whole result). An entry is an int, tw::none (the output does not depend
/// on the batch and comes back as it is) or a std::tuple of entries for a tuple-like output
/// (nested: out_dims as a pytree prefix of the result, as in torch.func).
template <class... D>
struct out_dims_t {
  std::tuple<D...> dims;
};
namespace detail {
template <class D>
inline constexpr bool is_out_dim_entry_v = std::is_integral_v<D> || std::is_same_v<D, none_t>;
template <class... D>
inline constexpr bool is_out_dim_entry_v<std::tuple<D...>> = (is_out_dim_entry_v<D> && ...);
/// Whether every out_dims entry is an int (vmap's fused forms take only those).
template <class OutDims>
inline constexpr bool is_flat_out_dims_v = false;
template <class... D>
inline constexpr bool is_flat_out_dims_v<out_dims_t<D...>> = (std::is_integral_v<D> && ...);
}  // namespace detail
/// out_dims(d...): one dim per output of f, where the batch goes (`tw::out_dims(0, -1)`).
/// \code
/// auto y = tw::vmap([](auto x) { return tw::stack({x, -x}); }, tw::out_dims(-1))(tw::tensor<double>{1, 2, 3});
/// if (y.shape() != tw::shape_t{2, 3} || y(1, 2) != -3) throw std::runtime_error("out_dims");
/// \endcode
template <class... D>
  requires(detail::is_out_dim_entry_v<D> && ...)
constexpr auto out_dims(D... d) {
  return out_dims_t<detail::in_dim_entry_t<D>...>{{detail::to_in_dim_entry(d)...}};
}

/// vmap(f, 1): the same batch dim for every argument.
struct in_dims_all_t {
  std::int64_t dim;
  std::tuple<> dims{};  // (not a per-argument list)
};

/// vmap's policy for random ops (torch.func's randomness=), applied to every random op inside
/// f, whether or not the vmap batches its argument (dsl/random.hpp):
/// - randomness::error (the default): a random op raises tower::error;
/// - randomness::same: one draw shared by every example;
/// - randomness::different: each example draws its own values (f runs one example at a time).
/// chunk_size does not change the numbers in any mode.
/// \code
/// auto noisy = [](auto x) { return x + tw::randn_like(x); };
/// auto X = tw::zeros<double>({2, 3});
/// auto d = tw::vmap(noisy, tw::randomness::different)(X);  // [B, d]: rows differ
/// auto s = tw::vmap(noisy, tw::randomness::same)(X);       // [B, d]: x_b + one noise vector
/// if (d(0, 0) == d(1, 0) || s(0, 0) != s(1, 0)) throw std::runtime_error("randomness");
/// \endcode
struct randomness_t {
  randomness_kind kind;
};
namespace randomness {
/// A random op inside vmap raises tower::error (the default).
inline constexpr randomness_t error{randomness_kind::error};
/// Every example gets the same random values.
inline constexpr randomness_t same{randomness_kind::same};
/// Every example gets its own random values.
inline constexpr randomness_t different{randomness_kind::different};
}  // namespace randomness

/// vmap processes the batch in chunks of this many examples (0, the default: all at once); same
/// results. A negative size raises tower::error.
struct chunk_size_t {
  std::int64_t size;
};
/// chunk_size(n): a vmap option, at most n examples at a time (`tw::vmap(f, tw::chunk_size(64))`).
/// \code
/// auto f = [](auto x) { return tw::sum(x * x); };
/// auto X = tw::reshape(tw::arange<double>(6), {3, 2});
/// if (tw::vmap(f, tw::chunk_size(2))(X)(2) != 16 + 25) throw std::runtime_error("chunk_size");
/// \endcode
constexpr chunk_size_t chunk_size(std::int64_t n) {
  if (n < 0)
    throw error("vmap: chunk_size(" + std::to_string(n) +
                "): the size must be positive, or 0 for the whole batch at once");
  return {n};
}

/// vmap runs its batch in grains on oneTBB's worker threads, with the bits of the serial vmap:
/// tw::parallel on every core, tw::parallel(n) on n threads, tw::parallel(n, grain) with grain
/// examples per task (0: automatic). Needs #include <tower/parallel.hpp> and oneTBB (-ltbb);
/// see docs/parallel.md.
struct parallel_t {
  int threads = 0;         // 0: the calling thread's arena (every core by default)
  std::int64_t grain = 0;  // 0: automatic
  constexpr parallel_t operator()(int n, std::int64_t grain_size = 0) const {
    if (n < 1) throw error("vmap: tw::parallel(" + std::to_string(n) + "): the thread count must be at least 1");
    if (grain_size < 0)
      throw error("vmap: tw::parallel: the grain size must be at least 0, got " + std::to_string(grain_size));
    return {n, grain_size};
  }
};
/// tw::parallel: the vmap option for every core; tw::parallel(n, grain) for n threads.
/// \code
/// #include <tower/parallel.hpp>   // and -ltbb
/// auto X = tw::reshape(tw::arange<double>(4096), {2048, 2});
/// auto y = tw::vmap([](auto x) { return tw::sum(x * x); }, tw::parallel(2, 512))(X);
/// if (y(2047) != 4094.0 * 4094 + 4095.0 * 4095) throw std::runtime_error("parallel");
/// \endcode
inline constexpr parallel_t parallel{};

/// vmap's run-time options, gathered from chunk_size and randomness.
struct vmap_options {
  std::int64_t chunk_size = 0;
  randomness_kind randomness = randomness_kind::error;
};

/// Which arguments grad differentiates: tw::argnums<0>, tw::argnums<0, 2>.
template <int... I>
struct argnums_t {
  static constexpr std::size_t count = sizeof...(I);
};
/// tw::argnums<I...>: the arguments grad, jacrev, jacfwd and hessian differentiate.
/// \code
/// auto g = tw::grad([](auto x, auto y) { return x * y; }, tw::argnums<1>)(3.0, 5.0);   // d/dy = x
/// if (g != 3.0) throw std::runtime_error("argnums");
/// \endcode
template <int... I>
inline constexpr argnums_t<I...> argnums{};

/// f returns (value, aux); aux comes back untouched beside the gradient.
struct has_aux_t {};
/// tw::has_aux: the option for a function that returns (value, aux).
/// \code
/// auto f = [](auto x) { return std::make_tuple(x * x, 7.0); };
/// auto [g, aux] = tw::grad(f, tw::has_aux)(3.0);
/// if (g != 6.0 || aux != 7.0) throw std::runtime_error("has_aux");
/// \endcode
inline constexpr has_aux_t has_aux{};

}  // namespace tower

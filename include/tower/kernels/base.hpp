#pragma once
// Base kernels: the plain computations at the bottom of every dispatch, on `double`, `float`
// and `tensor<T>`. They know nothing about transforms. A scalar with a scalar gives a scalar;
// anything with a tensor gives a tensor (NumPy broadcasting).
#include <algorithm>
#include <bit>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "tower/core/force_inline.hpp"
#include "tower/core/error.hpp"
#include "tower/kernels/transpose.hpp"
#include "tower/kernels/vector_math.hpp"
#include "tower/tensor/lent_rows.hpp"
#include "tower/tensor/tensor.hpp"

// Before a loop whose stores alias none of its loads: -O2's cost model does not vectorise a loop
// that would need a runtime alias check.
#if defined(__clang__)
#define TOWER_NO_ALIAS_LOOP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TOWER_NO_ALIAS_LOOP _Pragma("GCC ivdep")
#else
#define TOWER_NO_ALIAS_LOOP
#endif

// TOWER_NO_ALIAS_LOOP for a block of 8 whose body reaches memory through pointers that are not
// __restrict (for_each_broadcast's body). clang fully unrolls a loop of 8 before its loop
// vectoriser runs, which drops the loop's assume_safety; its SLP vectoriser then sees stores that
// may alias the next loads and leaves the block scalar (logistic regression's broadcast products
// ran 2x slower than under g++). Kept a loop, the vectoriser takes it. g++ needs nothing more.
#if defined(__clang__)
#define TOWER_NO_ALIAS_BLOCK _Pragma("clang loop vectorize(assume_safety) unroll(disable)")
#else
#define TOWER_NO_ALIAS_BLOCK TOWER_NO_ALIAS_LOOP
#endif

// Before a loop over blocks of 8 elements whose body is a loop over the block's 8 (the form
// g++'s -O2 cost model vectorises): clang's loop vectoriser would vectorise across the blocks
// instead, with gathers and scatters at stride 8 (jacrev's diagonal products ran 2x slower);
// left alone, it makes one block's straight-line code into vectors (SLP).
#if defined(__clang__)
#define TOWER_LOOP_OF_BLOCKS _Pragma("clang loop vectorize(disable)")
#else
#define TOWER_LOOP_OF_BLOCKS
#endif

namespace tower::kernels {

/// Appends f(0), ..., f(n - 1) to `outs`: one vector per component when f returns a std::tuple,
/// else one. Computed a block at a time into local buffers, then appended: the block's loop has a
/// fixed trip count and stores only to the buffers, so -O2 vectorises it when f is arithmetic,
/// and nothing is zero-filled first. (vmap's per-example loop on numbers uses it too.)
template <class F, class... T, class... Alloc>
void append_generated(std::int64_t n, F&& f, std::vector<T, Alloc>&... outs) {
  constexpr std::int64_t block = 64;
  auto put = [&]<std::size_t... K>(std::index_sequence<K...>, const auto& r, auto&& store) {
    if constexpr (sizeof...(T) == 1 && !requires { std::tuple_size<std::remove_cvref_t<decltype(r)>>::value; })
      (store(std::integral_constant<std::size_t, K>{}, r), ...);
    else (store(std::integral_constant<std::size_t, K>{}, std::get<K>(r)), ...);
  };
  constexpr auto ks = std::index_sequence_for<T...>{};
  (outs.reserve(outs.size() + static_cast<std::size_t>(n)), ...);
  std::tuple<std::array<T, block>...> buf;
  std::int64_t i = 0;
  for (; i + block <= n; i += block) {
    TOWER_NO_ALIAS_LOOP
    for (std::int64_t j = 0; j < block; ++j)
      put(ks, f(i + j), [&](auto k, const auto& v) {
        std::get<decltype(k)::value>(buf)[static_cast<std::size_t>(j)] =
            static_cast<std::tuple_element_t<decltype(k)::value, std::tuple<T...>>>(v);
      });
    [&]<std::size_t... K>(std::index_sequence<K...>) { (append_copy(outs, std::get<K>(buf).data(), block), ...); }(ks);
  }
  for (; i < n; ++i) {
    auto outs_t = std::forward_as_tuple(outs...);
    put(ks, f(i), [&](auto k, const auto& v) {
      std::get<decltype(k)::value>(outs_t).push_back(
          static_cast<std::tuple_element_t<decltype(k)::value, std::tuple<T...>>>(v));
    });
  }
}

/// The values f(0), ..., f(n - 1) (append_generated).
template <class T, class F>
buffer<T> generate(std::int64_t n, F&& f) {
  buffer<T> out;
  append_generated(n, std::forward<F>(f), out);
  return out;
}

template <class X>
inline constexpr bool is_plain_scalar_v = std::is_floating_point_v<std::remove_cvref_t<X>>;
template <class X>
inline constexpr bool is_plain_v = is_plain_scalar_v<X> || is_tensor_v<X>;

template <class X>
struct element_of {
  using type = std::remove_cvref_t<X>;
};
template <class T>
struct element_of<tensor<T>> {
  using type = T;
};
template <class X>
using element_t = typename element_of<std::remove_cvref_t<X>>::type;

/// Element type of a binary op's result: a tensor's type wins over a bare scalar's.
template <class A, class B>
using common_element_t = std::conditional_t<
    is_tensor_v<A>, element_t<A>,
    std::conditional_t<is_tensor_v<B>, element_t<B>, std::common_type_t<element_t<A>, element_t<B>>>>;

template <class X>
shape_t shape_of(const X& x) {
  if constexpr (is_tensor_v<X>) return x.shape();
  else return {};
}

template <class T, class X>
tensor<T> as_tensor(const X& x) {
  if constexpr (is_tensor_v<X>) return x;
  else return tensor<T>(static_cast<T>(x));
}

inline shape_t broadcast_shapes(const char* op, const shape_t& a, const shape_t& b) {
  const std::size_t n = std::max(a.size(), b.size());
  shape_t out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw error(std::string(op) + ": shapes " + detail::shape_str(a) + " and " + detail::shape_str(b) +
                  " are not broadcastable");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Row-major strides of `in` seen through broadcasting to `out` (0 on broadcast dims).
inline shape_t broadcast_strides(const shape_t& in, const shape_t& out) {
  shape_t st(out.size(), 0);
  std::int64_t s = 1;
  for (std::size_t k = 0; k < in.size(); ++k) {
    const std::size_t i = in.size() - 1 - k, o = out.size() - 1 - k;
    st[o] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return st;
}

/// The walk under for_each_broadcast and for_each_strided: body(out_index, offset_a, offset_b)
/// over `out` with strides sa and sb, in row-major order. The innermost dimension is a plain loop
/// (the odometer only turns per row), so the common cases vectorise. Size-1 dims are dropped and
/// neighbouring dims that both operands step through alike are merged first, so a trailing size-1
/// dim (a column vector, as matmul makes) or a run of contiguous dims does not shrink the inner
/// loop to a few elements.
///
/// The inner strides are compile-time constants where they can be, so that the inner loop
/// vectorises, and only the loops a caller can reach are compiled (each is one more copy of the
/// body, in every op's kernel): Broadcast, a and b are two operands broadcast to `out`, each
/// inner stride 1 or 0 and not both 0 (the kept innermost dim is as long as one of them); else
/// sa and sb are one operand's strides (sb == sa), and the inner stride is 1 or any.
template <bool Independent, bool Broadcast, class Body>
void walk_strides(const shape_t& out_full, const shape_t& sa_full, const shape_t& sb_full, Body&& body) {
  const std::int64_t n = numel_of(out_full);
  if (n == 0) return;
  shape_t out;
  shape_t sa, sb;
  for (std::size_t k = 0; k < out_full.size(); ++k) {
    if (out_full[k] == 1) continue;
    if (!out.empty() && sa.back() == sa_full[k] * out_full[k] && sb.back() == sb_full[k] * out_full[k]) {
      out.back() *= out_full[k];
      sa.back() = sa_full[k];
      sb.back() = sb_full[k];
    } else {
      out.push_back(out_full[k]);
      sa.push_back(sa_full[k]);
      sb.push_back(sb_full[k]);
    }
  }
  const std::size_t r = out.size();
  if (r == 0) {
    body(std::int64_t{0}, std::int64_t{0}, std::int64_t{0});
    return;
  }
  const std::int64_t inner = out[r - 1], ia = sa[r - 1], ib = sb[r - 1];
  // The last two dims are plain nested loops and the odometer turns over the others only: with
  // short rows (8 elements for a Hessian on R^8) it would otherwise turn once per row.
  const std::size_t outer = r >= 2 ? r - 2 : 0;
  const std::int64_t mid = r >= 2 ? out[r - 2] : 1, ma = r >= 2 ? sa[r - 2] : 0, mb = r >= 2 ? sb[r - 2] : 0;
  shape_t idx(outer, 0);
  auto rows = [&](auto ka, auto kb) {
    std::int64_t oa = 0, ob = 0;
    for (std::int64_t i = 0; i < n; i += mid * inner) {
      for (std::int64_t p = 0; p < mid; ++p) {
        const std::int64_t o = i + p * inner, pa = oa + p * ma, pb = ob + p * mb;
        if constexpr (Independent) {
          // Blocks of a fixed count: -O2's cost model vectorises only a loop whose trip count
          // is a known multiple of the vector width.
          std::int64_t j = 0;
          TOWER_LOOP_OF_BLOCKS
          for (; j + 8 <= inner; j += 8) {
            TOWER_NO_ALIAS_BLOCK
            for (std::int64_t u = 0; u < 8; ++u) body(o + j + u, pa + (j + u) * ka, pb + (j + u) * kb);
          }
          for (; j < inner; ++j) body(o + j, pa + j * ka, pb + j * kb);
        } else {
          for (std::int64_t j = 0; j < inner; ++j) body(o + j, pa + j * ka, pb + j * kb);
        }
      }
      for (std::size_t k = outer; k-- > 0;) {
        if (++idx[k] < out[k]) {
          oa += sa[k];
          ob += sb[k];
          break;
        }
        oa -= sa[k] * (out[k] - 1);
        ob -= sb[k] * (out[k] - 1);
        idx[k] = 0;
      }
    }
  };
  using zero = std::integral_constant<std::int64_t, 0>;
  using one = std::integral_constant<std::int64_t, 1>;
  if (ia == 1 && ib == 1) rows(one{}, one{});
  else if constexpr (Broadcast) {
    if (ib == 0) rows(one{}, zero{});
    else rows(zero{}, one{});
  } else {
    rows(ia, ia);
  }
}

/// Calls body(out_index, offset_a, offset_b) over `out` for operands of shapes a and b broadcast
/// to it (NumPy's rules; `out` is broadcast_shapes of the two), in row-major order.
///
/// Independent: every call writes its own output element and reads only the inputs (no
/// reduction into one slot), so the inner loop may be vectorised without an alias check.
template <bool Independent = false, class Body>
void for_each_broadcast(const shape_t& out, const shape_t& a, const shape_t& b, Body&& body) {
  walk_strides<Independent, true>(out, broadcast_strides(a, out), broadcast_strides(b, out), body);
}

/// Calls body(out_index, offset) over `out` for one operand read with `strides` (in elements, one
/// per dim of `out`; 0 repeats it along that dim), in row-major order. Independent as above.
template <bool Independent = false, class Body>
void for_each_strided(const shape_t& out, const shape_t& strides, Body&& body) {
  walk_strides<Independent, false>(out, strides, strides,
                                   [&body](std::int64_t i, std::int64_t o, std::int64_t) { body(i, o); });
}

/// Writes the elements of p read with `strides` (for_each_strided) to out, in `out_shape`'s
/// row-major order: one loop for every element type, shared by permutes and broadcasts.
template <class T>
void copy_strided(const T* p, const shape_t& out_shape, const shape_t& strides, T* out) {
  for_each_strided<true>(out_shape, strides, [p, out](std::int64_t i, std::int64_t o) { out[i] = p[o]; });
}

template <class X, class F>
TOWER_ALWAYS_INLINE auto map(const X& x, F&& f) {
  if constexpr (is_plain_scalar_v<X>) {
    return static_cast<X>(f(x));
  } else {
    using T = element_t<X>;
    const T* p = x.data();
    return tensor<T>(x.shape(), generate<T>(x.numel(), [&](std::int64_t i) { return f(p[i]); }));
  }
}

/// A value of x's shape with every element v: a filled buffer, not map's generator (jacfwd's
/// zero tangents of a 64 x 64 weight were 13% of it through map).
template <class X>
auto filled(const X& x, double v) {
  if constexpr (is_plain_scalar_v<X>) {
    return static_cast<X>(v);
  } else {
    using T = element_t<X>;
    return tensor<T>(x.shape(), buffer<T>(static_cast<std::size_t>(x.numel()), static_cast<T>(v)));
  }
}

/// The vmath function Fn (kernels/vector_math.hpp) on x: `<cmath>` on a number, libmvec a packet
/// at a time on a tensor.
template <class Fn, class X>
TOWER_ALWAYS_INLINE auto map_math(const X& x) {
  if constexpr (is_plain_scalar_v<X>) {
    return Fn::scalar(x);
  } else {
    using T = element_t<X>;
    buffer<T> out(static_cast<std::size_t>(x.numel()));
    vmath::apply<Fn>(x.data(), out.data(), x.numel());
    return tensor<T>(x.shape(), std::move(out));
  }
}

/// The unsigned integer with T's bits.
template <class T>
using bits_of = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;

/// Whether all n entries at p are finite: x - x is +0 for a finite x and NaN otherwise, and the
/// bits are ORed in 8 lanes (no branch, no chained adds), so the loop vectorises.
template <class T>
bool all_finite(const T* p, std::int64_t n) {
  using U = bits_of<T>;
  U acc[8] = {};
  std::int64_t i = 0;
  TOWER_LOOP_OF_BLOCKS
  for (; i + 8 <= n; i += 8)
    for (std::int64_t u = 0; u < 8; ++u) acc[u] |= std::bit_cast<U>(p[i + u] - p[i + u]);
  for (; i < n; ++i) acc[0] |= std::bit_cast<U>(p[i] - p[i]);
  U any = 0;
  for (const U a : acc) any |= a;
  return any == 0;
}

template <class A, class B, class F>
TOWER_ALWAYS_INLINE auto zip(const char* op, const A& a, const B& b, F&& f) {
  static_assert(!(is_tensor_v<A> && is_tensor_v<B>) || std::is_same_v<element_t<A>, element_t<B>>,
                "tower: binary op mixes tensor<float> and tensor<double>; convert one first");
  using T = common_element_t<A, B>;
  if constexpr (is_plain_scalar_v<A> && is_plain_scalar_v<B>) {
    return static_cast<T>(f(static_cast<T>(a), static_cast<T>(b)));
  } else if constexpr (is_plain_scalar_v<A>) {
    const T av = static_cast<T>(a);
    return map(b, [&](T v) { return f(av, v); });
  } else if constexpr (is_plain_scalar_v<B>) {
    const T bv = static_cast<T>(b);
    return map(a, [&](T v) { return f(v, bv); });
  } else {
    const T* pa = a.data();
    const T* pb = b.data();
    if (a.shape() == b.shape())
      return tensor<T>(a.shape(), generate<T>(a.numel(), [&](std::int64_t i) { return f(pa[i], pb[i]); }));
    const shape_t s = broadcast_shapes(op, a.shape(), b.shape());
    T* o = nullptr;
    tensor<T> out = detail::new_output<T, detail::loan_kind::kernel>(s, numel_of(s), o);  // (vmap's packets lend rows)
    for_each_broadcast<true>(s, a.shape(), b.shape(),
                             [o, pa, pb, &f](std::int64_t i, std::int64_t ia, std::int64_t ib) {
                               o[i] = static_cast<T>(f(pa[ia], pb[ib]));
                             });
    return out;
  }
}

/// d in [-rank, rank) as an index (rank: s's rank, or one more where a dim is inserted), or
/// tower::error naming op and s.
inline std::int64_t check_dim(const char* op, std::int64_t d, std::int64_t rank, const shape_t& s) {
  if (d < -rank || d >= rank)
    throw error(std::string(op) + ": dim " + std::to_string(d) + " out of range for shape " + detail::shape_str(s));
  return d < 0 ? d + rank : d;
}

inline shape_t normalize_dims(const char* op, shape_t dims, std::int64_t rank) {
  for (std::size_t k = 0; k < dims.size(); ++k) {
    std::int64_t& d = dims[k];
    if (d < -rank || d >= rank)
      throw error(std::string(op) + ": dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    if (d < 0) d += rank;
    for (std::size_t e = 0; e < k; ++e)  // a few dims: a scan, no allocation
      if (dims[e] == d) throw error(std::string(op) + ": dim " + std::to_string(d) + " repeated");
  }
  return dims;
}

/// Sum over `dims` (empty: none). With keepdim the reduced dims stay as size 1.
template <class X>
auto sum(const X& x, shape_t dims, bool keepdim) {
  if constexpr (is_plain_scalar_v<X>) {
    normalize_dims("sum", dims, 0);
    return x;
  } else {
    using T = element_t<X>;
    const auto& in = x.shape();
    dims = normalize_dims("sum", std::move(dims), x.dim());
    shape_t kept = in;  // reduced dims set to 1
    for (auto d : dims) kept[static_cast<std::size_t>(d)] = 1;
    buffer<T> out(static_cast<std::size_t>(numel_of(kept)), T(0));
    const T* p = x.data();
    std::size_t reduced_tail = 0;  // how many of the last dims are reduced, if only those are
    while (reduced_tail < in.size() &&
           std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(in.size() - 1 - reduced_tail)) != dims.end())
      ++reduced_tail;
    if (reduced_tail == dims.size() && reduced_tail > 0) {
      // Rows of contiguous elements, each summed in a register (same order as below).
      const std::int64_t len = numel_of(in) / std::max<std::int64_t>(numel_of(kept), 1);
      for (std::size_t row = 0; row < out.size(); ++row) {
        T acc = T(0);
        const T* q = p + static_cast<std::int64_t>(row) * len;
        for (std::int64_t j = 0; j < len; ++j) acc += q[j];
        out[row] = acc;
      }
    } else {
      // Accumulate each input element into its output slot: the output is "kept" broadcast to "in".
      for_each_strided(in, broadcast_strides(kept, in),
                       [&](std::int64_t i, std::int64_t o) { out[static_cast<std::size_t>(o)] += p[i]; });
    }
    shape_t res;
    for (std::size_t k = 0; k < in.size(); ++k) {
      const bool reduced = std::find(dims.begin(), dims.end(), static_cast<std::int64_t>(k)) != dims.end();
      if (!reduced || keepdim) res.push_back(kept[k]);
    }
    return tensor<T>(res, std::move(out));
  }
}

template <class X>
auto broadcast_to(const X& x, const shape_t& s) {
  using T = element_t<X>;
  allocation_size("broadcast_to", s);
  const shape_t in = shape_of(x);
  const shape_t b = broadcast_shapes("broadcast_to", in, s);
  if (b != s)
    throw error("broadcast_to: cannot broadcast shape " + detail::shape_str(in) + " to " + detail::shape_str(s));
  const tensor<T> t = as_tensor<T>(x);
  const T* p = t.data();
  // Broadcast along leading dims only (vmap lifting an unbatched value to a batch): copies of
  // one contiguous block, appended without zero-filling the result first.
  {
    std::size_t lead = 0;
    while (lead < in.size() && in[lead] == 1) ++lead;
    const shape_t core(in.begin() + static_cast<std::ptrdiff_t>(lead), in.end());
    const std::int64_t m = t.numel(), n = numel_of(s);
    if (m > 0 && core.size() <= s.size() &&
        std::equal(core.begin(), core.end(), s.end() - static_cast<std::ptrdiff_t>(core.size()))) {
      buffer<T> out;
      out.reserve(static_cast<std::size_t>(n));
      for (std::int64_t r = 0; r < n / m; ++r) append_copy(out, p, static_cast<std::size_t>(m));
      return tensor<T>(s, std::move(out));
    }
  }
  // Broadcast along trailing dims only ([P, 1] -> [P, 3]: a reduction's gradient): each element
  // repeated, where the general loop below would run rows of a few elements.
  if (in.size() == s.size()) {
    std::size_t k = in.size();
    while (k > 0 && in[k - 1] == 1) --k;
    if (std::equal(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(k), s.begin())) {
      const std::int64_t m = t.numel(), rep = m > 0 ? numel_of(s) / m : 0;
      buffer<T> out(static_cast<std::size_t>(m * rep));
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < rep; ++j) out[static_cast<std::size_t>(i * rep + j)] = p[i];
      return tensor<T>(s, std::move(out));
    }
  }
  buffer<T> out(static_cast<std::size_t>(numel_of(s)));
  copy_strided(p, s, broadcast_strides(in, s), out.data());
  return tensor<T>(s, std::move(out));
}

/// Resolves one -1 entry of a target shape against a number of elements.
inline shape_t infer_shape(const char* op, shape_t s, std::int64_t n, const shape_t& from) {
  std::int64_t unknown = -1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1 && unknown < 0) unknown = static_cast<std::int64_t>(i);
    else if (s[i] < 0) throw error(std::string(op) + ": invalid target shape " + detail::shape_str(s));
  }
  if (unknown >= 0) {
    shape_t rest = s;
    rest.erase(rest.begin() + unknown);
    std::int64_t known;
    if (!detail::count_elements(rest, known)) detail::bad_shape(op, s, false);
    // A -1 next to a size 0 could be anything (torch raises too).
    if (known > 0 && n % known == 0) s[static_cast<std::size_t>(unknown)] = n / known;
    else throw error(std::string(op) + ": cannot reshape " + detail::shape_str(from) + " to " + detail::shape_str(s));
  } else if (checked_numel(op, s) != n) {
    throw error(std::string(op) + ": cannot reshape " + detail::shape_str(from) + " to " + detail::shape_str(s));
  }
  return s;
}

template <class X>
auto reshape(const X& x, const shape_t& s) {
  using T = element_t<X>;
  const tensor<T> t = as_tensor<T>(x);
  return t.with_shape(infer_shape("reshape", s, t.numel(), t.shape()));
}

/// x with its dims permuted by perm, a permutation of 0, ..., rank - 1 (result dim k is input
/// dim perm[k]): kernels::permute and movedim.
template <class T>
tensor<T> permuted(const tensor<T>& x, const shape_t& perm) {
  const std::size_t r = perm.size();
  shape_t in_st(r, 1), st(r), out(r);  // row-major strides of x; of each result dim in x
  for (std::size_t k = r; k-- > 1;) in_st[k - 1] = in_st[k] * x.shape()[k];
  for (std::size_t k = 0; k < r; ++k) {
    out[k] = x.shape()[static_cast<std::size_t>(perm[k])];
    st[k] = in_st[static_cast<std::size_t>(perm[k])];
  }
  // Moving only dims of size 1 (mT of a column, as in matmul's VJP on vectors) keeps the
  // row-major order: the same storage under the new shape.
  std::int64_t last = -1;
  bool same_order = true;
  for (std::size_t k = 0; k < r; ++k) {
    if (out[k] == 1) continue;
    same_order = same_order && perm[k] > last;
    last = perm[k];
  }
  if (same_order) return x.with_shape(std::move(out));
  buffer<T> data(static_cast<std::size_t>(x.numel()));
  if (!permute_as_transposes(x.data(), x.shape(), perm, data.data())) copy_strided(x.data(), out, st, data.data());
  return tensor<T>(out, std::move(data));
}

/// Moves dimension `src` to position `dst`, keeping the others in order.
template <class T>
tensor<T> movedim(const tensor<T>& x, std::int64_t src, std::int64_t dst) {
  const std::int64_t r = x.dim();
  src = check_dim("movedim", src, r, x.shape());
  dst = check_dim("movedim", dst, r, x.shape());
  if (src == dst) return x;
  shape_t perm;
  for (std::int64_t k = 0; k < r; ++k)
    if (k != src) perm.push_back(k);
  perm.insert(perm.begin() + dst, src);
  return permuted(x, perm);
}

template <class X>
auto item(const X& x) {
  if constexpr (is_plain_scalar_v<X>) return x;
  else return x.item();
}

}  // namespace tower::kernels

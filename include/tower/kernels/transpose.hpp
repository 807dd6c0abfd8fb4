#pragma once
// Matrix transposes a SIMD block at a time: jacfwd pushes its basis through vmap with the batch
// in dim 0 and moves it last at the end (movedim), and a batched matmul against a weight
// multiplies by the weight's transpose, so a 64 x 64 Jacobian goes through two transposes. An
// element-wise transpose reads one column at a time, 2-3x slower than Eigen's in-register
// transpose of a square block of packets (ptranspose, the kernel its GEMM packs with).
#include <bit>
#include <cstdint>
#include <type_traits>

#include "tower/kernels/eigen_headers.hpp"
#include "tower/core/shape_vector.hpp"

// Eigen's packets are vector types whose alignment attributes a template argument drops (what
// Eigen itself silences in its headers): harmless for values held in registers. And GCC 12
// reports false positives from Eigen's AVX-512 ptranspose (the _mm512_undefined_pd() operand of
// _mm512_unpacklo_pd, _mm512_extractf64x4_pd) once inlined here at -O2 -march=native; silenced
// here so that users' -Werror builds pass, not in their flags.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace tower::kernels {

namespace simd {

template <class T>
using packet_of = typename Eigen::internal::packet_traits<T>::type;

template <class T>
inline constexpr int packet_width = Eigen::internal::unpacket_traits<packet_of<T>>::size;

/// The unsigned integer with a float's or a double's bits.
template <class T>
using transpose_bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;

}  // namespace simd

namespace simd {

/// One W x W block: rows i0.. of a (columns j0..) transposed in registers into rows j0.. of
/// out, each scaled by its entry of scale when Scaled; acc ORs in x - x of every entry loaded.
/// The loops over the block are unrolled by pack expansion so the block never leaves registers;
/// flatten inlines ptranspose, which GCC otherwise calls out of line with the block in memory
/// (perf: a third of jacfwd 64 x 64 in that call).
template <bool Scaled, class T, class P, int... U>
[[gnu::flatten]] inline void transpose_block(const T* a, std::int64_t cols, std::int64_t rows, std::int64_t i0,
                                             std::int64_t j0, T* __restrict out, const T* scale, P& acc,
                                             std::integer_sequence<int, U...>) {
  namespace ei = Eigen::internal;
  ei::PacketBlock<P, sizeof...(U)> b;
  ((b.packet[U] = ei::ploadu<P>(a + (i0 + U) * cols + j0)), ...);
  ((acc = ei::por(acc, ei::psub(b.packet[U], b.packet[U]))), ...);
  ei::ptranspose(b);
  if constexpr (Scaled)
    ((ei::pstoreu(out + (j0 + U) * rows + i0, ei::pmul(ei::pset1<P>(scale[j0 + U]), b.packet[U]))), ...);
  else ((ei::pstoreu(out + (j0 + U) * rows + i0, b.packet[U])), ...);
}

template <bool Scaled, class T>
bool transpose_into(const T* a, std::int64_t rows, std::int64_t cols, T* __restrict out, const T* scale) {
  constexpr bool floating = std::is_floating_point_v<T>;
  using U = std::conditional_t<floating, transpose_bits<T>, unsigned>;
  constexpr int W = floating ? packet_width<T> : 1;
  U any = 0;
  auto one = [&](std::int64_t i, std::int64_t j) {
    const T v = a[i * cols + j];
    if constexpr (floating) any |= std::bit_cast<U>(v - v);
    if constexpr (Scaled) out[j * rows + i] = scale[j] * v;
    else out[j * rows + i] = v;
  };
  std::int64_t i0 = 0;
  if constexpr (W > 1) {
    using P = packet_of<T>;
    P acc = Eigen::internal::pset1<P>(T(0));
    for (; i0 + W <= rows; i0 += W) {
      std::int64_t j0 = 0;
      for (; j0 + W <= cols; j0 += W)
        transpose_block<Scaled>(a, cols, rows, i0, j0, out, scale, acc, std::make_integer_sequence<int, W>{});
      for (std::int64_t i = i0; i < i0 + W; ++i)
        for (std::int64_t j = j0; j < cols; ++j) one(i, j);
    }
    alignas(sizeof(P)) T lanes[W];
    Eigen::internal::pstore(lanes, acc);
    for (const T l : lanes) any |= std::bit_cast<U>(l);
  }
  for (std::int64_t i = i0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) one(i, j);
  return any == 0;
}

}  // namespace simd

/// out = (diag(scale) when given) * a^T for a row-major rows x cols a: out[j, i] = scale[j] a[i, j],
/// out row-major cols x rows, not overlapping a. Returns whether every entry of a is finite
/// (x - x is +0 for a finite x and NaN otherwise, ORed into the blocks as they are loaded), for
/// callers that may skip a product by zero only where it is exact (always true for integers).
template <class T>
bool transpose_into(const T* a, std::int64_t rows, std::int64_t cols, T* __restrict out, const T* scale = nullptr) {
  return scale ? simd::transpose_into<true>(a, rows, cols, out, scale)
               : simd::transpose_into<false>(a, rows, cols, out, scale);
}

/// Writes x permuted by perm (result dim k is input dim perm[k]) into out, if the permutation
/// is a stack of matrix transposes: after dropping size-1 dims, the leading dims stay and the
/// trailing ones rotate (dims [s, r) become [m, r) then [s, m)), so each of the leading
/// elements is a P x Q matrix transposed to Q x P. movedim(x, 0, -1) of jacfwd is one. false
/// (out untouched) otherwise, or when P or Q is below 4, where a column of a block is too short.
template <class T>
bool permute_as_transposes(const T* x, const shape_t& in, const shape_t& perm, T* __restrict out) {
  // The dims of size above 1, renumbered in input order, in their output order.
  shape_t kept, order, renumber(in.size(), -1);
  for (std::size_t k = 0; k < in.size(); ++k)
    if (in[k] != 1) {
      renumber[k] = static_cast<std::int64_t>(kept.size());
      kept.push_back(in[k]);
    }
  for (const std::int64_t p : perm)
    if (in[static_cast<std::size_t>(p)] != 1) order.push_back(renumber[static_cast<std::size_t>(p)]);
  const std::int64_t r = static_cast<std::int64_t>(order.size());
  std::int64_t s = 0;
  while (s < r && order[static_cast<std::size_t>(s)] == s) ++s;
  if (s == r) return false;
  // A rotation of [s, r): order continues m, m + 1, ..., r - 1, s, ..., m - 1.
  const std::int64_t m = order[static_cast<std::size_t>(s)];
  for (std::int64_t k = s; k < r; ++k) {
    const std::int64_t want = k - s + m < r ? k - s + m : k - s + m - r + s;
    if (order[static_cast<std::size_t>(k)] != want) return false;
  }
  std::int64_t count = 1, rows = 1, cols = 1;
  for (std::int64_t k = 0; k < s; ++k) count *= kept[static_cast<std::size_t>(k)];
  for (std::int64_t k = s; k < m; ++k) rows *= kept[static_cast<std::size_t>(k)];
  for (std::int64_t k = m; k < r; ++k) cols *= kept[static_cast<std::size_t>(k)];
  if (rows < 4 || cols < 4) return false;
  for (std::int64_t b = 0; b < count; ++b) transpose_into(x + b * rows * cols, rows, cols, out + b * rows * cols);
  return true;
}

}  // namespace tower::kernels

#pragma GCC diagnostic pop

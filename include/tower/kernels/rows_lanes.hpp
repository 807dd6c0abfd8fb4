#pragma once
// Rows of W numbers (one example each, row-major) to W lane arrays (one number per example) and
// back: the fused runtime vmap's loads and stores (fused_program.hpp). Four rows at a time in
// packets of four doubles, shuffled in registers, so a block costs one store per four numbers
// instead of one per number (on Lennard-Jones, W = 3: about half the time of the scalar loops).
//
//   double x[256], y[256], z[256];
//   double* lanes[] = {x, y, z};
//   kernels::rows_to_lanes<3>(R, lanes, 256);        // x[k] = R[3k], y[k] = R[3k + 1], ...
//   kernels::lanes_to_rows<3>(lanes, G, 256);         // G[3k + e] = lanes[e][k]
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

namespace tower::kernels {

namespace rows_lanes_detail {

// Four doubles in a register (GCC's and clang's vector extension: SSE or AVX on x86, NEON ...).
typedef double packet __attribute__((vector_size(32)));

// Packets go by reference: by value, without AVX, g++ warns that the ABI differs (-Wpsabi).
inline void load(packet& v, const double* p) { std::memcpy(&v, p, sizeof v); }
inline void store(double* p, const packet& v) { std::memcpy(p, &v, sizeof v); }

// out = the four numbers at flat indices F(0..3) of the 4 * W numbers in v[0..W): two pairs
// picked from two packets each, then joined (three shuffles; the compiler merges redundant ones).
template <class F>
inline void pick(packet& out, const packet* v, F f) {
  constexpr int f0 = f(0), f1 = f(1), f2 = f(2), f3 = f(3);
  const packet lo = __builtin_shufflevector(v[f0 / 4], v[f1 / 4], f0 % 4, 4 + f1 % 4, f0 % 4, 4 + f1 % 4);
  const packet hi = __builtin_shufflevector(v[f2 / 4], v[f3 / 4], f2 % 4, 4 + f3 % 4, f2 % 4, 4 + f3 % 4);
  out = __builtin_shufflevector(lo, hi, 0, 1, 4, 5);
}

}  // namespace rows_lanes_detail

/// dst[e][k] = src[k * W + e] for k < n, e < W.
template <int W>
void rows_to_lanes(const double* src, double* const* dst, std::size_t n) {
  static_assert(W >= 1 && W <= 8, "rows_to_lanes: rows of one to eight numbers");
  using namespace rows_lanes_detail;
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4, src += 4 * W) {
    packet v[W], r;
    for (int q = 0; q < W; ++q) load(v[q], src + 4 * q);
    [&]<int... E>(std::integer_sequence<int, E...>) {
      ((pick(r, v, [](int j) constexpr { return j * W + E; }), store(dst[E] + k, r)), ...);
    }(std::make_integer_sequence<int, W>{});
  }
  for (; k < n; ++k, src += W)
    for (int e = 0; e < W; ++e) dst[e][k] = src[e];
}

/// dst[k * W + e] = src[e][k] for k < n, e < W.
template <int W>
void lanes_to_rows(const double* const* src, double* dst, std::size_t n) {
  static_assert(W >= 1 && W <= 8, "lanes_to_rows: rows of one to eight numbers");
  using namespace rows_lanes_detail;
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4, dst += 4 * W) {
    packet v[W], r;
    for (int e = 0; e < W; ++e) load(v[e], src[e] + k);
    // Number i of row-major packet J is row f / W, element f % W (f = 4J + i): in v, at (f % W) * 4 + f / W.
    [&]<int... J>(std::integer_sequence<int, J...>) {
      ((pick(r, v, [](int i) constexpr { return ((4 * J + i) % W) * 4 + (4 * J + i) / W; }), store(dst + 4 * J, r)),
       ...);
    }(std::make_integer_sequence<int, W>{});
  }
  for (; k < n; ++k, dst += W)
    for (int e = 0; e < W; ++e) dst[e] = src[e][k];
}

}  // namespace tower::kernels

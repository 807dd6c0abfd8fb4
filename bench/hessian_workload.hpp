#pragma once
// The per-example Hessian workload of hessian_bench (f on R^8, B = 2^14 points, the hand-written
// Hessian), shared by its two translation units: hessian_bench.cpp (hand-written code and tower's
// default spelling) and hessian_bench_variants.cpp (tower's other forms and the peers). Split so
// that each file compiles in well under a minute; one binary, so the ratios come from one run.
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>
#include <tower/tower.hpp>

#include "bench/bench_common.hpp"

namespace hessian_r8 {

namespace tw = tower;
using tower::bench::check_close;
using tower::bench::uniform;

inline constexpr std::int64_t B = std::int64_t{1} << 14;
inline constexpr int N = 8;

inline constexpr auto f = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };

template <class T>
T f_peer(const std::array<T, N>& x) {
  T q = 1.0 + x[0] * x[0];
  for (int i = 1; i < N; ++i) q += x[static_cast<std::size_t>(i)] * x[static_cast<std::size_t>(i)];
  using std::log, std::sin;
  T r = log(q);
  for (int i = 0; i < N; ++i) r += sin(x[static_cast<std::size_t>(i)]);
  return r;
}

struct data {
  tw::tensor<double> X;
  std::vector<double> ref;  // [B, N, N]
};

inline void hand(const double* __restrict X, double* __restrict H) {
  for (std::int64_t b = 0; b < B; ++b) {
    const double* __restrict x = X + b * N;
    double q = 1.0;
#pragma omp simd reduction(+ : q)
    for (int i = 0; i < N; ++i) q += x[i] * x[i];
    const double a = 2.0 / q, c = -4.0 / (q * q);
    double* __restrict h = H + b * N * N;
    for (int i = 0; i < N; ++i) {
      const double cx = c * x[i];
#pragma omp simd
      for (int j = 0; j < N; ++j) h[i * N + j] = cx * x[j];
      h[i * N + i] += a - std::sin(x[i]);
    }
  }
}

inline data& get() {
  static data D = [] {
    data d{tw::tensor<double>({B, N}, uniform(B * N, -1.5, 1.5, 41)),
           std::vector<double>(static_cast<std::size_t>(B * N * N))};
    hand(d.X.data(), d.ref.data());
    return d;
  }();
  return D;
}

/// tw::vmap(tw::hessian(f), Strategy{}) over the batch, checked against the hand-written Hessians.
template <class Strategy>
void bm_tower_static(benchmark::State& st) {
  auto& D = get();
  auto hessians = tw::vmap(tw::hessian(f), Strategy{});
  tw::tensor<double> H = hessians(D.X);
  check_close("tower static", H.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    H = hessians(D.X);
    benchmark::DoNotOptimize(H.data());
  }
}

}  // namespace hessian_r8

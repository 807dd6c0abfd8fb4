// tw::parallel against the serial vmap in the same binary (wall time: the work is on several
// threads): Lennard-Jones forces (B = 2^20, [B, 3]), per-example Hessians on R^8 (B = 2^14), and
// the per-call cost at a small batch (B = 16, below one grain: parallel runs the serial vmap).
//
//   bazel run --config=opt //bench:parallel_bench -- --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <tower/parallel.hpp>

#include "bench/bench_common.hpp"

namespace tw = tower;

namespace {

auto energy = [](auto r) {
  auto s = 1.0 / tw::sum(r * r);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};
auto hessian_f = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };

tw::tensor<double> displacements(std::int64_t b) {
  auto v = tower::bench::uniform(static_cast<std::size_t>(3 * b), 0.6, 1.4, 7);
  auto sg = tower::bench::uniform(static_cast<std::size_t>(3 * b), -1, 1, 8);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] *= sg[i] < 0 ? -1.0 : 1.0;
  return tw::tensor<double>({b, 3}, std::move(v));
}

tw::tensor<double> points(std::int64_t b) {
  return tw::tensor<double>({b, 8}, tower::bench::uniform(static_cast<std::size_t>(8 * b), -1, 1, 9));
}

/// Runs v on x, after checking once that tw::parallel gives the serial bits.
template <class V, class S>
void run(benchmark::State& st, const V& v, const S& serial, const tw::tensor<double>& x) {
  const tw::tensor<double> a = v(x), b = serial(x);
  if (a.shape() != b.shape() ||
      std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * sizeof(double)) != 0) {
    st.SkipWithError("parallel and serial bits differ");
    return;
  }
  for (auto _ : st) {
    const tw::tensor<double> r = v(x);
    benchmark::DoNotOptimize(r.data());
  }
}

template <bool Parallel>
void bm_lennard_jones(benchmark::State& st) {
  static const tw::tensor<double> R = displacements(std::int64_t{1} << 20);
  const auto serial = tw::vmap(tw::grad(energy));
  if constexpr (Parallel) run(st, tw::vmap(tw::grad(energy), tw::parallel), serial, R);
  else run(st, serial, serial, R);
}

template <bool Parallel>
void bm_lennard_jones_runtime(benchmark::State& st) {
  static const tw::tensor<double> R = displacements(std::int64_t{1} << 20);
  std::function<tw::dyn::value(tw::dyn::value)> e = [](tw::dyn::value r) { return energy(r); };
  const auto serial = [&](const tw::tensor<double>& x) { return tw::vmap(tw::grad(e))(x).to_tensor(); };
  const auto parallel = [&](const tw::tensor<double>& x) { return tw::vmap(tw::grad(e), tw::parallel)(x).to_tensor(); };
  if constexpr (Parallel) run(st, parallel, serial, R);
  else run(st, serial, serial, R);
}

template <bool Parallel>
void bm_hessian(benchmark::State& st) {
  static const tw::tensor<double> X = points(std::int64_t{1} << 14);
  const auto serial = tw::vmap(tw::hessian(hessian_f));
  if constexpr (Parallel) run(st, tw::vmap(tw::hessian(hessian_f), tw::parallel), serial, X);
  else run(st, serial, serial, X);
}

template <bool Parallel>
void bm_small(benchmark::State& st) {
  static const tw::tensor<double> R = displacements(16);
  const auto serial = tw::vmap(tw::grad(energy));
  if constexpr (Parallel) run(st, tw::vmap(tw::grad(energy), tw::parallel), serial, R);
  else run(st, serial, serial, R);
}

}  // namespace

BENCHMARK(bm_lennard_jones<false>)->Name("lennard_jones_2^20/serial")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_lennard_jones<true>)->Name("lennard_jones_2^20/parallel")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_lennard_jones_runtime<false>)
    ->Name("lennard_jones_runtime_2^20/serial")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_lennard_jones_runtime<true>)
    ->Name("lennard_jones_runtime_2^20/parallel")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_hessian<false>)->Name("hessian_r8_2^14/serial")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_hessian<true>)->Name("hessian_r8_2^14/parallel")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_small<false>)->Name("lennard_jones_16/serial")->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_small<true>)->Name("lennard_jones_16/parallel")->UseRealTime()->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();

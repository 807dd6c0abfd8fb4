// Overhead: vmap(grad(f)) of a 10-op scalar chain at batch size 1, on the static and runtime
// paths (static: strategy::fused, the per-example form, and strategy::batched),
// plus grad(f) on plain doubles; counters give the time per op and heap allocations per op.
//
//   f(x) = tanh(cos(exp((sin(x) x + 1) 0.1) - x)^2) x      (10 ops: sin * + * exp - cos * tanh *)
#include <functional>

#include <tower/tower.hpp>

#include "bench/alloc_counter.hpp"
#include "bench/bench_common.hpp"

namespace tw = tower;

namespace {

constexpr int ops = 10;

auto f = [](auto x) {
  auto a = tw::sin(x) * x;            // 2
  auto b = tw::exp((a + 1.0) * 0.1);  // 5
  auto c = tw::cos(b - x);            // 7
  return tw::tanh(c * c) * x;         // 10
};

double df_hand(double x) {
  const double s = std::sin(x), a = s * x, b = std::exp((a + 1.0) * 0.1), c = std::cos(b - x), t = std::tanh(c * c);
  const double da = std::cos(x) * x + s;
  const double db = b * 0.1 * da;
  const double dc = -std::sin(b - x) * (db - 1.0);
  return (1.0 - t * t) * 2.0 * c * dc * x + t;
}

void counters(benchmark::State& st, std::size_t allocs) {
  st.counters["time_per_op"] =
      benchmark::Counter(ops, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  st.counters["allocs_per_op"] =
      benchmark::Counter(static_cast<double>(allocs) / ops, benchmark::Counter::kAvgIterations);
}

void bm_hand(benchmark::State& st) {
  double x = 0.7;
  const std::size_t a0 = tower::bench::allocations();
  for (auto _ : st) {
    benchmark::DoNotOptimize(x);
    double g = df_hand(x);
    benchmark::DoNotOptimize(g);
  }
  counters(st, tower::bench::allocations() - a0);
}

void bm_scalar_static(benchmark::State& st) {
  double x = 0.7;
  auto df = tw::grad(f);
  if (std::abs(df(x) - df_hand(x)) > 1e-12) st.SkipWithError("wrong derivative");
  const std::size_t a0 = tower::bench::allocations();
  for (auto _ : st) {
    benchmark::DoNotOptimize(x);
    double g = df(x);
    benchmark::DoNotOptimize(g);
  }
  counters(st, tower::bench::allocations() - a0);
}

template <class Strategy>
void bm_vmap_static(benchmark::State& st) {
  tw::tensor<double> X(std::vector<double>{0.7});
  auto df = tw::vmap(tw::grad(f), Strategy{});
  if (std::abs(df(X)(0) - df_hand(0.7)) > 1e-12) st.SkipWithError("wrong derivative");
  const std::size_t a0 = tower::bench::allocations();
  for (auto _ : st) {
    tw::tensor<double> g = df(X);
    benchmark::DoNotOptimize(g.data());
  }
  counters(st, tower::bench::allocations() - a0);
}

void bm_vmap_runtime(benchmark::State& st) {
  using tw::dyn::value;
  std::function<value(value)> erased = [](value x) { return f(x); };
  tw::tensor<double> X(std::vector<double>{0.7});
  auto df = tw::vmap(tw::grad(erased));
  if (std::abs(df(X).to_tensor()(0) - df_hand(0.7)) > 1e-12) st.SkipWithError("wrong derivative");
  const std::size_t a0 = tower::bench::allocations();
  for (auto _ : st) {
    value g = df(X);
    benchmark::DoNotOptimize(&g);
  }
  counters(st, tower::bench::allocations() - a0);
}

void bm_scalar_runtime(benchmark::State& st) {
  using tw::dyn::value;
  std::function<value(value)> erased = [](value x) { return f(x); };
  auto df = tw::grad(erased);
  const std::size_t a0 = tower::bench::allocations();
  for (auto _ : st) {
    value g = df(value(0.7));
    benchmark::DoNotOptimize(&g);
  }
  counters(st, tower::bench::allocations() - a0);
}

BENCHMARK(bm_hand)->Name("chain10_b1/hand");
BENCHMARK(bm_vmap_static<tw::strategy::fused_t>)->Name("chain10_b1/tower_static");
BENCHMARK(bm_vmap_static<tw::strategy::batched_t>)->Name("chain10_b1/tower_static_batched");
BENCHMARK(bm_vmap_runtime)->Name("chain10_b1/tower_runtime");
BENCHMARK(bm_hand)->Name("chain10_scalar_grad/hand");
BENCHMARK(bm_scalar_static)->Name("chain10_scalar_grad/tower_static");
BENCHMARK(bm_scalar_runtime)->Name("chain10_scalar_grad/tower_runtime");

}  // namespace

TOWER_BENCH_MAIN()

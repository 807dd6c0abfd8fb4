// hessian_bench's other variants (see hessian_bench.cpp): tower's fixed-rows spelling, batching
// rules and runtime path, and the peers: nested forward mode and ADOL-C's hessian driver.
#include <functional>

#include "bench/hessian_workload.hpp"
#include "bench/peers.hpp"

namespace {

using namespace hessian_r8;

void bm_tower_static_fixed(benchmark::State& st) {
  auto& D = get();
  auto hessians = tw::vmap(tw::hessian(f), tw::in_dims(tw::fixed_rows<N>));
  tw::tensor<double> H = hessians(D.X);
  check_close("tower static fixed", H.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    H = hessians(D.X);
    benchmark::DoNotOptimize(H.data());
  }
}
BENCHMARK(bm_tower_static_fixed)->Name("hessian_r8/tower_static_fixed")->Unit(benchmark::kMillisecond);

void bm_tower_runtime(benchmark::State& st) {
  auto& D = get();
  using tw::dyn::value;
  std::function<value(value)> fe = [](value x) { return f(x); };
  auto hessians = tw::vmap(tw::hessian(fe));
  tw::tensor<double> H = hessians(D.X).to_tensor();
  check_close("tower runtime", H.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    H = hessians(D.X).to_tensor();
    benchmark::DoNotOptimize(H.data());
  }
}

// Nested forward mode: the outer type's directions differentiate the inner gradient.
template <class Inner, class Outer>
void bm_forward_forward(benchmark::State& st) {
  auto& D = get();
  std::vector<double> H(D.ref.size());
  auto run = [&] {
    for (std::int64_t b = 0; b < B; ++b) {
      const double* x = D.X.data() + b * N;
      std::array<Outer, N> v;
      for (int i = 0; i < N; ++i) {
        Inner xi = peers::variable<Inner, N>(x[i], i);
        v[static_cast<std::size_t>(i)] = Outer(N, i, xi);
      }
      const Outer y = f_peer(v);
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) H[static_cast<std::size_t>(b * N * N + i * N + j)] = y.dx(i).dx(j);
    }
  };
  run();
  check_close("forward-over-forward", H.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(H.data());
  }
}

#if TOWER_BENCH_HAVE_EIGEN_AD
void bm_eigen(benchmark::State& st) {
  auto& D = get();
  using inner = Eigen::AutoDiffScalar<Eigen::Matrix<double, N, 1>>;
  using outer = Eigen::AutoDiffScalar<Eigen::Matrix<inner, N, 1>>;
  std::vector<double> H(D.ref.size());
  auto run = [&] {
    for (std::int64_t b = 0; b < B; ++b) {
      const double* x = D.X.data() + b * N;
      std::array<outer, N> v;
      for (int i = 0; i < N; ++i) {
        v[static_cast<std::size_t>(i)].value() = inner(x[i], N, i);
        v[static_cast<std::size_t>(i)].derivatives() = Eigen::Matrix<inner, N, 1>::Unit(N, i);
        for (int j = 0; j < N; ++j) v[static_cast<std::size_t>(i)].derivatives()(j).derivatives().setZero();
      }
      const outer y = f_peer(v);
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j)
          H[static_cast<std::size_t>(b * N * N + i * N + j)] = y.derivatives()(i).derivatives()(j);
    }
  };
  run();
  check_close("eigen", H.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(H.data());
  }
}
BENCHMARK(bm_eigen)->Name("hessian_r8/eigen_autodiff")->Unit(benchmark::kMillisecond);
#endif

#if TOWER_BENCH_HAVE_ADOLC
void bm_adolc(benchmark::State& st) {
  auto& D = get();
  peers::adolc_tape<N>(5, [](const auto& x) { return f_peer(x); }, D.X.data());
  double** h = myalloc2(N, N);
  std::vector<double> H(D.ref.size());
  auto run = [&] {
    for (std::int64_t b = 0; b < B; ++b) {
      hessian(5, N, const_cast<double*>(D.X.data() + b * N), h);  // lower triangle
      for (int i = 0; i < N; ++i)
        for (int j = 0; j <= i; ++j)
          H[static_cast<std::size_t>(b * N * N + i * N + j)] = H[static_cast<std::size_t>(b * N * N + j * N + i)] =
              h[i][j];
    }
  };
  run();
  check_close("adolc", H.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(H.data());
  }
  myfree2(h);
}
BENCHMARK(bm_adolc)->Name("hessian_r8/adolc")->Unit(benchmark::kMillisecond);
#endif

BENCHMARK(bm_tower_static<tw::strategy::batched_t>)
    ->Name("hessian_r8/tower_static_batched")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_runtime)->Name("hessian_r8/tower_runtime")->Unit(benchmark::kMillisecond);
#if TOWER_BENCH_HAVE_SACADO
BENCHMARK(bm_forward_forward<Sacado::Fad::SFad<double, N>, Sacado::Fad::SFad<Sacado::Fad::SFad<double, N>, N>>)
    ->Name("hessian_r8/sacado_sfad")
    ->Unit(benchmark::kMillisecond);
#endif

}  // namespace

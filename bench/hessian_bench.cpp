// Per-example Hessians of a scalar function on R^8, B = 2^14 points:
//   f(x) = log(1 + |x|^2) + sum_i sin(x_i),   H = 2 I / q - 4 x x^T / q^2 - diag(sin x),  q = 1 + |x|^2.
//
// tower variants: tw::vmap(tw::hessian(f))(X) (hessian = jacfwd(jacrev(f))), static and runtime;
// static fixed: in_dims(tw::fixed_rows<8>), one forward-over-forward pass on elementwise jets per
// example (transforms/hessian_forward.hpp).
// Peers: nested forward mode (8 x 8 directions) and ADOL-C's hessian driver on one tape.
#include <functional>

#include <tower/tower.hpp>

#include "bench/bench_common.hpp"
#include "bench/peers.hpp"

namespace tw = tower;
using tower::bench::check_close;
using tower::bench::uniform;

namespace {

constexpr std::int64_t B = std::int64_t{1} << 14;
constexpr int N = 8;

auto f = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };

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

void hand(const double* __restrict X, double* __restrict H) {
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

data& get() {
  static data D = [] {
    data d{tw::tensor<double>({B, N}, uniform(B * N, -1.5, 1.5, 41)),
           std::vector<double>(static_cast<std::size_t>(B * N * N))};
    hand(d.X.data(), d.ref.data());
    return d;
  }();
  return D;
}

void bm_hand(benchmark::State& st) {
  auto& D = get();
  std::vector<double> H(D.ref.size());
  for (auto _ : st) {
    hand(D.X.data(), H.data());
    benchmark::DoNotOptimize(H.data());
  }
}

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
        for (int j = 0; j < N; ++j) H[static_cast<std::size_t>(b * N * N + i * N + j)] = y.derivatives()(i).derivatives()(j);
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
          H[static_cast<std::size_t>(b * N * N + i * N + j)] = H[static_cast<std::size_t>(b * N * N + j * N + i)] = h[i][j];
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

BENCHMARK(bm_hand)->Name("hessian_r8/hand")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_static<tw::strategy::automatic_t>)->Name("hessian_r8/tower_static")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_static<tw::strategy::batched_t>)->Name("hessian_r8/tower_static_batched")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_runtime)->Name("hessian_r8/tower_runtime")->Unit(benchmark::kMillisecond);
#if TOWER_BENCH_HAVE_SACADO
BENCHMARK(bm_forward_forward<Sacado::Fad::SFad<double, N>, Sacado::Fad::SFad<Sacado::Fad::SFad<double, N>, N>>)
    ->Name("hessian_r8/sacado_sfad")
    ->Unit(benchmark::kMillisecond);
#endif

}  // namespace

TOWER_BENCH_MAIN()

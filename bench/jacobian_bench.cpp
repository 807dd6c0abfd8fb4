// Jacobian of f(x) = tanh(A x), A 64 x 64, at one x.
//
// tower variants: tw::jacrev(f)(x) (reverse mode: one forward pass, the backward pass vmapped
// over the basis of cotangents) and tw::jacfwd(f)(x) (forward mode: the basis pushed through as
// one batched tangent), f = x -> tanh(matmul(A, x)), on the static and the runtime path.
// Hand-written: J = diag(1 - tanh(Ax)^2) A. Peers: forward mode with 64 directions, and ADOL-C's
// jacobian driver on one tape.
#include <functional>

#include <tower/tower.hpp>

#include "bench/bench_common.hpp"
#include "bench/peers.hpp"

namespace tw = tower;
using tower::bench::check_close;
using tower::bench::uniform;

namespace {

constexpr int N = 64;

struct data {
  tw::tensor<double> A, x, I;
  std::vector<double> ref;
};

void hand(const double* __restrict A, const double* __restrict x, double* __restrict J) {
  for (int i = 0; i < N; ++i) {
    double a = 0;
#pragma omp simd reduction(+ : a)
    for (int j = 0; j < N; ++j) a += A[i * N + j] * x[j];
    const double t = std::tanh(a), c = 1.0 - t * t;
#pragma omp simd
    for (int j = 0; j < N; ++j) J[i * N + j] = c * A[i * N + j];
  }
}

data& get() {
  static data D = [] {
    std::vector<double> eye(N * N, 0.0);
    for (int i = 0; i < N; ++i) eye[static_cast<std::size_t>(i * N + i)] = 1;
    data d{tw::tensor<double>({N, N}, uniform(N * N, -0.2, 0.2, 31)), tw::tensor<double>(uniform(N, -1, 1, 32)),
           tw::tensor<double>({N, N}, eye), std::vector<double>(N * N)};
    hand(d.A.data(), d.x.data(), d.ref.data());
    return d;
  }();
  return D;
}

void bm_hand(benchmark::State& st) {
  auto& D = get();
  std::vector<double> J(D.ref.size());
  for (auto _ : st) {
    hand(D.A.data(), D.x.data(), J.data());
    benchmark::DoNotOptimize(J.data());
  }
}

// f(x) = tanh(A x).
auto layer = [](auto A) { return [A](auto x) { return tw::tanh(tw::matmul(A, x)); }; };

struct by_jacrev {
  template <class F>
  auto operator()(F f) const {
    return tw::jacrev(std::move(f));
  }
};
struct by_jacfwd {
  template <class F>
  auto operator()(F f) const {
    return tw::jacfwd(std::move(f));
  }
};

template <class Mode>
void bm_tower_static(benchmark::State& st) {
  auto& D = get();
  auto jac = Mode{}(layer(D.A));
  tw::tensor<double> J = jac(D.x);
  check_close("tower static", J.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    J = jac(D.x);
    benchmark::DoNotOptimize(J.data());
  }
}

template <class Mode>
void bm_tower_runtime(benchmark::State& st) {
  auto& D = get();
  using tw::dyn::value;
  std::function<value(value)> erased = [f = layer(value(D.A))](value x) { return f(x); };
  auto jac = Mode{}(erased);
  tw::tensor<double> J = jac(D.x).to_tensor();
  check_close("tower runtime", J.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    J = jac(D.x).to_tensor();
    benchmark::DoNotOptimize(J.data());
  }
}

template <class AD>
void bm_forward(benchmark::State& st) {
  auto& D = get();
  std::vector<double> J(D.ref.size());
  auto run = [&] {
    std::array<AD, N> x;
    for (int j = 0; j < N; ++j) x[static_cast<std::size_t>(j)] = peers::variable<AD, N>(D.x.data()[j], j);
    for (int i = 0; i < N; ++i) {
      AD a = D.A.data()[i * N] * x[0];
      for (int j = 1; j < N; ++j) a += D.A.data()[i * N + j] * x[static_cast<std::size_t>(j)];
      using std::tanh;
      const AD y = tanh(a);
      for (int j = 0; j < N; ++j) J[static_cast<std::size_t>(i * N + j)] = peers::derivative<N>(y, j);
    }
  };
  run();
  check_close("forward peer", J.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(J.data());
  }
}

#if TOWER_BENCH_HAVE_ADOLC
void bm_adolc(benchmark::State& st) {
  auto& D = get();
  const short tag = 4;
  {
    trace_on(tag);
    std::array<adouble, N> x;
    for (int j = 0; j < N; ++j) x[static_cast<std::size_t>(j)] <<= D.x.data()[j];
    for (int i = 0; i < N; ++i) {
      adouble a = 0;
      for (int j = 0; j < N; ++j) a += D.A.data()[i * N + j] * x[static_cast<std::size_t>(j)];
      adouble y = tanh(a);
      double out;
      y >>= out;
    }
    trace_off();
  }
  double** J = myalloc2(N, N);
  std::vector<double> flat(D.ref.size());
  auto run = [&] { jacobian(tag, N, N, D.x.data(), J); };
  run();
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) flat[static_cast<std::size_t>(i * N + j)] = J[i][j];
  check_close("adolc", flat.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(J[0]);
  }
  myfree2(J);
}
BENCHMARK(bm_adolc)->Name("jacobian_tanh_64/adolc")->Unit(benchmark::kMicrosecond);
#endif

BENCHMARK(bm_hand)->Name("jacobian_tanh_64/hand")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_tower_static<by_jacrev>)->Name("jacobian_tanh_64/tower_static")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_tower_static<by_jacfwd>)->Name("jacobian_tanh_64/tower_static_jacfwd")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_tower_runtime<by_jacrev>)->Name("jacobian_tanh_64/tower_runtime")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_tower_runtime<by_jacfwd>)->Name("jacobian_tanh_64/tower_runtime_jacfwd")->Unit(benchmark::kMicrosecond);
#if TOWER_BENCH_HAVE_EIGEN_AD
BENCHMARK(bm_forward<peers::eigen_ad<N>>)->Name("jacobian_tanh_64/eigen_autodiff")->Unit(benchmark::kMicrosecond);
#endif
#if TOWER_BENCH_HAVE_CERES
BENCHMARK(bm_forward<ceres::Jet<double, N>>)->Name("jacobian_tanh_64/ceres_jet")->Unit(benchmark::kMicrosecond);
#endif
#if TOWER_BENCH_HAVE_SACADO
BENCHMARK(bm_forward<Sacado::Fad::SFad<double, N>>)
    ->Name("jacobian_tanh_64/sacado_sfad")
    ->Unit(benchmark::kMicrosecond);
#endif

}  // namespace

TOWER_BENCH_MAIN()

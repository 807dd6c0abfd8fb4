// Per-example gradients of the logistic loss, softplus(-y <w, x>), with respect to w:
// G[b, :] = d/dw loss(w; x_b, y_b), B = 4096 examples, d = 16 and d = 256.
//
// Variants: tower static path (vmap(grad(loss)) of a generic lambda), tower runtime path (the same
// loss as a std::function of dyn::value), hand-written (one fused loop per example), and peers
// written idiomatically (one loop over examples, forward mode over the d weights / an ADOL-C tape).
#include <functional>

#include <tower/tower.hpp>

#include "bench/bench_common.hpp"
#include "bench/peers.hpp"

namespace tw = tower;
using tower::bench::check_close;
using tower::bench::uniform;

namespace {

constexpr std::int64_t B = 4096;

struct data {
  std::int64_t d;
  tw::tensor<double> w, X, Y;
  std::vector<double> ref;  // hand-written result
};

data make(std::int64_t d) {
  data r{d,
         tw::tensor<double>(uniform(static_cast<std::size_t>(d), -0.5, 0.5, 1)),
         tw::tensor<double>({B, d}, uniform(static_cast<std::size_t>(B * d), -1, 1, 2)),
         tw::tensor<double>(std::vector<double>()),
         {}};
  auto y = uniform(B, -1, 1, 3);
  for (auto& v : y) v = v < 0 ? -1.0 : 1.0;
  r.Y = tw::tensor<double>(y);
  return r;
}

auto loss = [](auto w, auto x, auto y) { return tw::log(1.0 + tw::exp(-(y * tw::dot(w, x)))); };

// ---- hand-written: per example, z = y <w, x>, dloss/dw = -y sigmoid(-z) x ------------------
void hand(const double* __restrict w, const double* __restrict X, const double* __restrict Y, double* __restrict G,
          std::int64_t d) {
  for (std::int64_t b = 0; b < B; ++b) {
    const double* x = X + b * d;
    double z = 0;
#pragma omp simd reduction(+ : z)
    for (std::int64_t j = 0; j < d; ++j) z += w[j] * x[j];
    const double y = Y[b];
    const double s = -y / (1.0 + std::exp(y * z));
    double* g = G + b * d;
#pragma omp simd
    for (std::int64_t j = 0; j < d; ++j) g[j] = s * x[j];
  }
}

template <class Strategy>
void tower_static(benchmark::State& st, data& D) {
  auto per_example = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0), Strategy{});
  tw::tensor<double> G = per_example(D.w, D.X, D.Y);
  check_close("tower static", G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    G = per_example(D.w, D.X, D.Y);
    benchmark::DoNotOptimize(G.data());
  }
}

// The same loss with w a tw::fixed<double, N> and each row of X handed to it as one (in_dims
// fixed_rows<N>): one loop over examples, grad without a tape.
template <int N>
void tower_static_fixed(benchmark::State& st, data& D) {
  auto per_example = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, tw::fixed_rows<N>, 0));
  const auto w = tw::to_fixed<tw::fixed<double, N>>(D.w);
  tw::tensor<double> G = per_example(w, D.X, D.Y);
  check_close("tower static fixed", G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    G = per_example(w, D.X, D.Y);
    benchmark::DoNotOptimize(G.data());
  }
}

void tower_runtime(benchmark::State& st, data& D) {
  using tw::dyn::value;
  std::function<value(value, value, value)> erased = [](value w, value x, value y) { return loss(w, x, y); };
  auto per_example = tw::vmap(tw::grad(erased), tw::in_dims(tw::none, 0, 0));
  tw::tensor<double> G = per_example(D.w, D.X, D.Y).to_tensor();
  check_close("tower runtime", G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    G = per_example(D.w, D.X, D.Y).to_tensor();
    benchmark::DoNotOptimize(G.data());
  }
}

// ---- peers: forward mode with d directions, one loop over examples -------------------------
template <class AD, int N>
void forward_peer(benchmark::State& st, data& D, const char* name) {
  std::vector<double> G(static_cast<std::size_t>(B * N));
  auto run = [&] {
    const double* X = D.X.data();
    for (std::int64_t b = 0; b < B; ++b) {
      std::array<AD, N> w;
      for (int j = 0; j < N; ++j) w[j] = peers::variable<AD, N>(D.w.data()[j], j);
      const double* x = X + b * N;
      AD z = w[0] * x[0];
      for (int j = 1; j < N; ++j) z += w[j] * x[j];
      using std::exp, std::log;
      AD l = log(1.0 + exp(-(D.Y.data()[b] * z)));
      for (int j = 0; j < N; ++j) G[static_cast<std::size_t>(b * N + j)] = peers::derivative<N>(l, j);
    }
  };
  run();
  check_close(name, G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(G.data());
  }
}

#if TOWER_BENCH_HAVE_ADOLC
// ADOL-C: tape the loss once with w active and (x, y) as parameters, then the gradient driver
// per example after setting the parameters.
template <int N>
void adolc_peer(benchmark::State& st, data& D) {
  const short tag = static_cast<short>(10 + N % 1000);
  {
    trace_on(tag);
    std::array<adouble, N> w;
    for (int j = 0; j < N; ++j) w[j] <<= D.w.data()[j];
    adouble z = 0;
    for (int j = 0; j < N; ++j) z += w[j] * mkparam(D.X.data()[j]);
    adouble l = log(1.0 + exp(-(mkparam(D.Y.data()[0]) * z)));
    double out;
    l >>= out;
    trace_off();
  }
  std::vector<double> G(static_cast<std::size_t>(B * N)), par(N + 1);
  std::vector<double> wv(D.w.data(), D.w.data() + N);
  auto run = [&] {
    for (std::int64_t b = 0; b < B; ++b) {
      std::copy(D.X.data() + b * N, D.X.data() + (b + 1) * N, par.begin());
      par[N] = D.Y.data()[b];
      set_param_vec(tag, N + 1, par.data());
      gradient(tag, N, wv.data(), G.data() + b * N);
    }
  };
  run();
  check_close("adolc", G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(G.data());
  }
}
#endif

template <int N>
void register_all() {
  static data D = make(N);
  D.ref.resize(static_cast<std::size_t>(B * N));
  hand(D.w.data(), D.X.data(), D.Y.data(), D.ref.data(), N);
  const std::string w = "logistic_d" + std::to_string(N) + "/";
  benchmark::RegisterBenchmark((w + "hand").c_str(), [](benchmark::State& st) {
    std::vector<double> G(static_cast<std::size_t>(B * N));
    for (auto _ : st) {
      hand(D.w.data(), D.X.data(), D.Y.data(), G.data(), N);
      benchmark::DoNotOptimize(G.data());
    }
  });
  benchmark::RegisterBenchmark((w + "tower_static").c_str(),
                               [](benchmark::State& st) { tower_static<tw::strategy::automatic_t>(st, D); });
  benchmark::RegisterBenchmark((w + "tower_static_batched").c_str(),
                               [](benchmark::State& st) { tower_static<tw::strategy::batched_t>(st, D); });
  benchmark::RegisterBenchmark((w + "tower_static_fused").c_str(),
                               [](benchmark::State& st) { tower_static<tw::strategy::fused_t>(st, D); });
  if constexpr (N <= 32)
    benchmark::RegisterBenchmark((w + "tower_static_fixed").c_str(),
                                 [](benchmark::State& st) { tower_static_fixed<N>(st, D); });
  benchmark::RegisterBenchmark((w + "tower_runtime").c_str(), [](benchmark::State& st) { tower_runtime(st, D); });
#if TOWER_BENCH_HAVE_EIGEN_AD
  benchmark::RegisterBenchmark((w + "eigen_autodiff").c_str(),
                               [](benchmark::State& st) { forward_peer<peers::eigen_ad<N>, N>(st, D, "eigen"); });
#endif
#if TOWER_BENCH_HAVE_CERES
  benchmark::RegisterBenchmark((w + "ceres_jet").c_str(),
                               [](benchmark::State& st) { forward_peer<ceres::Jet<double, N>, N>(st, D, "jet"); });
#endif
#if TOWER_BENCH_HAVE_SACADO
  benchmark::RegisterBenchmark((w + "sacado_sfad").c_str(), [](benchmark::State& st) {
    forward_peer<Sacado::Fad::SFad<double, N>, N>(st, D, "sfad");
  });
#endif
#if TOWER_BENCH_HAVE_ADOLC
  benchmark::RegisterBenchmark((w + "adolc").c_str(), [](benchmark::State& st) { adolc_peer<N>(st, D); });
#endif
}

const bool registered = (register_all<16>(), register_all<256>(), true);

}  // namespace

TOWER_BENCH_MAIN()

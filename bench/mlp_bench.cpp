// Per-example gradients of a 32-64-1 tanh MLP with squared error, B = 1024:
//   loss(W1, b1, W2, b2; x, y) = (W2 . tanh(W1 x + b1) + b2 - y)^2
// with respect to all four parameters, held in a struct (W1 [64, 32], b1 [64], W2 [64], b2 []).
// The static path takes the struct (a Hana struct templated over its leaf type, so gradients
// come back in the same struct); the runtime path, whose type-erased functions take dyn::values,
// gets the four leaves as separate arguments.
//
// Variants: tower static path, tower runtime path, hand-written (one fused pass per example),
// ADOL-C (one tape, gradient driver per example with x, y as tape parameters). Forward-mode peers
// (Jet, SFad, AutoDiffScalar) would carry 2177 directions per value and are left out.
#include <boost/hana/define_struct.hpp>
#include <functional>

#include <tower/tower.hpp>

#include "bench/bench_common.hpp"
#include "bench/peers.hpp"

namespace tw = tower;
using tower::bench::check_close;
using tower::bench::uniform;

namespace {

constexpr std::int64_t B = 1024, I = 32, H = 64;
constexpr std::int64_t P = H * I + H + H + 1;  // parameters per example gradient

template <class T>
struct mlp {
  BOOST_HANA_DEFINE_STRUCT(mlp, (T, W1), (T, b1), (T, W2), (T, b2));
};

auto loss_leaves = [](auto W1, auto b1, auto W2, auto b2, auto x, auto y) {
  auto h = tw::tanh(tw::matmul(W1, x) + b1);
  auto e = tw::dot(W2, h) + b2 - y;
  return e * e;
};
auto loss = [](const auto& p, const auto& x, const auto& y) { return loss_leaves(p.W1, p.b1, p.W2, p.b2, x, y); };

struct data {
  tw::tensor<double> W1, b1, W2, b2, X, Y;
  std::vector<double> ref;  // [B, P]: gW1 | gb1 | gW2 | gb2 per example
};

void hand(const data& D, double* __restrict G) {
  const double* __restrict W1 = D.W1.data();
  const double* __restrict b1 = D.b1.data();
  const double* __restrict W2 = D.W2.data();
  const double b2 = D.b2.data()[0];
  for (std::int64_t b = 0; b < B; ++b) {
    const double* __restrict x = D.X.data() + b * I;
    double h[H];
    double yhat = b2;
    for (std::int64_t k = 0; k < H; ++k) {
      double a = b1[k];
#pragma omp simd reduction(+ : a)
      for (std::int64_t j = 0; j < I; ++j) a += W1[k * I + j] * x[j];
      h[k] = std::tanh(a);
      yhat += W2[k] * h[k];
    }
    const double e = 2.0 * (yhat - D.Y.data()[b]);
    double* __restrict gW1 = G + b * H * I;
    double* __restrict gb1 = G + B * H * I + b * H;
    double* __restrict gW2 = G + B * (H * I + H) + b * H;
    for (std::int64_t k = 0; k < H; ++k) {
      const double ga = e * W2[k] * (1.0 - h[k] * h[k]);
      gb1[k] = ga;
      gW2[k] = e * h[k];
#pragma omp simd
      for (std::int64_t j = 0; j < I; ++j) gW1[k * I + j] = ga * x[j];
    }
    G[B * (H * I + 2 * H) + b] = e;
  }
}

data& get() {
  static data D = [] {
    data d{tw::tensor<double>({H, I}, uniform(H * I, -0.3, 0.3, 21)),
           tw::tensor<double>(uniform(H, -0.1, 0.1, 22)),
           tw::tensor<double>(uniform(H, -0.3, 0.3, 23)),
           tw::tensor<double>(0.05),
           tw::tensor<double>({B, I}, uniform(B * I, -1, 1, 24)),
           tw::tensor<double>(uniform(B, -1, 1, 25)),
           std::vector<double>(static_cast<std::size_t>(B * P))};
    hand(d, d.ref.data());
    return d;
  }();
  return D;
}

// The tower results (a tuple of [B, ...] tensors) laid out like the hand-written one.
template <class T>
std::vector<double> flatten(const T& g) {
  std::vector<double> out;
  std::apply([&](const auto&... t) { (out.insert(out.end(), t.data(), t.data() + t.numel()), ...); }, g);
  return out;
}

void bm_hand(benchmark::State& st) {
  auto& D = get();
  std::vector<double> G(D.ref.size());
  for (auto _ : st) {
    hand(D, G.data());
    benchmark::DoNotOptimize(G.data());
  }
}

template <class Strategy>
void bm_tower_static(benchmark::State& st) {
  auto& D = get();
  const mlp<tw::tensor<double>> params{D.W1, D.b1, D.W2, D.b2};
  auto per_example = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0), Strategy{});
  mlp<tw::tensor<double>> G = per_example(params, D.X, D.Y);
  const auto flat = flatten(std::tie(G.W1, G.b1, G.W2, G.b2));
  check_close("tower static", flat.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    // A fresh result per iteration, as in the runtime variant (and as the hand-written loop
    // reuses one buffer): assigning to G would keep two 16 MB gradients alive, which the 32 MB
    // L3 holds less well.
    const mlp<tw::tensor<double>> g = per_example(params, D.X, D.Y);
    benchmark::DoNotOptimize(g.W1.data());
  }
}

void bm_tower_runtime(benchmark::State& st) {
  auto& D = get();
  using tw::dyn::value;
  std::function<value(value, value, value, value, value, value)> erased =
      [](value W1, value b1, value W2, value b2, value x, value y) { return loss_leaves(W1, b1, W2, b2, x, y); };
  auto per_example =
      tw::vmap(tw::grad(erased, tw::argnums<0, 1, 2, 3>), tw::in_dims(tw::none, tw::none, tw::none, tw::none, 0, 0));
  auto run = [&] {
    auto G = per_example(D.W1, D.b1, D.W2, D.b2, D.X, D.Y);
    return std::apply([](const auto&... v) { return std::make_tuple(v.to_tensor()...); }, G);
  };
  const auto flat = flatten(run());
  check_close("tower runtime", flat.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    auto G = run();
    benchmark::DoNotOptimize(std::get<0>(G).data());
  }
}

#if TOWER_BENCH_HAVE_ADOLC
void bm_adolc(benchmark::State& st) {
  auto& D = get();
  const short tag = 3;
  std::vector<double> theta;  // W1 | b1 | W2 | b2
  for (const auto* t : {&D.W1, &D.b1, &D.W2, &D.b2}) theta.insert(theta.end(), t->data(), t->data() + t->numel());
  {
    trace_on(tag);
    std::vector<adouble> p(static_cast<std::size_t>(P));
    for (std::int64_t k = 0; k < P; ++k) p[static_cast<std::size_t>(k)] <<= theta[static_cast<std::size_t>(k)];
    std::vector<adouble> x(static_cast<std::size_t>(I));
    for (std::int64_t j = 0; j < I; ++j) x[static_cast<std::size_t>(j)] = mkparam(D.X.data()[j]);
    adouble yhat = p[static_cast<std::size_t>(P - 1)];
    for (std::int64_t k = 0; k < H; ++k) {
      adouble a = p[static_cast<std::size_t>(H * I + k)];
      for (std::int64_t j = 0; j < I; ++j) a += p[static_cast<std::size_t>(k * I + j)] * x[static_cast<std::size_t>(j)];
      yhat += p[static_cast<std::size_t>(H * I + H + k)] * tanh(a);
    }
    adouble e = yhat - mkparam(D.Y.data()[0]);
    adouble l = e * e;
    double out;
    l >>= out;
    trace_off();
  }
  std::vector<double> G(D.ref.size()), g(static_cast<std::size_t>(P)), par(static_cast<std::size_t>(I + 1));
  auto run = [&] {
    for (std::int64_t b = 0; b < B; ++b) {
      std::copy(D.X.data() + b * I, D.X.data() + (b + 1) * I, par.begin());
      par[I] = D.Y.data()[b];
      set_param_vec(tag, I + 1, par.data());
      gradient(tag, P, theta.data(), g.data());
      // scatter into the [gW1 | gb1 | gW2 | gb2] x B layout
      std::copy(g.begin(), g.begin() + H * I, G.begin() + b * H * I);
      std::copy(g.begin() + H * I, g.begin() + H * I + H, G.begin() + B * H * I + b * H);
      std::copy(g.begin() + H * I + H, g.begin() + H * I + 2 * H, G.begin() + B * (H * I + H) + b * H);
      G[static_cast<std::size_t>(B * (H * I + 2 * H) + b)] = g[static_cast<std::size_t>(P - 1)];
    }
  };
  run();
  check_close("adolc", G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(G.data());
  }
}
BENCHMARK(bm_adolc)->Name("mlp_32_64_1/adolc")->Unit(benchmark::kMillisecond);
#endif

BENCHMARK(bm_hand)->Name("mlp_32_64_1/hand")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_static<tw::strategy::automatic_t>)->Name("mlp_32_64_1/tower_static")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_static<tw::strategy::batched_t>)
    ->Name("mlp_32_64_1/tower_static_batched")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_runtime)->Name("mlp_32_64_1/tower_runtime")->Unit(benchmark::kMillisecond);

}  // namespace

TOWER_BENCH_MAIN()

// Lennard-Jones forces: the gradient of E(r) = 4 (s^6 - s^3), s = 1 / |r|^2, over B = 2^20
// three-dimensional displacements (the force is its negative).
//
// Variants: tower static path vmap(grad(E)), tower runtime path (E as a std::function of
// dyn::value), hand-written (one fused loop), and peers (forward mode with 3 directions, one loop
// over displacements; ADOL-C: one tape, the gradient driver per displacement).
//
// Two spellings for tower: "lennard_jones" takes r as a [B, 3] tensor (E sees a 3-vector, so
// vmap runs batching rules); "lennard_jones_xyz" takes the coordinates as three [B] tensors and E
// as a function of three scalars, vmap(grad(E, argnums<0, 1, 2>)). Its hand-written reference
// reads the same three arrays. tower_static is strategy::automatic (packets of examples here),
// tower_static_batched forces batching rules over the whole batch.
#include <functional>

#include <tower/tower.hpp>

#include "bench/bench_common.hpp"
#include "bench/peers.hpp"

namespace tw = tower;
using tower::bench::check_close;

namespace {

constexpr std::int64_t B = std::int64_t{1} << 20;

// E of a 3-vector, as users write it for tower.
auto energy = [](auto r) {
  auto s = 1.0 / tw::sum(r * r);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};

// The same E for the peers' scalar types.
template <class T>
T energy3(const std::array<T, 3>& r) {
  T s = 1.0 / (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
  T s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
}

// The first 4096 displacements only: 96 KiB in and out stay in L2, so the loop's arithmetic shows
// rather than the memory bandwidth (which the machine's neighbours share and which varies run to
// run by up to 1.5x at B = 2^20).
constexpr std::int64_t B_cached = 4096;

// E of three scalars.
auto energy_xyz = [](auto x, auto y, auto z) {
  auto s = 1.0 / (x * x + y * y + z * z);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};

struct data {
  tw::tensor<double> R;         // [B, 3]
  tw::tensor<double> X, Y, Z;   // [B] each: the same coordinates
  std::vector<double> ref;      // hand-written gradient, [B, 3]
  std::vector<double> ref_xyz;  // the same, as gx | gy | gz
};

// dE/dr = dE/ds ds/dr = 4 (6 s^5 - 3 s^2) (-2 s^2 r) = (24 s^4 - 48 s^7) r.
void hand(const double* __restrict R, double* __restrict G, std::int64_t n = B) {
#pragma omp simd
  for (std::int64_t b = 0; b < n; ++b) {
    const double x = R[3 * b], y = R[3 * b + 1], z = R[3 * b + 2];
    const double s = 1.0 / (x * x + y * y + z * z);
    const double s2 = s * s, s4 = s2 * s2;
    const double c = 24.0 * s4 - 48.0 * s4 * s2 * s;
    G[3 * b] = c * x;
    G[3 * b + 1] = c * y;
    G[3 * b + 2] = c * z;
  }
}

void hand_xyz(const double* __restrict X, const double* __restrict Y, const double* __restrict Z,
              double* __restrict G) {
#pragma omp simd
  for (std::int64_t b = 0; b < B; ++b) {
    const double x = X[b], y = Y[b], z = Z[b];
    const double s = 1.0 / (x * x + y * y + z * z);
    const double s2 = s * s, s4 = s2 * s2;
    const double c = 24.0 * s4 - 48.0 * s4 * s2 * s;
    G[b] = c * x;
    G[B + b] = c * y;
    G[2 * B + b] = c * z;
  }
}

data& get() {
  static data D = [] {
    auto v = tower::bench::uniform(static_cast<std::size_t>(3 * B), 0.6, 1.4, 7);
    auto sg = tower::bench::uniform(static_cast<std::size_t>(3 * B), -1, 1, 8);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] *= sg[i] < 0 ? -1.0 : 1.0;
    std::vector<double> x(B), y(B), z(B);
    for (std::int64_t b = 0; b < B; ++b) {
      x[static_cast<std::size_t>(b)] = v[static_cast<std::size_t>(3 * b)];
      y[static_cast<std::size_t>(b)] = v[static_cast<std::size_t>(3 * b + 1)];
      z[static_cast<std::size_t>(b)] = v[static_cast<std::size_t>(3 * b + 2)];
    }
    data d{tw::tensor<double>({B, 3}, std::move(v)),
           tw::tensor<double>(x),
           tw::tensor<double>(y),
           tw::tensor<double>(z),
           std::vector<double>(static_cast<std::size_t>(3 * B)),
           std::vector<double>(static_cast<std::size_t>(3 * B))};
    hand(d.R.data(), d.ref.data());
    hand_xyz(d.X.data(), d.Y.data(), d.Z.data(), d.ref_xyz.data());
    return d;
  }();
  return D;
}

void bm_hand(benchmark::State& st) {
  auto& D = get();
  std::vector<double> G(D.ref.size());
  for (auto _ : st) {
    hand(D.R.data(), G.data());
    benchmark::DoNotOptimize(G.data());
  }
}

// The hand-written loop writing to two buffers in turn: what a result kept alive across the next
// call costs (G = f(R) holds the old G while f writes the new one). 48 MB of outputs instead of
// 24 MB measured 1.28-1.44x the one-buffer loop on this machine, so the tower variants below take
// a fresh result per iteration, which the buffer cache hands back the same memory for.
void bm_hand_two_buffers(benchmark::State& st) {
  auto& D = get();
  std::vector<double> G(D.ref.size()), H(D.ref.size());
  bool odd = false;
  for (auto _ : st) {
    hand(D.R.data(), odd ? G.data() : H.data());
    odd = !odd;
    benchmark::DoNotOptimize(G.data());
    benchmark::DoNotOptimize(H.data());
  }
}

template <class Strategy>
void bm_tower_static(benchmark::State& st) {
  auto& D = get();
  auto forces = tw::vmap(tw::grad(energy), Strategy{});
  tw::tensor<double> G = forces(D.R);
  check_close("tower static", G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    const tw::tensor<double> g = forces(D.R);
    benchmark::DoNotOptimize(g.data());
  }
}

// The same E, with each row of R handed to it as a tw::fixed<double, 3> (in_dims fixed_rows<3>).
void bm_tower_static_fixed(benchmark::State& st) {
  auto& D = get();
  auto forces = tw::vmap(tw::grad(energy), tw::in_dims(tw::fixed_rows<3>));
  tw::tensor<double> G = forces(D.R);
  check_close("tower static fixed", G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    const tw::tensor<double> g = forces(D.R);
    benchmark::DoNotOptimize(g.data());
  }
}

void bm_tower_runtime(benchmark::State& st) {
  auto& D = get();
  using tw::dyn::value;
  std::function<value(value)> erased = [](value r) { return energy(r); };
  auto forces = tw::vmap(tw::grad(erased));
  tw::tensor<double> G = forces(D.R).to_tensor();
  check_close("tower runtime", G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    const tw::tensor<double> g = forces(D.R).to_tensor();
    benchmark::DoNotOptimize(g.data());
  }
}

void bm_hand_cached(benchmark::State& st) {
  auto& D = get();
  std::vector<double> G(static_cast<std::size_t>(3 * B_cached));
  for (auto _ : st) {
    hand(D.R.data(), G.data(), B_cached);
    benchmark::DoNotOptimize(G.data());
  }
}

void bm_tower_static_fixed_cached(benchmark::State& st) {
  auto& D = get();
  const tw::tensor<double> R({B_cached, 3}, std::vector<double>(D.R.data(), D.R.data() + 3 * B_cached));
  auto forces = tw::vmap(tw::grad(energy), tw::in_dims(tw::fixed_rows<3>));
  check_close("tower static fixed, cached", forces(R).data(), D.ref.data(), static_cast<std::size_t>(3 * B_cached));
  for (auto _ : st) {
    const tw::tensor<double> g = forces(R);
    benchmark::DoNotOptimize(g.data());
  }
}

// The runtime path's fused program on the cached displacements: its arithmetic, with no trip to
// memory.
void bm_tower_runtime_cached(benchmark::State& st) {
  auto& D = get();
  const tw::tensor<double> R({B_cached, 3}, std::vector<double>(D.R.data(), D.R.data() + 3 * B_cached));
  std::function<tw::dyn::value(tw::dyn::value)> erased = [](tw::dyn::value r) { return energy(r); };
  auto forces = tw::vmap(tw::grad(erased));
  check_close("tower runtime, cached", forces(R).to_tensor().data(), D.ref.data(),
              static_cast<std::size_t>(3 * B_cached));
  for (auto _ : st) {
    const tw::tensor<double> g = forces(R).to_tensor();
    benchmark::DoNotOptimize(g.data());
  }
}

void bm_hand_xyz(benchmark::State& st) {
  auto& D = get();
  std::vector<double> G(D.ref.size());
  for (auto _ : st) {
    hand_xyz(D.X.data(), D.Y.data(), D.Z.data(), G.data());
    benchmark::DoNotOptimize(G.data());
  }
}

template <class Strategy>
void bm_tower_xyz(benchmark::State& st) {
  auto& D = get();
  auto forces = tw::vmap(tw::grad(energy_xyz, tw::argnums<0, 1, 2>), Strategy{});
  auto run = [&] {
    auto [gx, gy, gz] = forces(D.X, D.Y, D.Z);
    std::vector<double> G(gx.values());
    G.insert(G.end(), gy.data(), gy.data() + B);
    G.insert(G.end(), gz.data(), gz.data() + B);
    return G;
  };
  check_close("tower static xyz", run().data(), D.ref_xyz.data(), D.ref_xyz.size());
  for (auto _ : st) {
    auto G = forces(D.X, D.Y, D.Z);
    benchmark::DoNotOptimize(std::get<0>(G).data());
  }
}

void bm_tower_runtime_xyz(benchmark::State& st) {
  auto& D = get();
  using tw::dyn::value;
  std::function<value(value, value, value)> erased = [](value x, value y, value z) { return energy_xyz(x, y, z); };
  auto forces = tw::vmap(tw::grad(erased, tw::argnums<0, 1, 2>));
  {
    auto [gx, gy, gz] = forces(D.X, D.Y, D.Z);
    std::vector<double> G(gx.to_tensor().values());
    for (const auto* g : {&gy, &gz}) {
      auto t = g->to_tensor();
      G.insert(G.end(), t.data(), t.data() + B);
    }
    check_close("tower runtime xyz", G.data(), D.ref_xyz.data(), D.ref_xyz.size());
  }
  for (auto _ : st) {
    auto G = forces(D.X, D.Y, D.Z);
    benchmark::DoNotOptimize(&G);
  }
}

template <class AD>
void bm_forward(benchmark::State& st) {
  auto& D = get();
  std::vector<double> G(D.ref.size());
  auto run = [&] {
    for (std::int64_t b = 0; b < B; ++b)
      peers::forward_gradient<AD, 3>([](const auto& r) { return energy3(r); }, D.R.data() + 3 * b, G.data() + 3 * b);
  };
  run();
  check_close("forward peer", G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(G.data());
  }
}

#if TOWER_BENCH_HAVE_ADOLC
void bm_adolc(benchmark::State& st) {
  auto& D = get();
  peers::adolc_tape<3>(1, [](const auto& r) { return energy3(r); }, D.R.data());
  std::vector<double> G(D.ref.size());
  auto run = [&] {
    for (std::int64_t b = 0; b < B; ++b) gradient(1, 3, D.R.data() + 3 * b, G.data() + 3 * b);
  };
  run();
  check_close("adolc", G.data(), D.ref.data(), D.ref.size());
  for (auto _ : st) {
    run();
    benchmark::DoNotOptimize(G.data());
  }
}
BENCHMARK(bm_adolc)->Name("lennard_jones/adolc")->Unit(benchmark::kMillisecond);
#endif

BENCHMARK(bm_hand)->Name("lennard_jones/hand")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_hand_two_buffers)->Name("lennard_jones/hand_two_buffers")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_hand_cached)->Name("lennard_jones_4096/hand")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_tower_static_fixed_cached)->Name("lennard_jones_4096/tower_static_fixed")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_tower_runtime_cached)->Name("lennard_jones_4096/tower_runtime")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_hand_xyz)->Name("lennard_jones_xyz/hand")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_xyz<tw::strategy::automatic_t>)
    ->Name("lennard_jones_xyz/tower_static")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_xyz<tw::strategy::batched_t>)
    ->Name("lennard_jones_xyz/tower_static_batched")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_xyz<tw::strategy::fused_t>)
    ->Name("lennard_jones_xyz/tower_static_fused")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_runtime_xyz)->Name("lennard_jones_xyz/tower_runtime")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_static<tw::strategy::automatic_t>)
    ->Name("lennard_jones/tower_static")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_static<tw::strategy::batched_t>)
    ->Name("lennard_jones/tower_static_batched")
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_static_fixed)->Name("lennard_jones/tower_static_fixed")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_runtime)->Name("lennard_jones/tower_runtime")->Unit(benchmark::kMillisecond);
#if TOWER_BENCH_HAVE_EIGEN_AD
BENCHMARK(bm_forward<peers::eigen_ad<3>>)->Name("lennard_jones/eigen_autodiff")->Unit(benchmark::kMillisecond);
#endif
#if TOWER_BENCH_HAVE_CERES
BENCHMARK(bm_forward<ceres::Jet<double, 3>>)->Name("lennard_jones/ceres_jet")->Unit(benchmark::kMillisecond);
#endif
#if TOWER_BENCH_HAVE_SACADO
BENCHMARK(bm_forward<Sacado::Fad::SFad<double, 3>>)->Name("lennard_jones/sacado_sfad")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_forward<Sacado::ELRCacheFad::SFad<double, 3>>)
    ->Name("lennard_jones/sacado_elrcachefad")
    ->Unit(benchmark::kMillisecond);
#endif

}  // namespace

TOWER_BENCH_MAIN()

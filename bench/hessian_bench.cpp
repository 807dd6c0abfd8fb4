// Per-example Hessians of a scalar function on R^8, B = 2^14 points:
//   f(x) = log(1 + |x|^2) + sum_i sin(x_i),   H = 2 I / q - 4 x x^T / q^2 - diag(sin x),  q = 1 + |x|^2.
//
// tower variants: tw::vmap(tw::hessian(f))(X) (hessian = jacfwd(jacrev(f))), static and runtime;
// static fixed: in_dims(tw::fixed_rows<8>), one forward-over-forward pass on elementwise jets per
// example (transforms/static/hessian_forward.hpp).
// Peers: nested forward mode (8 x 8 directions) and ADOL-C's hessian driver on one tape.
//
// This file: hand-written code and tower's default spelling; hessian_bench_variants.cpp: the
// other forms and the peers (two translation units of one binary, each well under a minute of
// g++; the workload is in hessian_workload.hpp).
#include "bench/hessian_workload.hpp"

namespace {

using namespace hessian_r8;

void bm_hand(benchmark::State& st) {
  auto& D = get();
  std::vector<double> H(D.ref.size());
  for (auto _ : st) {
    hand(D.X.data(), H.data());
    benchmark::DoNotOptimize(H.data());
  }
}

BENCHMARK(bm_hand)->Name("hessian_r8/hand")->Unit(benchmark::kMillisecond);
BENCHMARK(bm_tower_static<tw::strategy::automatic_t>)->Name("hessian_r8/tower_static")->Unit(benchmark::kMillisecond);

}  // namespace

TOWER_BENCH_MAIN()

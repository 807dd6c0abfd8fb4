// Per-example gradients with vmap(grad(f)): the README's main job.
//
// Logistic regression, loss(w; x, y) = log(1 + exp(-y <w, x>)). vmap(grad(loss)) gives one
// gradient per example in one call, with w shared (in_dims none) and x, y batched along dim 0.
// The same transforms applied to a type-erased function run on the runtime path. Both are
// checked against a plain loop of grad over the examples, and timed beside it; the exit code
// says whether they agree.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include <tower/tower.hpp>

namespace tw = tower;

namespace {
/// The fastest of a few runs of f, in milliseconds (the first run also warms caches and pools).
template <class F>
double best_ms(F&& f, int runs = 5) {
  double best = 1e300;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

double max_abs_diff(const tw::tensor<double>& a, const tw::tensor<double>& b) {
  double m = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(a.data()[i] - b.data()[i]));
  return m;
}
}  // namespace

int main() {
  const std::int64_t B = 512, d = 16;
  std::vector<double> ws, xs, ys;
  for (std::int64_t j = 0; j < d; ++j) ws.push_back(0.3 * std::cos(0.5 * static_cast<double>(j)));
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t j = 0; j < d; ++j) xs.push_back(std::sin(1.0 + static_cast<double>(b * d + j)));
    ys.push_back(b % 2 ? 1.0 : -1.0);
  }
  const tw::tensor<double> w({d}, ws), X({B, d}, xs), Y({B}, ys);

  auto loss = [](auto w, auto x, auto y) { return tw::log(1.0 + tw::exp(-(y * tw::dot(w, x)))); };

  // Static path: the interpreter stack is resolved at compile time.
  auto per_example = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0));
  tw::tensor<double> G;
  const double static_ms = best_ms([&] { G = per_example(w, X, Y); });

  // Runtime path: the same transforms on a type-erased function.
  using tw::dyn::value;
  std::function<value(value, value, value)> erased = [&](value w, value x, value y) { return loss(w, x, y); };
  auto per_example_rt = tw::vmap(tw::grad(erased), tw::in_dims(tw::none, 0, 0));
  tw::tensor<double> Gr;
  const double runtime_ms = best_ms([&] { Gr = per_example_rt(w, X, Y).to_tensor(); });

  // The reference: grad one example at a time.
  tw::tensor<double> Gl = tw::zeros<double>({B, d});
  const double loop_ms = best_ms([&] {
    for (std::int64_t b = 0; b < B; ++b) {
      const tw::tensor<double> xb({d}, std::vector<double>(X.data() + b * d, X.data() + (b + 1) * d));
      const tw::tensor<double> gb = tw::grad(loss)(w, xb, Y(b));
      std::copy(gb.data(), gb.data() + d, Gl.data() + b * d);
    }
  });

  const double diff_static = max_abs_diff(G, Gl), diff_runtime = max_abs_diff(Gr, Gl);
  std::printf("tower %d.%d.%d: per-example gradients of the logistic loss log(1 + exp(-y <w, x>))\n",
              TOWER_VERSION_MAJOR, TOWER_VERSION_MINOR, TOWER_VERSION_PATCH);
  std::printf("  w: [%lld] shared; x: [%lld, %lld], y: [%lld] batched along dim 0\n", static_cast<long long>(d),
              static_cast<long long>(B), static_cast<long long>(d), static_cast<long long>(B));
  std::printf("  result: G = vmap(grad(loss), in_dims(none, 0, 0))(w, X, Y), shape [%lld, %lld]\n",
              static_cast<long long>(G.shape()[0]), static_cast<long long>(G.shape()[1]));
  std::printf("  G[0, :4] = % .6f % .6f % .6f % .6f\n", G(0, 0), G(0, 1), G(0, 2), G(0, 3));
  std::printf("\n  %-36s %10s %28s\n", "", "time (ms)", "max |G - loop of grad|");
  std::printf("  %-36s %10.3f %28.3g\n", "vmap(grad), static path", static_ms, diff_static);
  std::printf("  %-36s %10.3f %28.3g\n", "vmap(grad), runtime path", runtime_ms, diff_runtime);
  std::printf("  %-36s %10.3f %28s\n", "loop of grad over the examples", loop_ms, "(reference)");
  std::printf(
      "\n  loop time / vmap(grad) time: %.1f on the static path, %.1f on the runtime path (best of 5 runs each)\n",
      loop_ms / static_ms, loop_ms / runtime_ms);
  const bool ok = diff_static < 1e-12 && diff_runtime < 1e-12 && G.shape() == tw::shape_t{B, d};
  std::printf("  check: %s\n", ok ? "vmap(grad) agrees with the loop of grad on both paths" : "MISMATCH");
  return ok ? 0 : 1;
}

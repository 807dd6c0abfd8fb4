// Per-example Hessians on R^8, B = 2^14: tw::vmap(tw::hessian(f))(X), X [B, 8]; with -DRUNTIME the
// same through a type-erased f (the runtime path); with -DNESTED by nested duals instead of jets.
#include <tower/tower.hpp>

#include <functional>
#include <tuple>

#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

auto f = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };

int main() {
  const long B = 1 << 14, N = 8;
  std::vector<double> v = user_tu::uniform(B * N, -1.5, 1.5, 41), h(B * N * N);
  tw::tensor<double> X({B, N}, v), H;
  auto hand = [&] {
    for (long b = 0; b < B; ++b) {
      const double* x = v.data() + b * N;
      double q = 1.0;
      for (long i = 0; i < N; ++i) q += x[i] * x[i];
      const double a = 2.0 / q, c = -4.0 / (q * q);
      double* hb = h.data() + b * N * N;
      for (long i = 0; i < N; ++i) {
        const double cx = c * x[i];
        for (long j = 0; j < N; ++j) hb[i * N + j] = cx * x[j];
        hb[i * N + i] += a - std::sin(x[i]);
      }
    }
  };
#ifdef RUNTIME
  std::function<tw::dyn::value(tw::dyn::value)> erased = [](tw::dyn::value x) { return f(x); };
  auto tower = [&] { H = tw::vmap(tw::hessian(erased))(X).to_tensor(); };
  const char* name = "hessian_r8_runtime";
#elif defined(NESTED)
  // The same Hessians by forward over forward mode on nested duals, without jets: grad_and_value
  // does not answer jacfwd's protocol (transforms/static/jacobian_rows.hpp), so every op carries
  // n + n^2 derivatives per element (docs/architecture.md, One forward-mode number).
  auto gradient = [](auto x) { return std::get<0>(tw::grad_and_value(f)(x)); };
  auto tower = [&] { H = tw::vmap(tw::jacfwd(gradient))(X); };
  const char* name = "hessian_r8_nested";
#else
  auto tower = [&] { H = tw::vmap(tw::hessian(f))(X); };
  const char* name = "hessian_r8";
#endif
  hand();
  tower();
  user_tu::check(name, H.data(), h.data(), h.size(), 1e-9);
  user_tu::compare(name, hand, tower);
}

// The Jacobian of f(x) = tanh(A x) for a 64 x 64 A: tw::jacrev(f)(x), or tw::jacfwd(f)(x) when
// built with -DJACFWD; with -DRUNTIME through a type-erased f (the runtime path).
#include <tower/tower.hpp>

#include <functional>

#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

int main() {
  const long N = 64;
  std::vector<double> a = user_tu::uniform(N * N, -0.2, 0.2, 31), x = user_tu::uniform(N, -1, 1, 32), j(N * N);
  tw::tensor<double> A({N, N}, a), X({N}, x), J;
#ifdef RUNTIME
  std::function<tw::dyn::value(tw::dyn::value)> f = [&A](tw::dyn::value v) { return tw::tanh(tw::matmul(A, v)); };
  auto result = [](const tw::dyn::value& v) { return v.to_tensor(); };
#define JACOBIAN_ROW(name) name "_runtime"
#else
  auto f = [&A](auto v) { return tw::tanh(tw::matmul(A, v)); };
  auto result = [](tw::tensor<double> v) { return v; };
#define JACOBIAN_ROW(name) name
#endif
  auto hand = [&] {
    for (long i = 0; i < N; ++i) {
      double s = 0;
      for (long k = 0; k < N; ++k) s += a[i * N + k] * x[k];
      const double t = std::tanh(s), c = 1.0 - t * t;
      for (long k = 0; k < N; ++k) j[i * N + k] = c * a[i * N + k];
    }
  };
#ifdef JACFWD
  const char* name = JACOBIAN_ROW("jacfwd_64");
  auto tower = [&] { J = result(tw::jacfwd(f)(X)); };
#else
  const char* name = JACOBIAN_ROW("jacrev_64");
  auto tower = [&] { J = result(tw::jacrev(f)(X)); };
#endif
  hand();
  tower();
  user_tu::check(name, J.data(), j.data(), j.size());
  user_tu::compare(name, hand, tower, 20);
}

// The Jacobian of f(x) = tanh(A x) for a 64 x 64 A: tw::jacrev(f)(x), or tw::jacfwd(f)(x) when
// built with -DJACFWD.
#include <tower/tower.hpp>

#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

int main() {
  const long N = 64;
  std::vector<double> a = user_tu::uniform(N * N, -0.2, 0.2, 31), x = user_tu::uniform(N, -1, 1, 32), j(N * N);
  tw::tensor<double> A({N, N}, a), X({N}, x), J;
  auto f = [&A](auto v) { return tw::tanh(tw::matmul(A, v)); };
  auto hand = [&] {
    for (long i = 0; i < N; ++i) {
      double s = 0;
      for (long k = 0; k < N; ++k) s += a[i * N + k] * x[k];
      const double t = std::tanh(s), c = 1.0 - t * t;
      for (long k = 0; k < N; ++k) j[i * N + k] = c * a[i * N + k];
    }
  };
#ifdef JACFWD
  const char* name = "jacfwd_64";
  auto tower = [&] { J = tw::jacfwd(f)(X); };
#else
  const char* name = "jacrev_64";
  auto tower = [&] { J = tw::jacrev(f)(X); };
#endif
  hand();
  tower();
  user_tu::check(name, J.data(), j.data(), j.size());
  user_tu::compare(name, hand, tower, 20);
}

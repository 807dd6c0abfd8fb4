// Diagnostic 1: grad of a function whose result is not a scalar type.
// expect: grad: f must return a scalar, it returns std::vector<tower::grad_value<double, 1> >
// expect-clang: always_false<std::vector<tower::grad_value<double, 1>
// expect-clang: "grad: f must return a scalar (double, float or a one-element tensor)"
#include <vector>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x) { return std::vector{x, x * x}; };
  double d = tw::grad(f)(1.0);
  return d > 0;
}

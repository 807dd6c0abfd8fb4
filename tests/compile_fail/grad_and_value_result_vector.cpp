// Diagnostic 1, named for grad_and_value.
// expect: grad_and_value: f must return a scalar, it returns std::vector<double>
// expect-clang: "grad: f must return a scalar (double, float or a one-element tensor)"
// expect-clang: always_false<std::vector<double
#include <vector>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return std::vector<double>{1.0}; };
  auto [g, v] = tw::grad_and_value(f)(1.0);
  return g > 0;
}

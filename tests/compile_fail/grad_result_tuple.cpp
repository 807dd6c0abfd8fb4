// Diagnostic 1: grad of a function returning a tuple, without has_aux.
// expect: grad: f must return a scalar, it returns std::tuple<tower::grad_value<double, 1>, double>; to return (value, aux) pass tw::has_aux
// expect-clang: "grad: f must return a scalar, it returns a tuple; to return (value, aux) pass tw::has_aux"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x) { return std::make_tuple(x * x, 2.0); };
  double d = tw::grad(f)(1.0);
  return d > 0;
}

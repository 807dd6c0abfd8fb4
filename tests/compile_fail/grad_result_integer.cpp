// Diagnostic 1: grad of a function returning an integer.
// expect: grad: f must return a scalar, it returns int, an integer; return a double, float or one-element tensor
// expect-clang: always_false<int>
// expect-clang: "grad: f must return a scalar, it returns an integer"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return 1; };
  double d = tw::grad(f)(1.0);
  return d > 0;
}

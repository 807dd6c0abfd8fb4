// Diagnostic 9: a transform applied to a function that cannot be called with the arguments given.
// expect: grad: f is not callable with arguments (double)
// expect-clang: "grad: f is not callable with the arguments given"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x, auto y) { return x * y; };
  double g = tw::grad(f)(1.0);
  return g > 0;
}

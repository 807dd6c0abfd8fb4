// Diagnostic 5: differentiating with respect to a bool argument.
// expect: grad: cannot differentiate with respect to argument 0 of type bool (an integer or bool); pass a double, float or tensor
// expect-clang: always_false<bool>
// expect-clang: "grad: cannot differentiate with respect to argument 0, an integer or bool; pass a double, float or tensor"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto b) { return b ? 1.0 : 0.0; };
  double g = tw::grad(f)(true);
  return g > 0;
}

// Diagnostic 5: differentiating with respect to an integer argument.
// expect: grad: cannot differentiate with respect to argument 1 of type int (an integer or bool); pass a double, float or tensor
// expect-clang: always_false<int>
// expect-clang: "grad: cannot differentiate with respect to argument 1, an integer or bool; pass a double, float or tensor"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x, auto n) { return x * n; };
  auto g = tw::grad(f, tw::argnums<0, 1>)(1.0, 3);
  (void)g;
}

// Diagnostic 2: argnums out of range for the function's arity.
// expect: grad: argnums index 2 is out of range for a function of 2 arguments
// expect-clang: always_false<tower::argnums_t<0, 2>, double, double>
// expect-clang: "grad: argnums index 2 is out of range for a function of 2 arguments"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x, auto y) { return x * y; };
  auto g = tw::grad(f, tw::argnums<0, 2>)(1.0, 2.0);
  (void)g;
}

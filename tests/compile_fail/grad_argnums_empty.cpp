// Diagnostic 2: argnums naming no argument.
// expect: grad: argnums must name at least one argument
// expect-clang: "grad: argnums must name at least one argument"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x) { return x * x; };
  double g = tw::grad(f, tw::argnums<>)(1.0);
  return g > 0;
}

// Diagnostic 9: a transform applied to something that is not callable at all.
// expect: grad: f is not callable with arguments (double)
// expect-clang: always_false<double, double>
// expect-clang: "grad: f is not callable with the arguments given"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  double g = tw::grad(3.0)(1.0);
  return g > 0;
}

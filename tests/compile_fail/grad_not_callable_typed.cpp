// Diagnostic 9: a function taking plain double cannot receive grad's traced values.
// expect: grad: f accepts (double) but not the traced values (tower::grad_value<double, 1>) the transform passes it; declare its parameters auto
// expect-clang: always_false<double (*)(double), std::tuple<tower::grad_value<double, 1> &>>
// expect-clang: but not the traced values the transform passes; declare its parameters auto"
#include <tower/tower.hpp>
namespace tw = tower;

double square(double x) { return x * x; }

int main() {
  double g = tw::grad(square)(1.0);
  return g > 0;
}

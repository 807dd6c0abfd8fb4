// Diagnostic 9: a function taking plain double under vmap(grad(f)): grad receives vmap's values,
// and the hint to declare the parameters auto is kept.
// expect: grad: f takes plain values, not the traced values (tower::grad_value<tower::batched<tower::tensor<double>, 1>, 2>) the transforms pass it (from (tower::batched<tower::tensor<double>, 1>)); declare its parameters auto
// expect-clang: always_false<double (*)(double), std::tuple<tower::grad_value<tower::batched<tower::tensor<double>, 1>, 2> &>>
// expect-clang: "grad: f takes plain values, not the traced values the transforms pass it; declare its parameters auto"
#include <tower/tower.hpp>
namespace tw = tower;

double square(double x) { return x * x; }

int main() {
  tw::tensor<double> X({3}, {1, 2, 3});
  tw::tensor<double> g = tw::vmap(tw::grad(square))(X);
  return g.numel() == 0;
}

// Diagnostic 11: mixing float and double tensors in one op names the op and both types.
// expect: op mul (tower::mul_op) mixes tower::tensor<float> and tower::tensor<double> (arguments (tower::tensor<float>, tower::grad_value<tower::tensor<double>, 1>)); convert one so both have the same element type
// expect-clang: always_false<tower::mul_op, tower::tensor<float>, tower::grad_value<tower::tensor<double>, 1>>
// expect-clang: "op: mixes tensor<float> and tensor<double>; convert one so both have the same element type"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  tw::tensor<float> a({3}, {1, 2, 3});
  tw::tensor<double> x({3}, {1, 2, 3});
  tw::tensor<double> g = tw::grad([&](auto w) { return tw::sum(a * w); })(x);
  return g.numel() == 0;
}

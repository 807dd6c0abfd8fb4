// Diagnostic 4: a batched in_dim on a scalar argument.
// expect: vmap: argument 1 is a scalar (double) and cannot be batched; give it tw::none in in_dims
// expect-clang: always_false<double>
// expect-clang: "vmap: argument 1 is a scalar and cannot be batched; give it tw::none in in_dims"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x, auto s) { return x * s; };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  tw::tensor<double> r = tw::vmap(f, tw::in_dims(0, 0))(X, 2.0);
  return r.numel() == 0;
}

// Diagnostic 9 for vmap.
// expect: vmap: f is not callable with arguments (tower::tensor<double>, tower::tensor<double>)
// expect-clang: "vmap: f is not callable with the arguments given"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x) { return x * 2.0; };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  tw::tensor<double> r = tw::vmap(f)(X, X);
  return r.numel() == 0;
}

// Diagnostic 9 on the runtime path.
// expect: vmap: f is not callable with arguments (tower::tensor<double>, tower::tensor<double>)
// expect-clang: "vmap: f is not callable with the arguments given"
#include <functional>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  std::function<tw::dyn::value(tw::dyn::value)> f = [](tw::dyn::value x) { return x * 2.0; };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = tw::vmap(f)(X, X);
  (void)r;
}

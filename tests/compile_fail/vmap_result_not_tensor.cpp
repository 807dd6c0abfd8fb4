// vmap of a function whose result is not a tensor or scalar.
// expect: vmap: f must return tensors or floating-point scalars (or a std::tuple of them), it returns std::vector<double>
// expect-clang: always_false<std::vector<double
// expect-clang: "vmap: f must return tensors or scalars (or a std::tuple of them)"
#include <vector>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return std::vector<double>{1.0}; };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = tw::vmap(f)(X);
  (void)r;
}

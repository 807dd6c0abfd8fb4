// vmap of a function whose result is not a tensor or scalar (nor a pytree of them): integers.
// expect: vmap: f must return tensors or floating-point scalars (or a std::tuple of them), it returns std::vector<int>
// expect-clang: always_false<std::vector<int
// expect-clang: "vmap: f must return tensors or scalars (or a std::tuple of them)"
#include <vector>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return std::vector<int>{1}; };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = tw::vmap(f)(X);
  (void)r;
}

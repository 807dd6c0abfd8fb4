// Diagnostic 10: hessian (= jacfwd(jacrev)) of a function returning a non-differentiable type.
// expect: jacrev: f must return tensors or floating-point numbers (or a pytree of them), it returns std::vector<int>
// expect-clang: "jacrev: f must return tensors or floating-point numbers (or a pytree of them)"
#include <vector>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return std::vector<int>{1}; };
  auto h = tw::hessian(f)(1.0);
  (void)h;
}

// Diagnostic 10: the Jacobian of a function whose result is not differentiable.
// expect: jacrev: f must return tensors or floating-point numbers (or a pytree of them), it returns int
// expect-clang: "jacrev: f must return tensors or floating-point numbers (or a pytree of them)"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return 3; };
  auto j = tw::jacrev(f)(1.0);
  (void)j;
}

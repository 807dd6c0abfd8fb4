// Diagnostic 10: hessian (= jacfwd(jacrev)) of a function returning a non-differentiable type.
// expect: jacrev: f must return a tensor or a floating-point scalar
// expect-clang: "jacrev: f must return a tensor or a floating-point scalar"
#include <vector>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return std::vector<int>{1}; };
  auto h = tw::hessian(f)(1.0);
  (void)h;
}

// Diagnostic 8: has_aux with a function that does not return a (value, aux) pair.
// expect: grad: with has_aux, f must return a (value, aux) pair, it returns tower::grad_value<double, 1>
// expect-clang: always_false<tower::grad_value<double, 1>>
// expect-clang: "grad: with has_aux, f must return a (value, aux) pair"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x) { return x * x; };
  auto [g, aux] = tw::grad(f, tw::has_aux)(1.0);
  (void)g;
}

// Diagnostic 8 on the runtime path: the result type of a type-erased function is static too.
// expect: grad: with has_aux, f must return a (value, aux) pair, it returns tower::dyn::value
// expect-clang: always_false<tower::dyn::value>
// expect-clang: "grad: with has_aux, f must return a (value, aux) pair"
#include <functional>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  std::function<tw::dyn::value(tw::dyn::value)> f = [](tw::dyn::value x) { return x * x; };
  auto [g, aux] = tw::grad(f, tw::has_aux)(1.0);
  (void)g;
}

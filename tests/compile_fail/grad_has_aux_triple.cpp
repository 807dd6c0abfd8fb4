// Diagnostic 8: has_aux with a function that returns three values.
// expect: grad: with has_aux, f must return a (value, aux) pair, it returns 3 values
// expect-clang: "grad: with has_aux, f must return a (value, aux) pair, it returns 3 values"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x) { return std::make_tuple(x * x, 1.0, 2.0); };
  auto [g, aux] = tw::grad(f, tw::has_aux)(1.0);
  (void)g;
}

// grad with tw::fixed arguments runs forward mode: at most 32 differentiated numbers in all.
// expect: grad: with tw::fixed arguments or inside vmap's fused form on numbers, f must be a function of numbers and tw::fixed values
// expect-clang: "grad: with tw::fixed arguments or inside vmap's fused form on numbers, f must be a function of numbers and tw::fixed values
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  tw::fixed<double, 40> x{};
  auto g = tw::grad([](auto v) { return tw::sum(v * v); })(x);
  return g[0] > 0;
}

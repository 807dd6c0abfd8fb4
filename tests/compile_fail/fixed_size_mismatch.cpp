// tw::fixed: an elementwise op on fixed vectors whose sizes do not broadcast.
// expect: tw::fixed: an elementwise op got fixed sizes that do not broadcast
// expect-clang: "tw::fixed: an elementwise op got fixed sizes that do not broadcast"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  tw::fixed<double, 3> a{1.0, 2.0, 3.0};
  tw::fixed<double, 2> b{1.0, 2.0};
  return tw::sum(a * b) > 0;
}

// grad's options are checked when the transform is made.
// expect: grad: options are tw::argnums<...> and tw::has_aux
// expect-clang: "grad: options are tw::argnums<...> and tw::has_aux"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto g = tw::grad([](auto x) { return x * x; }, 0);
  (void)g;
}

// Diagnostic 7: a pytree tangent whose structure is not its primal's.
// expect: jvp: each tangent must have its primal's pytree structure
// expect-clang: "jvp: each tangent must have its primal's pytree structure
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](const auto& t) { return std::get<0>(t) * std::get<1>(t); };
  auto r = tw::jvp(f, std::make_tuple(std::make_tuple(1.0, 2.0)), std::make_tuple(std::make_tuple(1.0, 2.0, 3.0)));
  (void)r;
}

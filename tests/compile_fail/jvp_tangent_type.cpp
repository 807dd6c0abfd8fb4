// Diagnostic 7: a tangent whose element type is not its primal's.
// expect: jvp: each tangent must have its primal's element type (double with double, float with float)
// expect-clang: "jvp: each tangent must have its primal's element type (double with double, float with float)"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x) { return x * x; };
  auto [y, t] = tw::jvp(f, std::tuple{1.0}, std::tuple{1.0f});
  (void)y;
  (void)t;
}

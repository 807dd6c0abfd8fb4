// Diagnostic 13: a cotangent whose structure is not f's output's.
// expect: vjp: the cotangent has type std::vector<tower::tensor<double> > but the output of f has type std::tuple<tower::tensor<double>, tower::tensor<double> >
// expect-clang: "vjp: the cotangent must have the structure of f's output"
#include <tuple>
#include <vector>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](const auto& x) { return std::make_tuple(x * 2.0, x * x); };
  const tw::tensor<double> x{1.0, 2.0};
  auto [y, pull] = tw::vjp(f, x);
  auto g = pull(std::vector<tw::tensor<double>>{x, x});
  (void)g;
  (void)y;
}

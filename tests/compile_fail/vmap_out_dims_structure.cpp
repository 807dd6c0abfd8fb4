// Diagnostic 12: a nested out_dims entry whose structure does not match f's output.
// expect: vmap: a std::tuple entry of out_dims must have one entry per element of the output at its place
// expect-clang: "vmap: a std::tuple entry of out_dims must have one entry per element of the output at its place"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](const auto& x) { return std::make_tuple(x, std::make_tuple(x, x)); };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = tw::vmap(f, tw::out_dims(0, std::tuple{0, 1, 1}))(X);
  (void)r;
}

// Diagnostic 12: a nested in_dims entry whose structure does not match its pytree argument.
// expect: vmap: an in_dims entry does not match its argument's structure
// expect-clang: "vmap: an in_dims entry does not match its argument's structure"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](const auto& t) { return std::get<0>(t) + std::get<1>(t); };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  tw::tensor<double> r = tw::vmap(f, tw::in_dims(std::tuple{0, 0, 0}))(std::make_tuple(X, X));
  return r.numel() == 0;
}

// Diagnostics 4 and 12: a batched pytree argument with a leaf vmap cannot batch (a scalar).
// expect: vmap: argument 0 has type std::tuple<tower::tensor<double>, double>, which vmap cannot batch (a batched argument must be a tensor); give it tw::none in in_dims
// expect-clang: always_false<std::tuple<tower::tensor<double>, double>>
// expect-clang: "vmap: a batched argument must be a tensor; give other arguments tw::none in in_dims"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto p) { return std::get<0>(p) * std::get<1>(p); };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  tw::tensor<double> r = tw::vmap(f)(std::make_tuple(X, 2.0));
  return r.numel() == 0;
}

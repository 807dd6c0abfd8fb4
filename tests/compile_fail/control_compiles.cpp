// The control: a correct composition that must compile, so the harness is proven able to pass.
// expect: (compiles)
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto w, auto x) { return tw::sum(tw::sin(w * x)); };
  tw::tensor<double> w({3}, {1, 2, 3}), X({2, 3}, {1, 2, 3, 4, 5, 6});
  tw::tensor<double> g = tw::vmap(tw::grad(f), tw::in_dims(tw::none, 0))(w, X);
  auto [gx, value] = tw::grad_and_value([](auto x, auto y) { return x * y; }, tw::argnums<0>)(2.0, 3.0);
  auto [gy, aux] = tw::grad([](auto x) { return std::make_tuple(x * x, x); }, tw::has_aux)(2.0);
  return static_cast<int>(g.numel() + gx + value + gy) == 0;
}

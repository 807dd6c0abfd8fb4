// vmap at batch size 1 on the runtime path: one-element physical values run an elementwise op
// as a kernel on doubles (runtime_dispatch.hpp, vmap_interpreter::process). Every elementwise op,
// batched and unbatched operands of ranks 0 to 2, under vmap and vmap(grad): the runtime path
// must give the static path's values and shapes.
#include <functional>
#include <string>
#include <vector>

#include "tests/check.hpp"

namespace tw = tower;
using tw::tensor;
using tw::dyn::value;

namespace {

/// One-element tensors of ranks 0, 1 and 2 holding v.
std::vector<tensor<double>> one_element_shapes(double v) {
  return {tensor<double>(v), tensor<double>({1}, {v}), tensor<double>({1, 1}, {v})};
}

/// A batch of one example x: x with a leading dim of 1.
tensor<double> batch_of_one(const tensor<double>& x) {
  tw::shape_t s = x.shape();
  s.insert(s.begin(), 1);
  return x.with_shape(s);
}

void require_same(const tensor<double>& got, const tensor<double>& expected) {
  INFO("got " << got << ", expected " << expected);
  REQUIRE(got.shape() == expected.shape());
  tw::testing::require_close(got, expected, 1e-14);
}

template <class F>
void check_unary(const std::string& name, F f, double v) {
  std::function<value(value)> erased = [f](value x) { return f(x); };
  auto loss = [f](auto x) { return tw::sum(f(x)); };
  std::function<value(value)> erased_loss = [loss](value x) { return loss(x); };
  for (const auto& x : one_element_shapes(v)) {
    INFO(name << " on shape rank " << x.dim());
    const tensor<double> X = batch_of_one(x);
    require_same(tw::vmap(erased)(X).to_tensor(), tw::vmap(f)(X));
    require_same(tw::vmap(tw::grad(erased_loss))(X).to_tensor(), tw::vmap(tw::grad(loss))(X));
  }
}

template <class F>
void check_binary(const std::string& name, F f, double u, double v) {
  std::function<value(value, value)> erased = [f](value x, value y) { return f(x, y); };
  auto loss = [f](auto x, auto y) { return tw::sum(f(x, y)); };
  std::function<value(value, value)> erased_loss = [loss](value x, value y) { return loss(x, y); };
  for (const auto& x : one_element_shapes(u)) {
    for (const auto& y : one_element_shapes(v)) {
      INFO(name << " on ranks " << x.dim() << " and " << y.dim());
      const tensor<double> X = batch_of_one(x), Y = batch_of_one(y);
      // Both batched, then one of them unbatched.
      require_same(tw::vmap(erased)(X, Y).to_tensor(), tw::vmap(f)(X, Y));
      require_same(tw::vmap(erased, tw::in_dims(0, tw::none))(X, y).to_tensor(), tw::vmap(f, tw::in_dims(0, tw::none))(X, y));
      require_same(tw::vmap(erased, tw::in_dims(tw::none, 0))(x, Y).to_tensor(), tw::vmap(f, tw::in_dims(tw::none, 0))(x, Y));
      require_same(tw::vmap(tw::grad(erased_loss))(X, Y).to_tensor(), tw::vmap(tw::grad(loss))(X, Y));
      require_same(tw::vmap(tw::grad(erased_loss), tw::in_dims(0, tw::none))(X, y).to_tensor(),
                   tw::vmap(tw::grad(loss), tw::in_dims(0, tw::none))(X, y));
      // A plain number as the other operand.
      std::function<value(value)> with_number = [f, v](value x1) { return f(x1, value(v)); };
      require_same(tw::vmap(with_number)(X).to_tensor(), tw::vmap([f, v](auto x1) { return f(x1, v); })(X));
    }
  }
}

}  // namespace

TEST_CASE("runtime vmap at batch size 1: every elementwise op matches the static path, values and shapes") {
#define UNARY(OP, V) check_unary(#OP, [](auto x) { return tw::OP(x); }, V)
  UNARY(neg, 0.3);
  UNARY(abs, -0.3);
  UNARY(sign, -0.3);
  UNARY(exp, 0.3);
  UNARY(expm1, 0.3);
  UNARY(log, 0.3);
  UNARY(log1p, 0.3);
  UNARY(sqrt, 0.3);
  UNARY(rsqrt, 0.3);
  UNARY(square, 0.3);
  UNARY(sin, 0.3);
  UNARY(cos, 0.3);
  UNARY(tan, 0.3);
  UNARY(tanh, 0.3);
  UNARY(sinh, 0.3);
  UNARY(cosh, 0.3);
  UNARY(asin, 0.3);
  UNARY(acos, 0.3);
  UNARY(atan, 0.3);
  UNARY(sigmoid, 0.3);
  UNARY(softplus, 0.3);
  UNARY(relu, 0.3);
  UNARY(erf, 0.3);
  UNARY(reciprocal, 0.3);
#undef UNARY
  check_unary("ones_like", [](auto x) { return tw::ones_like(x) * x; }, 0.3);
  check_unary("zeros_like", [](auto x) { return tw::zeros_like(x) + x; }, 0.3);
#define BINARY(OP) check_binary(#OP, [](auto x, auto y) { return tw::OP(x, y); }, 0.3, 0.6)
  BINARY(add);
  BINARY(sub);
  BINARY(mul);
  BINARY(div);
  BINARY(pow);
  BINARY(maximum);
  BINARY(minimum);
  BINARY(atan2);
#undef BINARY
#define COMPARE(OP) check_binary(#OP, [](auto x, auto y) { return tw::OP(x, y) * x; }, 0.3, 0.6)
  COMPARE(eq);
  COMPARE(ne);
  COMPARE(lt);
  COMPARE(le);
  COMPARE(gt);
  COMPARE(ge);
#undef COMPARE
  check_binary("where", [](auto x, auto y) { return tw::where(tw::gt(x, y), x, y * 2.0); }, 0.3, 0.6);
  check_binary("where, cond first", [](auto x, auto y) { return tw::where(tw::lt(x, y), x * y, y); }, 0.3, 0.6);
}

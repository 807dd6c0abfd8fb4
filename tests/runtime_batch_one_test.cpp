// vmap at batch size 1 on the runtime path: one-element physical values run an elementwise op
// as a kernel on doubles (runtime_dispatch.hpp, vmap_interpreter::process). Every elementwise op,
// batched and unbatched operands of ranks 0 to 2, under vmap and vmap(grad): the values and
// shapes must be those of the batching rules, which run at batch size 2 (the example twice).
// Only the runtime path is instantiated, to keep this file quick to compile.
#include <functional>
#include <string>
#include <vector>

#include "tests/check.hpp"
#include "tests/elementwise_ops.hpp"

namespace tw = tower;
using tw::tensor;
using tw::dyn::value;

namespace {

/// One-element tensors of ranks 0, 1 and 2 holding v.
std::vector<tensor<double>> one_element_shapes(double v) {
  return {tensor<double>(v), tensor<double>({1}, {v}), tensor<double>({1, 1}, {v})};
}

/// A batch of `copies` copies of x: [copies] + x's shape.
tensor<double> batch_of(const tensor<double>& x, std::int64_t copies) {
  tw::shape_t s = x.shape();
  s.insert(s.begin(), copies);
  return tensor<double>(s, std::vector<double>(static_cast<std::size_t>(copies), x.item()));
}

/// The batch-size-1 result must be example 0 of the batch-size-2 one, with a batch dim of 1.
void require_first_example(const value& one, const value& two) {
  const tensor<double> got = one.to_tensor(), ref = two.to_tensor();
  tw::shape_t s = ref.shape();
  REQUIRE(s.at(0) == 2);
  s[0] = 1;
  INFO("got " << got << ", batch of two " << ref);
  REQUIRE(got.shape() == s);
  tw::testing::require_close(got.item(), ref.data()[0], 1e-15);
}

template <class F>
void check_unary(const std::string& name, F f, double v) {
  std::function<value(value)> erased = [f](value x) { return f(x); };
  std::function<value(value)> loss = [f](value x) { return tw::sum(f(x)); };
  for (const auto& x : one_element_shapes(v)) {
    INFO(name << " on shape rank " << x.dim());
    const tensor<double> X1 = batch_of(x, 1), X2 = batch_of(x, 2);
    require_first_example(tw::vmap(erased)(X1), tw::vmap(erased)(X2));
    require_first_example(tw::vmap(tw::grad(loss))(X1), tw::vmap(tw::grad(loss))(X2));
  }
}

template <class F>
void check_binary(const std::string& name, F f, double u, double v) {
  std::function<value(value, value)> erased = [f](value x, value y) { return f(x, y); };
  std::function<value(value, value)> loss = [f](value x, value y) { return tw::sum(f(x, y)); };
  std::function<value(value)> with_number = [f, v](value x) { return f(x, value(v)); };
  const auto first_none = tw::in_dims(0, tw::none);
  const auto none_first = tw::in_dims(tw::none, 0);
  for (const auto& x : one_element_shapes(u)) {
    for (const auto& y : one_element_shapes(v)) {
      INFO(name << " on ranks " << x.dim() << " and " << y.dim());
      const tensor<double> X1 = batch_of(x, 1), X2 = batch_of(x, 2), Y1 = batch_of(y, 1), Y2 = batch_of(y, 2);
      // Both batched, then one of them unbatched, then a plain number.
      require_first_example(tw::vmap(erased)(X1, Y1), tw::vmap(erased)(X2, Y2));
      require_first_example(tw::vmap(erased, first_none)(X1, y), tw::vmap(erased, first_none)(X2, y));
      require_first_example(tw::vmap(erased, none_first)(x, Y1), tw::vmap(erased, none_first)(x, Y2));
      require_first_example(tw::vmap(tw::grad(loss))(X1, Y1), tw::vmap(tw::grad(loss))(X2, Y2));
      require_first_example(tw::vmap(tw::grad(loss), first_none)(X1, y), tw::vmap(tw::grad(loss), first_none)(X2, y));
      require_first_example(tw::vmap(with_number)(X1), tw::vmap(with_number)(X2));
    }
  }
}

}  // namespace

TEST_CASE("runtime vmap at batch size 1: every elementwise op gives the batching rules' values and shapes") {
#define UNARY(OP, POINT, LO, HI) check_unary(#OP, [](auto x) { return tw::OP(x); }, POINT);
  TOWER_TEST_UNARY_OPS(UNARY)
#undef UNARY
  check_unary("ones_like", [](auto x) { return tw::ones_like(x) * x; }, 0.3);
  check_unary("zeros_like", [](auto x) { return tw::zeros_like(x) + x; }, 0.3);
#define BINARY(OP, LO, HI) check_binary(#OP, [](auto x, auto y) { return tw::OP(x, y); }, 0.3, 0.6);
  TOWER_TEST_BINARY_OPS(BINARY)
#undef BINARY
#define COMPARE(OP) check_binary(#OP, [](auto x, auto y) { return tw::OP(x, y) * x; }, 0.3, 0.6);
  TOWER_TEST_COMPARE_OPS(COMPARE)
#undef COMPARE
  check_binary("where", [](auto x, auto y) { return tw::where(tw::gt(x, y), x, y * 2.0); }, 0.3, 0.6);
  check_binary("where, cond first", [](auto x, auto y) { return tw::where(tw::lt(x, y), x * y, y); }, 0.3, 0.6);
}

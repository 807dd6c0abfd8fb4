// Every composition of {vmap, grad, vjp, jvp, jacrev, jacfwd} up to depth 3 (6 + 36 + 216 = 258),
// enumerated at run time on the runtime path, each checked against its outermost transform's
// numerical definition applied to the inner composition (a loop for vmap, central differences
// for the derivatives). The inner composition is itself checked one depth lower, so the checks
// are inductive. Static-path compositions are checked in compositions_test.cpp, and the two
// paths agree there.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;
using tw::tensor;
using tw::dyn::value;

namespace {

using fn = std::function<value(value)>;

struct transform_row {
  const char* name;
  std::function<fn(fn)> apply;                                                // the tower transform
  std::function<tensor<double>(const fn&, const tensor<double>&)> reference;  // its definition
  bool batches;                                                               // consumes a leading input dim
};

tensor<double> eval(const fn& g, const tensor<double>& x) { return g(value(x)).to_tensor(); }

tensor<double> fd_sum_grad(const fn& g, const tensor<double>& x) {
  return fd_grad([&](const tensor<double>& t) { return tw::sum(eval(g, t)).item(); }, x);
}

tensor<double> fd_jac(const fn& g, const tensor<double>& x) {
  return fd_jacobian([&](const tensor<double>& t) { return eval(g, t); }, x);
}

const std::vector<transform_row>& transforms() {
  static const std::vector<transform_row> rows = {
      {"vmap", [](fn g) -> fn { return [g](value x) { return tw::vmap(g)(x); }; },
       [](const fn& g, const tensor<double>& x) {
         std::vector<tensor<double>> r;
         for (std::int64_t b = 0; b < x.shape()[0]; ++b) r.push_back(eval(g, row(x, b)));
         return stack(r);
       },
       true},
      {"grad",
       [](fn g) -> fn {
         return [g](value x) {
           fn s = [g](value y) { return tw::sum(g(y)); };
           return tw::grad(s)(x);
         };
       },
       fd_sum_grad, false},
      {"vjp",
       [](fn g) -> fn {
         return [g](value x) {
           auto [y, pull] = tw::vjp(g, x);
           return std::get<0>(pull(tw::ones_like(y)));
         };
       },
       fd_sum_grad, false},
      {"jvp",
       [](fn g) -> fn {
         return [g](value x) { return tw::jvp(g, std::tuple{x}, std::tuple{tw::ones_like(x)}).second; };
       },
       [](const fn& g, const tensor<double>& x) {
         return (eval(g, x + fd_step) - eval(g, x - fd_step)) / (2 * fd_step);
       },
       false},
      {"jacrev", [](fn g) -> fn { return [g](value x) { return tw::jacrev(g)(x); }; }, fd_jac, false},
      {"jacfwd", [](fn g) -> fn { return [g](value x) { return tw::jacfwd(g)(x); }; }, fd_jac, false},
  };
  return rows;
}

// The base function: elementwise with a coupling term, for any input shape.
const fn base = [](value x) { return tw::sin(x) * tw::sum(x) * 0.5 + tw::exp(x * 0.3); };

int checked = 0;

void check(const std::vector<std::size_t>& chain) {
  // chain[0] is outermost. Build the inner composition and the full one.
  std::string name;
  for (auto k : chain) name += std::string(transforms()[k].name) + "(";
  name += "f" + std::string(chain.size(), ')');
  INFO("composition " << name);
  fn inner = base;
  int batch_dims = 0;
  for (std::size_t i = chain.size(); i-- > 1;) {
    inner = transforms()[chain[i]].apply(inner);
    batch_dims += transforms()[chain[i]].batches;
  }
  const auto& outer = transforms()[chain[0]];
  batch_dims += outer.batches;
  shape_t s(static_cast<std::size_t>(batch_dims), 2);
  s.push_back(2);
  const tensor<double> x = sample(s, -1, 1, static_cast<unsigned>(chain.size() * 7 + chain[0]));
  const tensor<double> got = eval(outer.apply(inner), x);
  const tensor<double> want = outer.reference(inner, x);
  require_close(got, want, outer.batches ? 1e-12 : 2e-5);
  ++checked;
}

}  // namespace

TEST_CASE("all compositions of six transforms up to depth 3, runtime path, inductively") {
  checked = 0;
  const std::size_t n = transforms().size();
  for (std::size_t a = 0; a < n; ++a) check({a});
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b) check({a, b});
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t c = 0; c < n; ++c) check({a, b, c});
  WARN("checked " << checked << " compositions");
  REQUIRE(checked == 6 + 36 + 216);
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

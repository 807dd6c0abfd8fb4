// vmap's per-example fallback for ops without a batching rule (dsl/batch_fallback.hpp):
// the op-rule checker verifies such ops like any other (vmap = loop, vmap(grad), both paths), the
// runtime path warns once naming the op, and strict mode is a per-op trait.
#include <catch2/catch.hpp>

#include <sstream>

#include "tests/op_checker.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;

namespace {

/// x³ with a VJP and a JVP but no batching rule.
struct cube_op {
  static constexpr const char* name = "cube";
  template <class X>
  auto base(const X& x) const {
    return tw::kernels::map(x, [](auto v) { return v * v * v; });
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const {
    return std::make_tuple(g * x * x * 3.0);
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X& x, const T& t) const {
    return t * x * x * 3.0;
  }
};

/// <x, y> of two vectors, no batching rule: under vmap it runs once per example.
struct inner_op {
  static constexpr const char* name = "inner";
  template <class X, class Y>
  auto base(const X& x, const Y& y) const {
    return tw::kernels::sum(tw::kernels::zip("inner", x, y, [](auto a, auto b) { return a * b; }), {0}, false);
  }
  template <class G, class O, class X, class Y>
  auto vjp(const G& g, const O&, const X& x, const Y& y) const {
    return std::make_tuple(g * y, g * x);
  }
  template <class O, class X, class Y, class TX, class TY>
  auto jvp(const O&, const X& x, const Y& y, const TX& tx, const TY& ty) const {
    return tw::sum(tx * y + x * ty);
  }
};

/// An op that opts into strict vmap: a missing batching rule would be a compile error.
struct strict_op {
  static constexpr bool strict_vmap = true;
};

}  // namespace

static_assert(tw::strict_vmap_v<strict_op>);
#ifndef TOWER_STRICT_VMAP
static_assert(!tw::strict_vmap_v<cube_op>);
#endif

TEST_CASE("an op without a batching rule warns once on its first vmap, naming it") {
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  std::function<tw::dyn::value(tw::dyn::value)> f = [](tw::dyn::value x) { return tw::call_op(cube_op{}, x); };
  const tw::tensor<double> x = sample({3, 2});
  const tw::tensor<double> r1 = tw::vmap(f)(x).to_tensor();
  const tw::tensor<double> r2 = tw::vmap(f)(x).to_tensor();
  std::cerr.rdbuf(old);
  const std::string s = captured.str();
  CHECK(s.find("op 'cube' has no batching rule") != std::string::npos);
  CHECK(s.find("cube") == s.rfind("cube"));  // once
  require_close(r1, tw::kernels::map(x, [](double v) { return v * v * v; }), 1e-12);
  require_close(r2, r1, 0);
}

TEST_CASE("ops without a batching rule pass every rule check through the fallback") {
  counter() = {};
  check_table(std::make_tuple(prim<1>("cube (no batching rule)", cube_op{},
                                      {uniform<1>({shape_t{}}), uniform<1>({shape_t{3}}), uniform<1>({shape_t{2, 2}})}),
                              prim<2>("inner (no batching rule)", inner_op{},
                                      {uniform<2>({shape_t{3}, shape_t{3}}), uniform<2>({shape_t{1}, shape_t{1}})}),
                              row<2>("inner inside a composition",
                                     [](auto x, auto y) { return tw::exp(tw::call_op(inner_op{}, tw::sin(x), y)) * x; },
                                     {uniform<2>({shape_t{4}, shape_t{4}})})));
  counter().report("batch fallback");
  REQUIRE(counter().total() > 100);
}

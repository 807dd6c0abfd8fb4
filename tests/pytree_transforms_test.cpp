// Pytree outputs through every transform that accepts them (vjp, grad with has_aux, jvp, vmap,
// jacrev, jacfwd, hessian), on the static and the runtime path: one checker runs each transform
// on functions returning tuples, pairs, arrays, vectors, Hana structs and vectors of tuples,
// against finite differences and loops.
#include <catch2/catch.hpp>

#include <array>
#include <boost/hana/define_struct.hpp>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::dyn::value;
using tw::shape_t;
using tw::tensor;

namespace {

template <class T>
struct two {
  BOOST_HANA_DEFINE_STRUCT(two, (T, a), (T, b));
};

/// The leaves of a pytree, in order, as tensors.
template <class X>
std::vector<tensor<double>> leaves(const X& x) {
  std::vector<tensor<double>> r;
  tw::tree_for_each([&](const auto& leaf) { r.push_back(as_tensor(leaf)); }, x);
  return r;
}

/// A pytree of the structure of x with sample values (cotangents, tangents).
template <class X>
auto sample_like(const X& x, unsigned seed) {
  return tw::tree_map([&](const auto& leaf) {
    using L = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (std::is_arithmetic_v<L>) return sample({}, -1, 1, seed++).item();
    else return sample(tw::shape(leaf), -1, 1, seed++);
  }, x);
}

/// sum_k <c_k, y_k> over the leaves.
double dot_leaves(const std::vector<tensor<double>>& c, const std::vector<tensor<double>>& y) {
  REQUIRE(c.size() == y.size());
  double s = 0;
  for (std::size_t k = 0; k < c.size(); ++k) s += tw::sum(c[k] * y[k]).item();
  return s;
}

void require_leaves_close(const std::vector<tensor<double>>& a, const std::vector<tensor<double>>& b, double tol) {
  REQUIRE(a.size() == b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    INFO("leaf " << k);
    require_close(a[k], b[k], tol);
  }
}

/// f as a type-erased function of one runtime value (the runtime path).
template <class F>
auto erased(F f) {
  using R = decltype(f(std::declval<const value&>()));
  return std::function<R(value)>([f](value x) { return f(x); });
}

/// The checker: f maps a [3] tensor to a pytree of tensors (and numbers); every transform that
/// accepts a pytree output gives the numbers of finite differences and loops, on both paths.
template <class F>
void check_pytree_output(const std::string& what, F f) {
  INFO(what);
  const tensor<double> x = sample({3}, -1, 1, 11), v = sample({3}, -1, 1, 12), X = sample({4, 3}, -1, 1, 13);
  const auto y = f(x);
  const auto ys = leaves(y);
  const auto c = sample_like(y, 20);
  const auto cs = leaves(c);
  auto fr = erased(f);

  // vjp: J^T c against finite differences of <c, f(x)>.
  const tensor<double> want_vjp = fd_grad([&](const tensor<double>& t) { return dot_leaves(cs, leaves(f(t))); }, x);
  {
    const auto out_pull = tw::vjp(f, x);
    require_leaves_close(leaves(out_pull.first), ys, 0);
    require_close(std::get<0>(out_pull.second(c)), want_vjp, 1e-6);
    const auto out_pull_r = tw::vjp(fr, x);
    require_leaves_close(leaves(out_pull_r.first), ys, 0);
    require_close(std::get<0>(out_pull_r.second(c)).to_tensor(), want_vjp, 1e-6);
    // has_aux: the pytree as aux, the vjp of its first leaf... of a scalar beside it.
    auto with_aux = [&f](const auto& t) { return std::make_pair(tw::sin(t), f(t)); };
    const auto [o, pull, aux] = tw::vjp(with_aux, x, tw::has_aux);
    require_leaves_close(leaves(aux), ys, 0);
    require_close(std::get<0>(pull(v)), tw::cos(x) * v, 1e-14);
    const auto [o_r, pull_r, aux_r] = tw::vjp(erased(with_aux), x, tw::has_aux);
    require_leaves_close(leaves(aux_r), ys, 0);
    require_close(std::get<0>(pull_r(v)).to_tensor(), tw::cos(x) * v, 1e-14);
  }

  // grad with has_aux: the pytree comes back as aux, unwrapped.
  {
    auto g = [&f](const auto& t) { return std::make_pair(tw::sum(tw::sin(t)), f(t)); };
    const auto [gr, aux] = tw::grad(g, tw::has_aux)(x);
    require_close(gr, tw::cos(x), 1e-14);
    require_leaves_close(leaves(aux), ys, 0);
    const auto [gr_r, aux_r] = tw::grad(erased(g), tw::has_aux)(x);
    require_close(gr_r.to_tensor(), tw::cos(x), 1e-14);
    require_leaves_close(leaves(aux_r), ys, 0);
  }

  // jvp: J v against finite differences along v.
  {
    std::vector<tensor<double>> want;
    const auto yp = leaves(f(x + fd_step * v)), ym = leaves(f(x - fd_step * v));
    for (std::size_t k = 0; k < yp.size(); ++k) want.push_back((yp[k] - ym[k]) / (2 * fd_step));
    const auto [o, dy] = tw::jvp(f, std::tuple{x}, std::tuple{v});
    require_leaves_close(leaves(o), ys, 0);
    require_leaves_close(leaves(dy), want, 1e-6);
    const auto [o_r, dy_r] = tw::jvp(fr, std::tuple{x}, std::tuple{v});
    require_leaves_close(leaves(o_r), ys, 0);
    require_leaves_close(leaves(dy_r), want, 1e-6);
  }

  // vmap: every leaf batched along dim 0, equal to a loop.
  {
    std::vector<std::vector<tensor<double>>> per_leaf(ys.size());
    for (std::int64_t b = 0; b < 4; ++b) {
      const auto yb = leaves(f(row(X, b)));
      for (std::size_t k = 0; k < yb.size(); ++k) per_leaf[k].push_back(yb[k]);
    }
    std::vector<tensor<double>> want;
    for (const auto& p : per_leaf) want.push_back(stack(p));
    require_leaves_close(leaves(tw::vmap(f)(X)), want, 1e-14);
    require_leaves_close(leaves(tw::vmap(fr)(X)), want, 1e-14);
  }
}

auto out_tuple = [](const auto& x) { return std::make_tuple(tw::sin(x), tw::sum(x * x)); };
auto out_pair = [](const auto& x) { return std::make_pair(tw::exp(x) * x, tw::tanh(x)); };
auto out_array = [](const auto& x) {
  using T = decltype(tw::sin(x));
  return std::array<T, 2>{tw::sin(x) * 2.0, tw::cos(x)};
};
auto out_vector = [](const auto& x) {
  using T = decltype(tw::sin(x));
  return std::vector<T>{tw::sin(x), tw::cos(x) * x, tw::exp(x)};
};
auto out_struct = [](const auto& x) {
  using T = decltype(tw::sin(x));
  return two<T>{tw::sin(x) * x, tw::tanh(x) + 1.0};
};
auto out_vector_of_tuples = [](const auto& x) {
  using T = decltype(tw::sin(x));
  return std::vector<std::tuple<T, T>>{{tw::sin(x), x * x}, {tw::cos(x), x * 3.0}};
};

}  // namespace

TEST_CASE("pytree outputs: vjp, grad's aux, jvp and vmap on both paths") {
  check_pytree_output("tuple", out_tuple);
  check_pytree_output("pair", out_pair);
  check_pytree_output("array", out_array);
  check_pytree_output("vector", out_vector);
  check_pytree_output("Hana struct", out_struct);
  check_pytree_output("vector of tuples", out_vector_of_tuples);
}

TEST_CASE("vjp of a vector output is J^T c (issue 32: it was all zeros)") {
  // functorch: vjp(lambda t: [t, t.sum()], x)[1]([ones, ones]) = ones + ones.sum() ... per leaf.
  const tensor<double> t = sample({3}, -1, 1, 31);
  auto f = [](const auto& x) {
    using T = decltype(x * 1.0);
    return std::vector<T>{x * 1.0, tw::sum(x) + tw::zeros_like(x)};
  };
  const tensor<double> c0 = sample({3}, -1, 1, 32), c1 = sample({3}, -1, 1, 33);
  const auto g = std::get<0>(tw::vjp(f, t).second(std::vector<tensor<double>>{c0, c1}));
  require_close(g, c0 + tw::sum(c1), 1e-14);
}

TEST_CASE("float arguments: grad's adjoint from double arithmetic comes back a float (issue 32)") {
  // x * 2.0 and pow(x, 3) compute in double; the gradient has the argument's type, as grad promises.
  auto twice = [](auto x) { return x * 2.0; };
  auto cube = [](auto x) { return tw::pow(x, 3); };
  const auto g = tw::grad(twice)(2.0f);
  STATIC_REQUIRE(std::is_same_v<decltype(g), const float>);
  REQUIRE(g == 2.0f);
  const auto g3 = tw::grad(cube)(2.0f);
  STATIC_REQUIRE(std::is_same_v<decltype(g3), const float>);
  REQUIRE(g3 == 12.0f);
  // Second order: the float adjoint is itself tracked (d/dx 3x^2 * 2 = 12x).
  const auto gg = tw::grad(tw::grad([](auto x) { return tw::pow(x, 3) * 2.0; }))(2.0f);
  STATIC_REQUIRE(std::is_same_v<decltype(gg), const float>);
  REQUIRE(gg == 24.0f);
  require_close(static_cast<double>(tw::jacrev(cube)(2.0f)), 12.0, 0);
  require_close(static_cast<double>(tw::jacfwd(cube)(2.0f)), 12.0, 0);
  require_close(static_cast<double>(tw::hessian(cube)(2.0f)), 12.0, 0);
  require_close(static_cast<double>(tw::hessian(cube)(0.5f)), 3.0, 0);
}

TEST_CASE("runtime path: jacrev and jacfwd with has_aux on a type-erased f (issue 32)") {
  const tensor<double> x = sample({3}, -1, 1, 41);
  auto f = [](const auto& t) { return std::make_tuple(tw::sin(t) * t, tw::sum(t)); };
  std::function<std::tuple<value, value>(value)> fr = [f](value t) { return f(t); };
  const tensor<double> want = fd_jacobian([&](const tensor<double>& t) { return std::get<0>(f(t)); }, x);
  const auto [jr, aux_r] = tw::jacrev(fr, tw::has_aux)(x);
  require_close(jr.to_tensor(), want, 1e-6);
  require_close(aux_r.to_tensor(), tw::sum(x), 0);
  const auto [jf, aux_f] = tw::jacfwd(fr, tw::has_aux)(x);
  require_close(jf.to_tensor(), want, 1e-6);
  require_close(aux_f.to_tensor(), tw::sum(x), 0);
  // The static path gives the same.
  const auto [js, aux_s] = tw::jacrev(f, tw::has_aux)(x);
  require_close(js, jr.to_tensor(), 1e-14);
  require_close(aux_s, tw::sum(x), 0);
}

TEST_CASE("runtime path: vjp of a type-erased f returning a tuple (issue 32)") {
  const tensor<double> x = sample({3}, -1, 1, 42), u = sample({3}, -1, 1, 43);
  std::function<std::tuple<value, value>(value)> fr = [](value t) { return std::make_tuple(tw::sin(t), tw::sum(t * t)); };
  const auto [y, pull] = tw::vjp(fr, x);
  require_close(std::get<0>(y).to_tensor(), tw::sin(x), 0);
  // cos(x) u + 2 x * 0.5
  require_close(std::get<0>(pull(std::make_tuple(u, 0.5))).to_tensor(), tw::cos(x) * u + x, 1e-14);
}

namespace {
/// J of each output leaf of f at x, by finite differences, in leaf order.
template <class F>
std::vector<tensor<double>> fd_jacobians(F f, const tensor<double>& x) {
  std::vector<tensor<double>> r;
  const std::size_t n = leaves(f(x)).size();
  for (std::size_t k = 0; k < n; ++k) r.push_back(fd_jacobian([&](const tensor<double>& t) { return leaves(f(t))[k]; }, x));
  return r;
}
}  // namespace

TEST_CASE("jacrev, jacfwd and hessian of pytree outputs: one Jacobian per leaf, in the output's structure") {
  const tensor<double> x = sample({3}, -1, 1, 51);
  auto check = [&](const std::string& what, auto f) {
    INFO(what);
    const auto want = fd_jacobians(f, x);
    require_leaves_close(leaves(tw::jacrev(f)(x)), want, 1e-6);
    require_leaves_close(leaves(tw::jacfwd(f)(x)), want, 1e-6);
    require_leaves_close(leaves(tw::jacrev(erased(f))(x)), want, 1e-6);
    require_leaves_close(leaves(tw::jacfwd(erased(f))(x)), want, 1e-6);
    // The structure is the output's: a tuple stays a tuple, a vector keeps its length.
    STATIC_REQUIRE(tw::detail::same_structure<decltype(f(x)), decltype(tw::jacrev(f)(x))>());
    // Hessians: of each leaf of sum-reduced outputs, against jacfwd of jacrev per leaf.
    auto reduced = [f](const auto& t) { return tw::tree_map([](const auto& leaf) { return tw::sum(leaf * leaf); }, f(t)); };
    const auto H = leaves(tw::hessian(reduced)(x));
    const auto Hr = leaves(tw::hessian(erased(reduced))(x));
    const auto n = leaves(f(x)).size();
    REQUIRE(H.size() == n);
    for (std::size_t k = 0; k < n; ++k) {
      // Against finite differences of the gradient of leaf k (jacrev, checked above).
      require_close(H[k], fd_jacobian([&](const tensor<double>& t) { return leaves(tw::jacrev(reduced)(t))[k]; }, x), 1e-6);
      require_close(Hr[k], H[k], 1e-12);
    }
  };
  check("tuple", out_tuple);
  check("pair", out_pair);
  check("array", out_array);
  check("vector", out_vector);
  check("Hana struct", out_struct);
  check("vector of tuples", out_vector_of_tuples);
}

TEST_CASE("jvp with has_aux, negative argnums, and hessian over two argnums as nested blocks") {
  const tensor<double> x = sample({3}, -1, 1, 61), y = sample({3}, -1, 1, 62), v = sample({3}, -1, 1, 63);
  // jvp(f, primals, tangents, has_aux): (output, J v, aux), aux untouched; both paths.
  auto f = [](const auto& t) { return std::make_pair(tw::sin(t) * t, tw::sum(t)); };
  const auto [o, jv, aux] = tw::jvp(f, std::tuple{x}, std::tuple{v}, tw::has_aux);
  require_close(o, tw::sin(x) * x, 0);
  require_close(jv, (tw::cos(x) * x + tw::sin(x)) * v, 1e-14);
  require_close(aux, tw::sum(x), 0);
  const auto [o_r, jv_r, aux_r] = tw::jvp(erased(f), std::tuple{x}, std::tuple{v}, tw::has_aux);
  require_close(jv_r.to_tensor(), jv, 1e-14);
  require_close(aux_r.to_tensor(), tw::sum(x), 0);

  // argnums<-1> is the last argument, as in torch.func.
  auto g = [](const auto& a, const auto& b) { return tw::sum(tw::sin(a) * b * b); };
  require_close(tw::grad(g, tw::argnums<-1>)(x, y), tw::grad(g, tw::argnums<1>)(x, y), 0);
  const auto [ga, gb] = tw::grad(g, tw::argnums<-2, -1>)(x, y);
  require_close(ga, tw::cos(x) * y * y, 1e-14);
  require_close(gb, 2.0 * tw::sin(x) * y, 1e-14);
  auto h = [](const auto& a, const auto& b) { return tw::sin(a) * b; };
  require_close(tw::jacrev(h, tw::argnums<-1>)(x, y), tw::jacrev(h, tw::argnums<1>)(x, y), 0);
  require_close(tw::jacfwd(h, tw::argnums<-1>)(x, y), tw::jacfwd(h, tw::argnums<1>)(x, y), 0);
  require_close(tw::hessian(g, tw::argnums<-1>)(x, y), tw::hessian(g, tw::argnums<1>)(x, y), 0);

  // hessian(f, argnums<0, 1>): ((H_aa, H_ab), (H_ba, H_bb)), each block against finite
  // differences of the gradient (torch.func's nesting).
  const auto H = tw::hessian(g, tw::argnums<0, 1>)(x, y);
  auto grad_a = [&](const tensor<double>& a, const tensor<double>& b) { return tw::grad(g, tw::argnums<0>)(a, b); };
  auto grad_b = [&](const tensor<double>& a, const tensor<double>& b) { return tw::grad(g, tw::argnums<1>)(a, b); };
  require_close(std::get<0>(std::get<0>(H)), fd_jacobian([&](const tensor<double>& t) { return grad_a(t, y); }, x), 1e-6);
  require_close(std::get<1>(std::get<0>(H)), fd_jacobian([&](const tensor<double>& t) { return grad_a(x, t); }, y), 1e-6);
  require_close(std::get<0>(std::get<1>(H)), fd_jacobian([&](const tensor<double>& t) { return grad_b(t, y); }, x), 1e-6);
  require_close(std::get<1>(std::get<1>(H)), fd_jacobian([&](const tensor<double>& t) { return grad_b(x, t); }, y), 1e-6);
  std::function<value(value, value)> gr = [g](value a, value b) { return g(a, b); };
  const auto Hr = tw::hessian(gr, tw::argnums<0, 1>)(x, y);
  require_close(std::get<1>(std::get<0>(Hr)).to_tensor(), std::get<1>(std::get<0>(H)), 1e-12);
}

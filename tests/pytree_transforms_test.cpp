// Pytree outputs through every transform that accepts them (vjp, grad with has_aux, jvp, vmap,
// jacrev, jacfwd, hessian), on the static and the runtime path: one checker runs each transform
// on functions returning tuples, pairs, arrays, vectors, Hana structs and vectors of tuples,
// against finite differences and loops.
#include <catch2/catch.hpp>

#include <array>
#include <boost/hana/define_struct.hpp>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;
using tw::tensor;
using tw::dyn::value;

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
  return tw::tree_map(
      [&](const auto& leaf) {
        using L = std::remove_cvref_t<decltype(leaf)>;
        if constexpr (std::is_arithmetic_v<L>) return sample({}, -1, 1, seed++).item();
        else return sample(tw::shape(leaf), -1, 1, seed++);
      },
      x);
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
  std::function<std::tuple<value, value>(value)> fr = [](value t) {
    return std::make_tuple(tw::sin(t), tw::sum(t * t));
  };
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
  for (std::size_t k = 0; k < n; ++k)
    r.push_back(fd_jacobian([&](const tensor<double>& t) { return leaves(f(t))[k]; }, x));
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
    auto reduced = [f](const auto& t) {
      return tw::tree_map([](const auto& leaf) { return tw::sum(leaf * leaf); }, f(t));
    };
    const auto H = leaves(tw::hessian(reduced)(x));
    const auto Hr = leaves(tw::hessian(erased(reduced))(x));
    const auto n = leaves(f(x)).size();
    REQUIRE(H.size() == n);
    for (std::size_t k = 0; k < n; ++k) {
      // Against finite differences of the gradient of leaf k (jacrev, checked above).
      require_close(H[k], fd_jacobian([&](const tensor<double>& t) { return leaves(tw::jacrev(reduced)(t))[k]; }, x),
                    1e-6);
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
  require_close(std::get<0>(std::get<0>(H)), fd_jacobian([&](const tensor<double>& t) { return grad_a(t, y); }, x),
                1e-6);
  require_close(std::get<1>(std::get<0>(H)), fd_jacobian([&](const tensor<double>& t) { return grad_a(x, t); }, y),
                1e-6);
  require_close(std::get<0>(std::get<1>(H)), fd_jacobian([&](const tensor<double>& t) { return grad_b(t, y); }, x),
                1e-6);
  require_close(std::get<1>(std::get<1>(H)), fd_jacobian([&](const tensor<double>& t) { return grad_b(x, t); }, y),
                1e-6);
  std::function<value(value, value)> gr = [g](value a, value b) { return g(a, b); };
  const auto Hr = tw::hessian(gr, tw::argnums<0, 1>)(x, y);
  require_close(std::get<1>(std::get<0>(Hr)).to_tensor(), std::get<1>(std::get<0>(H)), 1e-12);
}

namespace {
/// x with leaf j (in leaf order) replaced by t (a number leaf takes t's single element).
template <class X>
X with_leaf(const X& x, std::size_t j, const tensor<double>& t) {
  std::size_t k = 0;
  return tw::tree_map(
      [&](const auto& leaf) -> std::remove_cvref_t<decltype(leaf)> {
        const bool here = k++ == j;
        if constexpr (std::is_arithmetic_v<std::remove_cvref_t<decltype(leaf)>>) return here ? t.item() : leaf;
        else return here ? t : leaf;
      },
      x);
}

/// x's structure with leaves a and b (x has two leaves): f of it on the runtime path.
template <class X, class A, class B>
auto with_leaves(const X& x, const A& a, const B& b) {
  std::size_t k = 0;
  return tw::tree_map([&](const auto&) { return k++ == 0 ? a : b; }, x);
}

/// The checker for pytree arguments: f maps a pytree x of two leaves to a tensor. jacrev and
/// jacfwd give x's structure of Jacobians (leaf out_shape + its shape), hessian of a scalar
/// reduction of f the nested structure (H[i][j] = d/dx_j of d/dx_i), each against finite
/// differences, and the runtime path with the leaves as two arguments (argnums<0, 1>) agrees.
template <class F, class X>
void check_pytree_argument(const std::string& what, F f, const X& x) {
  INFO(what);
  const auto xs = leaves(x);
  REQUIRE(xs.size() == 2);
  // d f / d leaf j by finite differences.
  auto fd_leaf = [&x](auto fn, std::size_t j) {
    return fd_jacobian([&](const tensor<double>& t) { return as_tensor(fn(with_leaf(x, j, t))); }, leaves(x)[j]);
  };
  const std::vector<tensor<double>> want{fd_leaf(f, 0), fd_leaf(f, 1)};
  const auto Jr = tw::jacrev(f)(x);
  const auto Jf = tw::jacfwd(f)(x);
  STATIC_REQUIRE(tw::detail::same_structure<X, decltype(Jr)>());
  STATIC_REQUIRE(tw::detail::same_structure<X, decltype(Jf)>());
  require_leaves_close(leaves(Jr), want, 1e-6);
  require_leaves_close(leaves(Jf), want, 1e-6);

  // Hessians of a scalar of f: x's structure of x's structures.
  auto g = [f](const auto& t) { return tw::sum(tw::sin(f(t))); };
  const auto H = tw::hessian(g)(x);
  STATIC_REQUIRE(tw::detail::same_structure<decltype(tw::tree_map([&](const auto&) { return x; }, x)), decltype(H)>());
  const auto Hs = leaves(H);
  REQUIRE(Hs.size() == 4);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 2; ++j) {
      INFO("H[" << i << "][" << j << "]");
      require_close(Hs[2 * i + j], fd_leaf([&](const X& t) { return leaves(tw::jacrev(g)(t))[i]; }, j), 1e-6);
    }

  // The runtime path has no pytree arguments: the leaves as two arguments give the same blocks.
  std::function<value(value, value)> fr = [f, x](value a, value b) { return f(with_leaves(x, a, b)); };
  std::function<value(value, value)> gr = [g, x](value a, value b) { return g(with_leaves(x, a, b)); };
  auto call_leaves = [&](auto transform) {
    std::vector<tensor<double>> r;
    std::size_t k = 0;
    std::array<value, 2> v;
    tw::tree_for_each([&](const auto& leaf) { v[k++] = tw::runtime::detail::to_value(leaf); }, x);
    tw::tree_for_each([&](const auto& leaf) { r.push_back(as_tensor(leaf)); }, transform(v[0], v[1]));
    return r;
  };
  require_leaves_close(call_leaves([&](value a, value b) { return tw::jacrev(fr, tw::argnums<0, 1>)(a, b); }), want,
                       1e-6);
  require_leaves_close(call_leaves([&](value a, value b) { return tw::jacfwd(fr, tw::argnums<0, 1>)(a, b); }), want,
                       1e-6);
  require_leaves_close(call_leaves([&](value a, value b) { return tw::hessian(gr, tw::argnums<0, 1>)(a, b); }), Hs,
                       1e-10);
}
}  // namespace

TEST_CASE("jacrev, jacfwd and hessian w.r.t. pytree arguments: Jacobians in the argument's structure (issue 32)") {
  const tensor<double> a = sample({3}, -1, 1, 71), b = sample({2}, -1, 1, 72), c = sample({3}, -1, 1, 73),
                       M = sample({2, 3}, -1, 1, 74);
  check_pytree_argument(
      "tuple", [](const auto& t) { return tw::sin(std::get<0>(t)) * tw::sum(std::get<1>(t) * std::get<1>(t)); },
      std::make_tuple(a, b));
  check_pytree_argument(
      "pair with a number", [](const auto& t) { return tw::exp(t.first * t.second) + t.second; },
      std::make_pair(a, 0.7));
  check_pytree_argument(
      "vector", [](const auto& v) { return tw::sin(v[0]) * v[1] + v[0]; }, std::vector<tensor<double>>{a, c});
  check_pytree_argument(
      "array", [](const auto& v) { return tw::tanh(v[0] * v[1]); }, std::array<tensor<double>, 2>{a, c});
  check_pytree_argument(
      "Hana struct with a matrix", [](const auto& s) { return tw::sin(tw::matmul(s.a, s.b)); },
      two<tensor<double>>{M, c});
  check_pytree_argument(
      "nested tuple",
      [](const auto& t) { return tw::sum(std::get<0>(std::get<1>(t)) * std::get<0>(t)) * std::get<0>(t); },
      std::make_tuple(a, std::make_tuple(c)));
}

namespace {
/// One example of a leaf batched along d (none: the leaf itself).
tensor<double> example(const tensor<double>& t, std::optional<std::int64_t> d, std::int64_t b) {
  return d ? row(tw::movedim(t, *d, 0), b) : t;
}
}  // namespace

TEST_CASE("vmap: nested out_dims (a pytree prefix of the output) and tw::none entries, both paths (issue 32)") {
  const tensor<double> X = sample({4, 3}, -1, 1, 81), w = sample({3}, -1, 1, 82);
  auto f = [](const auto& x, const auto& v) {
    return std::make_tuple(tw::sin(x) * v, std::make_tuple(tw::exp(x), v * 3.0), x * 2.0);
  };
  std::function<std::tuple<value, std::tuple<value, value>, value>(value, value)> fr = [f](value x, value v) {
    return f(x, v);
  };
  // Per output leaf: its out dim (none: not batched) and its value per example.
  const std::vector<std::optional<std::int64_t>> dims{1, 0, std::nullopt, -1};
  auto check = [&](const std::string& what, const auto& r) {
    INFO(what);
    const auto got = leaves(r);
    REQUIRE(got.size() == 4);
    for (std::int64_t b = 0; b < 4; ++b) {
      const auto want = leaves(f(row(X, b), w));
      for (std::size_t k = 0; k < 4; ++k) {
        INFO("leaf " << k << ", example " << b);
        require_close(example(got[k], dims[k], b), want[k], 1e-14);
      }
    }
  };
  const auto in = tw::in_dims(0, tw::none);
  const auto out = tw::out_dims(1, std::tuple{0, tw::none}, -1);
  check("static", tw::vmap(f, in, out)(X, w));
  check("static, chunked", tw::vmap(f, in, out, tw::chunk_size(3))(X, w));
  check("runtime", tw::vmap(fr, in, out)(X, w));
  check("runtime, chunked", tw::vmap(fr, in, out, tw::chunk_size(3))(X, w));
  // The whole prefix as one entry.
  check("one tuple entry", tw::vmap(f, in, tw::out_dims(std::tuple{1, std::tuple{0, tw::none}, -1}))(X, w));
  // The containers keep their kind: a pair and an array come back as a pair and an array.
  auto g = [](const auto& x) { return std::make_pair(x * 2.0, std::array{tw::sin(x), tw::cos(x)}); };
  const auto pa = tw::vmap(g, tw::out_dims(0, std::tuple{1, 0}))(X);
  STATIC_REQUIRE(std::is_same_v<decltype(pa), const std::pair<tensor<double>, std::array<tensor<double>, 2>>>);
  require_close(pa.second[0], tw::movedim(tw::sin(X), 0, 1), 1e-14);
  require_close(pa.second[1], tw::cos(X), 1e-14);
  // tw::none for an output that depends on the batch raises, as in torch.func.
  const auto bad = tw::out_dims(tw::none, std::tuple{0, tw::none}, 0);
  REQUIRE_THROWS_WITH(
      tw::vmap(f, in, bad)(X, w),
      Catch::Contains("out_dims is tw::none for an output (shape [3] per example) that depends on the batch"));
  REQUIRE_THROWS_WITH(
      tw::vmap(fr, in, bad)(X, w),
      Catch::Contains("out_dims is tw::none for an output (shape [3] per example) that depends on the batch"));
}

TEST_CASE("vmap: per-member in_dims for a Hana struct argument (issue 32)") {
  const tensor<double> A = sample({4, 3}, -1, 1, 91), At = tw::movedim(A, 0, 1), c = sample({3}, -1, 1, 92),
                       x = sample({3}, -1, 1, 93);
  auto f = [](const auto& p, const auto& v) { return tw::sin(p.a) * p.b + v; };
  auto check = [&](const std::string& what, two<tw::member_dim> d, const two<tensor<double>>& p, const auto& r) {
    INFO(what);
    for (std::int64_t b = 0; b < 4; ++b) {
      const two<tensor<double>> pb{example(p.a, d.a.dim, b), example(p.b, d.b.dim, b)};
      require_close(row(r, b), f(pb, x), 1e-14);
    }
  };
  const two<tw::member_dim> d0{0, tw::none}, d1{tw::none, 1}, d2{1, 0};
  const two<tensor<double>> p0{A, c}, p1{c, At}, p2{At, A};
  check("a batched, b not", d0, p0, tw::vmap(f, tw::in_dims(d0, tw::none))(p0, x));
  check("a not, b along 1", d1, p1, tw::vmap(f, tw::in_dims(d1, tw::none))(p1, x));
  check("both, different dims", d2, p2, tw::vmap(f, tw::in_dims(d2, tw::none))(p2, x));
  check("chunked", d0, p0, tw::vmap(f, tw::in_dims(d0, tw::none), tw::chunk_size(3))(p0, x));
  // Under grad: per-example gradients w.r.t. a struct with one batched member.
  auto loss = [](const auto& p, const auto& v) { return tw::sum(tw::sin(p.a) * p.b * v); };
  const auto G = tw::vmap(tw::grad(loss), tw::in_dims(d0, tw::none))(p0, x);
  for (std::int64_t b = 0; b < 4; ++b) {
    const auto gb = tw::grad(loss)(two<tensor<double>>{row(A, b), c}, x);
    require_close(row(G.a, b), gb.a, 1e-14);
    require_close(row(G.b, b), gb.b, 1e-14);
  }
  // Every member tw::none and no other batched argument: no batch to map over.
  const two<tw::member_dim> none_all{tw::none, tw::none};
  REQUIRE_THROWS_AS(tw::vmap(f, tw::in_dims(none_all, tw::none))(p0, x), tw::error);
}

TEST_CASE("vjp and jvp of an f with no output to differentiate raise, both paths (issue 32)") {
  // An empty std::vector shows only at run time (an int or an empty tuple is a compile error:
  // tests/compile_fail/vjp_result_*.cpp, jvp_result_*.cpp).
  const tensor<double> x = sample({3}, -1, 1, 101);
  auto f = [](const auto& t) { return std::vector<decltype(t * 1.0)>{}; };
  std::function<std::vector<value>(value)> fr = [](value) { return std::vector<value>{}; };
  auto with_aux = [](const auto& t) { return std::make_pair(std::vector<decltype(t * 1.0)>{}, t); };
  const auto msg = Catch::Contains("f returned no output to differentiate");
  REQUIRE_THROWS_WITH(tw::vjp(f, x), msg);
  REQUIRE_THROWS_WITH(tw::vjp(fr, x), msg);
  REQUIRE_THROWS_WITH(tw::vjp(with_aux, x, tw::has_aux), msg);
  REQUIRE_THROWS_WITH(tw::jvp(f, std::tuple{x}, std::tuple{x}), msg);
  REQUIRE_THROWS_WITH(tw::jvp(fr, std::tuple{x}, std::tuple{x}), msg);
  REQUIRE_THROWS_WITH(tw::jvp(with_aux, std::tuple{x}, std::tuple{x}, tw::has_aux), msg);
  // A non-empty vector is differentiated.
  auto g = [](const auto& t) { return std::vector<decltype(t * 1.0)>{t * 2.0}; };
  require_close(std::get<0>(tw::vjp(g, x).second(std::vector<tensor<double>>{x})), x * 2.0, 1e-14);
}

TEST_CASE("jacrev and jacfwd with argnums<0, 1>, and with a pytree argument beside a tensor (issue 32)") {
  const tensor<double> x = sample({3}, -1, 1, 111), y = sample({2}, -1, 1, 112), z = sample({2}, -1, 1, 113);
  auto f = [](const auto& a, const auto& b) { return tw::sin(a) * tw::sum(b * b); };
  const std::vector<tensor<double>> want{fd_jacobian([&](const tensor<double>& t) { return f(t, y); }, x),
                                         fd_jacobian([&](const tensor<double>& t) { return f(x, t); }, y)};
  require_leaves_close(leaves(tw::jacrev(f, tw::argnums<0, 1>)(x, y)), want, 1e-6);
  require_leaves_close(leaves(tw::jacfwd(f, tw::argnums<0, 1>)(x, y)), want, 1e-6);
  // A pytree argument and a tensor: (pytree of Jacobians, Jacobian).
  auto g = [](const auto& t, const auto& c) { return tw::sin(std::get<0>(t)) * tw::sum(std::get<1>(t) * c); };
  const auto t = std::make_tuple(x, y);
  const std::vector<tensor<double>> want_g{
      fd_jacobian([&](const tensor<double>& u) { return g(std::make_tuple(u, y), z); }, x),
      fd_jacobian([&](const tensor<double>& u) { return g(std::make_tuple(x, u), z); }, y),
      fd_jacobian([&](const tensor<double>& u) { return g(t, u); }, z)};
  require_leaves_close(leaves(tw::jacrev(g, tw::argnums<0, 1>)(t, z)), want_g, 1e-6);
  require_leaves_close(leaves(tw::jacfwd(g, tw::argnums<0, 1>)(t, z)), want_g, 1e-6);
  // hessian over both: ((H_tt, H_tc), (H_ct, H_cc)), H_tt itself t's structure of t's structures.
  auto s = [g](const auto& u, const auto& c) { return tw::sum(tw::sin(g(u, c))); };
  const auto H = tw::hessian(s, tw::argnums<0, 1>)(t, z);
  const auto Hs = leaves(H);
  REQUIRE(Hs.size() == 9);  // 2x2 + 2 + 2 + 1
  // H_cc against finite differences of the gradient in c; H_ct[1] (d/dy of grad_c) likewise.
  require_close(std::get<1>(std::get<1>(H)),
                fd_jacobian([&](const tensor<double>& u) { return tw::grad(s, tw::argnums<1>)(t, u); }, z), 1e-6);
  require_close(
      std::get<1>(std::get<0>(std::get<1>(H))),
      fd_jacobian([&](const tensor<double>& u) { return tw::grad(s, tw::argnums<1>)(std::make_tuple(x, u), z); }, y),
      1e-6);
  require_close(
      std::get<0>(std::get<0>(std::get<0>(std::get<0>(H)))),
      fd_jacobian([&](const tensor<double>& u) { return std::get<0>(tw::grad(s)(std::make_tuple(u, y), z)); }, x),
      1e-6);
}

TEST_CASE("vmap of jacrev, jacfwd and hessian w.r.t. a pytree argument equals a loop (issue 32)") {
  const tensor<double> X = sample({4, 3}, -1, 1, 121), Y = sample({4, 2}, -1, 1, 122);
  auto f = [](const auto& t) { return tw::sin(std::get<0>(t)) * tw::sum(std::get<1>(t) * std::get<1>(t)); };
  auto g = [f](const auto& t) { return tw::sum(tw::tanh(f(t))); };
  const auto batch = std::make_tuple(X, Y);
  const auto Jr = leaves(tw::vmap(tw::jacrev(f))(batch));
  const auto Jf = leaves(tw::vmap(tw::jacfwd(f))(batch));
  const auto H = leaves(tw::vmap(tw::hessian(g))(batch));
  for (std::int64_t b = 0; b < 4; ++b) {
    INFO("example " << b);
    const auto t = std::make_tuple(row(X, b), row(Y, b));
    const auto want_j = leaves(tw::jacrev(f)(t)), want_h = leaves(tw::hessian(g)(t));
    for (std::size_t k = 0; k < want_j.size(); ++k) {
      require_close(row(Jr[k], b), want_j[k], 1e-14);
      require_close(row(Jf[k], b), want_j[k], 1e-14);
    }
    for (std::size_t k = 0; k < want_h.size(); ++k) require_close(row(H[k], b), want_h[k], 1e-12);
  }
}

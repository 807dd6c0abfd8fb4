// Pytrees through grad and vmap: tuples, pairs, arrays, vectors and Hana structs go in and
// come back with the same structure. Per-example gradients of a small MLP with its parameters
// in a struct, against a loop of grad and against finite differences.
#include <catch2/catch.hpp>

#include <array>
#include <boost/hana/define_struct.hpp>
#include <tuple>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;
using tw::tensor;

namespace {

template <class T>
struct mlp {
  BOOST_HANA_DEFINE_STRUCT(mlp, (T, W1), (T, b1), (T, w2), (T, b2));
};

// A 3-4-1 tanh network with squared error, on one example.
auto mlp_loss = [](const auto& p, const auto& x, const auto& y) {
  auto h = tw::tanh(tw::sum(p.W1 * x, 1) + p.b1);  // W1: [4, 3], x: [3] -> [4]
  auto out = tw::sum(p.w2 * h) + p.b2;             // w2: [4], b2: scalar tensor
  auto r = out - y;
  return r * r;
};

mlp<tensor<double>> make_params() {
  return {sample({4, 3}, -1, 1, 81), sample({4}, -1, 1, 82), sample({4}, -1, 1, 83), tensor<double>(0.1)};
}

}  // namespace

TEST_CASE("grad of a function of a struct returns a struct of gradients, matching finite differences") {
  const auto p = make_params();
  const tensor<double> x = sample({3}, -1, 1, 84);
  const double y = 0.3;
  const mlp<tensor<double>> g = tw::grad(mlp_loss)(p, x, y);
  auto loss_with = [&](auto change) {
    return [&, change](const tensor<double>& t) {
      auto q = p;
      change(q, t);
      return mlp_loss(q, x, y).item();
    };
  };
  require_close(g.W1, fd_grad(loss_with([](auto& q, const tensor<double>& t) { q.W1 = t; }), p.W1), 1e-6);
  require_close(g.b1, fd_grad(loss_with([](auto& q, const tensor<double>& t) { q.b1 = t; }), p.b1), 1e-6);
  require_close(g.w2, fd_grad(loss_with([](auto& q, const tensor<double>& t) { q.w2 = t; }), p.w2), 1e-6);
  require_close(g.b2, fd_grad(loss_with([](auto& q, const tensor<double>& t) { q.b2 = t; }), p.b2), 1e-6);
}

TEST_CASE("per-example MLP gradients: vmap(grad) over a struct of parameters equals a loop") {
  const auto p = make_params();
  const std::int64_t B = 5;
  const tensor<double> X = sample({B, 3}, -1, 1, 85), Y = sample({B}, -1, 1, 86);
  const auto G = tw::vmap(tw::grad(mlp_loss), tw::in_dims(tw::none, 0, 0))(p, X, Y);
  REQUIRE(G.W1.shape() == shape_t{B, 4, 3});
  REQUIRE(G.b2.shape() == shape_t{B});
  std::vector<tensor<double>> w1, b1, w2, b2;
  for (std::int64_t b = 0; b < B; ++b) {
    const auto g = tw::grad(mlp_loss)(p, row(X, b), Y(b));
    w1.push_back(g.W1);
    b1.push_back(g.b1);
    w2.push_back(g.w2);
    b2.push_back(g.b2);
  }
  require_close(G.W1, stack(w1), 1e-12);
  require_close(G.b1, stack(b1), 1e-12);
  require_close(G.w2, stack(w2), 1e-12);
  require_close(G.b2, stack(b2), 1e-12);
}

TEST_CASE("tuples, pairs, arrays and vectors as arguments and results") {
  const tensor<double> a = sample({3}, -1, 1, 91), b = sample({3}, -1, 1, 92);
  // grad over a tuple argument returns a tuple.
  auto f = [](const auto& t) { return tw::sum(std::get<0>(t) * tw::sin(std::get<1>(t))); };
  const auto g = tw::grad(f)(std::make_tuple(a, b));
  require_close(std::get<0>(g), tw::sin(b), 1e-12);
  require_close(std::get<1>(g), a * tw::cos(b), 1e-12);
  // a vector of tensors
  auto fv = [](const auto& v) { return tw::sum(v[0] * v[1]) + tw::sum(v[2]); };
  const std::vector<tensor<double>> vs{a, b, a};
  const auto gv = tw::grad(fv)(vs);
  REQUIRE(gv.size() == 3);
  require_close(gv[0], b, 0);
  require_close(gv[1], a, 0);
  require_close(gv[2], tw::ones_like(a), 0);
  // an array of scalars, and a pair
  auto fa = [](const auto& arr) { return arr[0] * arr[1] * arr[1]; };
  const std::array<double, 2> ga = tw::grad(fa)(std::array<double, 2>{2.0, 3.0});
  require_close(ga[0], 9.0, 0);
  require_close(ga[1], 12.0, 0);
  auto fp = [](const auto& pr) { return pr.first * pr.second; };
  const auto gp = tw::grad(fp)(std::make_pair(2.0, 5.0));
  require_close(gp.first, 5.0, 0);
  require_close(gp.second, 2.0, 0);
  // vmap over a tuple argument, returning a tuple: each leaf batched along dim 0.
  const tensor<double> A = sample({4, 3}, -1, 1, 93), Bm = sample({4, 3}, -1, 1, 94);
  const auto [s, d] = tw::vmap([](const auto& t) {
    return std::make_tuple(tw::sum(std::get<0>(t)), std::get<0>(t) - std::get<1>(t));
  })(std::make_tuple(A, Bm));
  REQUIRE(s.shape() == shape_t{4});
  require_close(d, A - Bm, 0);
  require_close(s, tw::sum(A, 1), 1e-12);
}

TEST_CASE("nested in_dims for tuple arguments, and jvp over pytrees") {
  const tensor<double> A = sample({4, 3}, -1, 1, 95), w = sample({3}, -1, 1, 96);
  // The tuple's first element is batched along dim 0, the second is shared.
  const tensor<double> r = tw::vmap([](const auto& t) { return tw::sum(std::get<0>(t) * std::get<1>(t)); },
                                    tw::in_dims(std::tuple{0, tw::none}))(std::make_tuple(A, w));
  REQUIRE(r.shape() == shape_t{4});
  require_close(r, tw::sum(A * w, 1), 1e-12);
  // jvp with a tuple primal and tangent: the directional derivative of <a, sin b>.
  const tensor<double> a = sample({3}, -1, 1, 97), b = sample({3}, -1, 1, 98), da = sample({3}, -1, 1, 99),
                       db = sample({3}, -1, 1, 100);
  auto f = [](const auto& t) { return tw::sum(std::get<0>(t) * tw::sin(std::get<1>(t))); };
  const auto [y, dy] = tw::jvp(f, std::make_tuple(std::make_tuple(a, b)), std::make_tuple(std::make_tuple(da, db)));
  require_close(y, f(std::make_tuple(a, b)), 0);
  require_close(dy.item(), tw::sum(da * tw::sin(b) + a * tw::cos(b) * db).item(), 1e-12);
}

// Table-driven rule checks of the nn composites (softmax, log_softmax, mse_loss, cross_entropy,
// binary_cross_entropy_with_logits); see tests/op_checker.hpp.
#include <catch2/catch.hpp>

#include "tests/op_checker.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;

TEST_CASE("nn composites: softmax, log_softmax, mse_loss, cross_entropy, bce with logits: every rule, both paths") {
  counter() = {};
  check_table(std::make_tuple(
      row<1>("softmax", [](auto x) { return tw::softmax(x, -1); },
             {uniform<1>({shape_t{4}}, -3, 3), uniform<1>({shape_t{2, 3}}, -3, 3)}),
      row<1>("log_softmax dim 0", [](auto x) { return tw::log_softmax(x, 0); },
             {uniform<1>({shape_t{4}}, -3, 3), uniform<1>({shape_t{3, 2}}, -3, 3)}),
      row<2>("mse_loss", [](auto a, auto b) { return tw::mse_loss(a, b); },
             {uniform<2>({shape_t{4}, shape_t{4}}), uniform<2>({shape_t{2, 3}, shape_t{3}})}),
      row<2>("cross_entropy (probabilities)", [](auto x, auto p) { return tw::cross_entropy(x, tw::softmax(p, -1)); },
             {uniform<2>({shape_t{3, 4}, shape_t{3, 4}}, -2, 2)}),
      row<2>("binary_cross_entropy_with_logits",
             [](auto x, auto y) { return tw::binary_cross_entropy_with_logits(x, y); },
             {uniform<2>({shape_t{4}, shape_t{4}}, -3, 3), uniform<2>({shape_t{2, 2}, shape_t{2, 2}}, -3, 3)})));
  counter().report("nn");
  REQUIRE(counter().total() > 150);
}

// tower::shape_t against std::vector<std::int64_t> as the model: random sequences of the
// operations tower uses (push_back, insert, erase, resize, assign, copies and moves, both
// inline and past the 6 entries kept inline), checked after every step.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "tower/core/shape_vector.hpp"

using tower::shape_t;
using model = std::vector<std::int64_t>;

namespace {
void require_same(const shape_t& s, const model& m) {
  REQUIRE(s.size() == m.size());
  REQUIRE(s.empty() == m.empty());
  REQUIRE(s.capacity() >= s.size());
  for (std::size_t i = 0; i < m.size(); ++i) REQUIRE(s[i] == m[i]);
  REQUIRE(model(s.begin(), s.end()) == m);
  REQUIRE(model(s.rbegin(), s.rend()) == model(m.rbegin(), m.rend()));
}
}  // namespace

TEST_CASE("shape_t: every operation matches std::vector, inline and on the heap") {
  std::mt19937 rng(7);
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n)(rng); };
  for (int trial = 0; trial < 200; ++trial) {
    shape_t s;
    model m;
    for (int step = 0; step < 60; ++step) {
      const auto v = static_cast<std::int64_t>(pick(100)) - 50;
      const std::size_t op = pick(11);
      INFO("trial " << trial << ", step " << step << ", op " << op << ", size " << m.size());
      switch (op) {
        case 0:
        case 1:
          s.push_back(v);
          m.push_back(v);
          break;
        case 2: {
          const std::size_t at = pick(m.size());
          s.insert(s.begin() + at, v);
          m.insert(m.begin() + static_cast<std::ptrdiff_t>(at), v);
          break;
        }
        case 3:
          if (!m.empty()) {
            const std::size_t at = pick(m.size() - 1);
            s.erase(s.begin() + at);
            m.erase(m.begin() + static_cast<std::ptrdiff_t>(at));
          }
          break;
        case 4: {
          const std::size_t n = pick(10);
          s.resize(n, v);
          m.resize(n, v);
          break;
        }
        case 5: {  // insert a range of *itself* (make_room must not read moved entries)
          const std::size_t a = pick(m.size()), b = a + pick(m.size() - a), at = pick(m.size());
          const model items(m.begin() + static_cast<std::ptrdiff_t>(a), m.begin() + static_cast<std::ptrdiff_t>(b));
          s.insert(s.begin() + at, s.begin() + a, s.begin() + b);
          m.insert(m.begin() + static_cast<std::ptrdiff_t>(at), items.begin(), items.end());
          break;
        }
        case 6: {  // copy out and back
          shape_t c(s);
          s = shape_t{};
          require_same(c, m);
          s = c;
          break;
        }
        case 7: {  // move out, reuse the moved-from shape past the inline entries, move back
          shape_t c(std::move(s));
          require_same(c, m);
          REQUIRE(s.empty());
          for (std::int64_t k = 0; k < 9; ++k) s.push_back(k);
          require_same(s, model{0, 1, 2, 3, 4, 5, 6, 7, 8});
          s = std::move(c);
          break;
        }
        case 8: {
          shape_t c(pick(9), v);
          model cm(c.size(), v);
          s.swap(c);
          std::swap(m, cm);
          require_same(c, cm);
          break;
        }
        case 9: {
          const shape_t o(m);
          s = o;
          break;
        }  // from std::vector
        case 10:
          if (!m.empty()) {
            s.pop_back();
            m.pop_back();
          }
          break;
        default:
          s.clear();
          m.clear();
          break;
      }
      require_same(s, m);
      REQUIRE((s == shape_t(m)));
      if (!m.empty()) {
        REQUIRE(s.front() == m.front());
        REQUIRE(s.back() == m.back());
        REQUIRE(s.at(m.size() - 1) == m.back());
      }
      REQUIRE_THROWS_AS(s.at(m.size()), std::out_of_range);
    }
  }
}

TEST_CASE("shape_t: comparison is std::vector's (lexicographic)") {
  const std::vector<model> cases{{}, {1}, {1, 2}, {1, 3}, {2}, {1, 2, 3, 4, 5, 6, 7}, {1, 2, 3, 4, 5, 6, 8}};
  for (const model& a : cases)
    for (const model& b : cases) {
      REQUIRE((shape_t(a) == shape_t(b)) == (a == b));
      REQUIRE((shape_t(a) < shape_t(b)) == (a < b));
    }
  REQUIRE(shape_t{2, 3} == shape_t(model{2, 3}));
  REQUIRE(shape_t(3, 1) == shape_t{1, 1, 1});
}

TEST_CASE("shape_t: a moved-from shape is empty, keeps its entries inline again, and is reusable") {
  for (const std::size_t n : {3, 6, 7, 20}) {
    shape_t s(n, 4);
    shape_t t(std::move(s));
    REQUIRE(t == shape_t(n, 4));
    REQUIRE(s.empty());
    REQUIRE(s.capacity() == shape_t::inline_capacity);
    for (std::int64_t k = 0; k < 9; ++k) s.push_back(k);
    REQUIRE(s == shape_t{0, 1, 2, 3, 4, 5, 6, 7, 8});
    shape_t u;
    u = std::move(t);
    REQUIRE(t.empty());
    REQUIRE(t.capacity() == shape_t::inline_capacity);
    REQUIRE(u == shape_t(n, 4));
  }
}

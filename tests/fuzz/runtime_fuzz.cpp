// Differential fuzzer of the runtime path (tw::dyn::value, std::function).
//
// Each program is a random stack of up to 4 transforms (vmap with random in_dims, out_dims and
// strategy; vmap with an unbatched argument; grad, vjp, jvp, jacrev, jacfwd, hessian; a grad and
// a vmap whose function captures the enclosing transform's value) around a random chain of ops
// (every op spelling of dsl/*.hpp, each on inputs in its domain) of a random shape. Every layer
// is checked against its definition applied to the layers inside it (as in
// all_compositions_test.cpp): a loop over examples for vmap, central finite differences for the
// derivatives (entries at a kink, where the one-sided differences disagree, are skipped).
//
// About one program in seven takes edge inputs: zeros, infinities, NaN (vmap must match its loop
// NaN for NaN; a derivative entry is checked where the input and the reference are finite),
// empty dims (a tower::error is fine: it is bad input) and huge sizes (a tower::error is
// required). A tower::error that says "internal", any other exception, or a crash is a failure.
//
//   bazel run //tests/fuzz:runtime_fuzz -- --seed 1 --programs 10000      # a long run
//   bazel test //tests/fuzz:runtime_fuzz                                  # CI: fixed seeds (BUILD)
//   options: --seed S (first seed; program i uses seed S + i), --programs N, --verbose
//
// A failure prints the program (its seed reproduces it alone: --seed <that> --programs 1).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tower/tower.hpp"

namespace tw = tower;
using tw::shape_t;
using tw::tensor;
using tw::dyn::value;

namespace {

using fn = std::function<value(value)>;
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

struct rng {
  std::mt19937_64 g;
  explicit rng(std::uint64_t seed) : g(seed * 0x9E3779B97F4A7C15ull + 1) {}
  int below(int n) { return static_cast<int>(g() % static_cast<std::uint64_t>(n)); }
  bool coin(double p = 0.5) { return std::uniform_real_distribution<double>(0, 1)(g) < p; }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g); }
};

std::string shape_str(const shape_t& s) { return tw::detail::shape_str(s); }

tensor<double> random_tensor(rng& r, const shape_t& s, double lo = -1, double hi = 1) {
  std::vector<double> v(static_cast<std::size_t>(tw::numel_of(s)));
  for (auto& e : v) e = r.real(lo, hi);
  return tensor<double>(s, std::move(v));
}

std::int64_t rank_of(const shape_t& s) { return static_cast<std::int64_t>(s.size()); }
std::int64_t dim_size(const shape_t& s, std::int64_t d) {
  return s[static_cast<std::size_t>(d < 0 ? d + rank_of(s) : d)];
}

// ---------------------------------------------------------------------------------------------
// The chain: registers r0 (the input), r1, ...; each step computes one register from earlier ones.

struct step {
  std::string text;
  std::function<value(const std::vector<value>&)> run;
};

struct chain {
  shape_t in_shape;
  std::vector<step> steps;
  // A branch decided at exact ties or zeros (a comparison; abs, sign, relu, maximum, minimum,
  // amax, amin and the norms at their kinks): at edge inputs (zeros) such a point is isolated, and
  // a derivative there is the op's convention (PyTorch's: abs'(0) = 0, a tie splits the gradient),
  // which differences of the whole program need not see.
  bool kinks_at_zeros = false;
  value operator()(const value& x) const {
    std::vector<value> regs{x};
    regs.reserve(steps.size() + 1);
    for (const auto& s : steps) regs.push_back(s.run(regs));
    return regs.back();
  }
  std::string text() const {
    std::string t = "f(r0: " + shape_str(in_shape) + ") {";
    for (std::size_t i = 0; i < steps.size(); ++i) t += " r" + std::to_string(i + 1) + " = " + steps[i].text + ";";
    return t + " return r" + std::to_string(steps.size()) + "; }";
  }
};

bool broadcastable(const shape_t& a, const shape_t& b) {
  for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
    const auto x = a[a.size() - 1 - k], y = b[b.size() - 1 - k];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

std::string dims_str(const shape_t& d) { return shape_str(d); }
std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// Generates a chain on inputs of shape `in`: each step is drawn from the op table below, tried
/// on plain values (its shape recorded); a draw that does not fit the registers is drawn again.
class chain_generator {
 public:
  chain_generator(rng& r, shape_t in, bool huge) : r_(r), huge_(huge) {
    c_.in_shape = in;
    probe_.push_back(value(random_tensor(r_, in)));
  }

  chain generate(int length) {
    int tries = 0;
    while (static_cast<int>(c_.steps.size()) < length && tries++ < 40 * length) try_step();
    if (huge_) {
      add_huge_step();  // the chain's result: no step runs after it
      return c_;
    }
    // Keep the output small: jacobians multiply it by the input's size at every level.
    if (shape_of(last()).size() > 0 && tw::numel_of(shape_of(last())) > 6) {
      const auto i = last();
      add("sum(r" + std::to_string(i) + ", 0)", [i](const auto& x) { return tw::sum(x[i], 0); });
      if (tw::numel_of(shape_of(last())) > 6) {
        const auto j = last();
        add("mean(r" + std::to_string(j) + ")", [j](const auto& x) { return tw::mean(x[j]); });
      }
    }
    return c_;
  }

 private:
  rng& r_;
  bool huge_;
  chain c_;
  std::vector<value> probe_;

  std::size_t last() const { return probe_.size() - 1; }
  shape_t shape_of(std::size_t i) const { return probe_[i].shape(); }
  std::string reg(std::size_t i) const { return "r" + std::to_string(i); }

  /// A register, more often a recent one.
  std::size_t pick() {
    const auto n = probe_.size();
    return r_.coin(0.6) ? n - 1 - static_cast<std::size_t>(r_.below(static_cast<int>(std::min<std::size_t>(n, 2))))
                        : static_cast<std::size_t>(r_.below(static_cast<int>(n)));
  }
  std::optional<std::size_t> pick_where(const std::function<bool(const shape_t&)>& ok) {
    std::vector<std::size_t> c;
    for (std::size_t i = 0; i < probe_.size(); ++i)
      if (ok(shape_of(i))) c.push_back(i);
    if (c.empty()) return std::nullopt;
    return c[static_cast<std::size_t>(r_.below(static_cast<int>(c.size())))];
  }
  std::int64_t pick_dim(std::int64_t rank) { return r_.below(static_cast<int>(2 * rank)) - rank; }

  /// Appends the step when it runs on the probe values and gives a small finite-sized result.
  bool add(const std::string& text, std::function<value(const std::vector<value>&)> run) {
    value out;
    try {
      out = run(probe_);
    } catch (const tw::error&) {
      return false;  // the draw does not fit these shapes
    }
    if (out.rank() > 4 || tw::numel_of(out.shape()) > 64) return false;
    probe_.push_back(out);
    c_.steps.push_back({text, std::move(run)});
    return true;
  }

  void add_huge_step() {
    const std::int64_t big = std::numeric_limits<std::int64_t>::max();
    const auto i = last();
    const std::string x = reg(i);
    switch (r_.below(7)) {
      case 0:
        c_.steps.push_back({"narrow(" + x + ", 0, INT64_MAX, 2)",
                            [i, big](const auto& v) { return tw::narrow(tw::reshape(v[i], {-1}), 0, big, 2); }});
        break;
      case 1:
        c_.steps.push_back({"narrow(" + x + ", 0, 1, INT64_MAX)",
                            [i, big](const auto& v) { return tw::narrow(tw::reshape(v[i], {-1}), 0, 1, big); }});
        break;
      case 2:
        c_.steps.push_back({"reshape(" + x + "[:0], [2^62, 4])", [i](const auto& v) {
                              return tw::reshape(tw::narrow(tw::reshape(v[i], {-1}), 0, 0, 0),
                                                 {std::int64_t{1} << 62, 4});
                            }});
        break;
      case 3:
        c_.steps.push_back({"expand(" + x + ", [2^31, 2^31, 4, ...])", [i](const auto& v) {
                              shape_t s = v[i].shape();
                              s.insert(s.begin(), {std::int64_t{1} << 31, std::int64_t{1} << 31, 4});
                              return tw::broadcast_to(v[i], s);
                            }});
        break;
      case 4:
        c_.steps.push_back({"broadcast_to(" + x + ", [-3, ...])", [i](const auto& v) {
                              shape_t s = v[i].shape();
                              s.insert(s.begin(), -3);
                              return tw::broadcast_to(v[i], s);
                            }});
        break;
      case 5:
        c_.steps.push_back({"expand(unsqueeze(" + x + ", 0), [2^40, ...])", [i](const auto& v) {
                              shape_t s(static_cast<std::size_t>(v[i].rank()), -1);
                              s.insert(s.begin(), std::int64_t{1} << 40);
                              return tw::expand(tw::unsqueeze(v[i], 0), s) * 2.0;
                            }});
        break;
      default:
        c_.steps.push_back({"reshape(" + x + ", [-1, 0])", [i](const auto& v) { return tw::reshape(v[i], {-1, 0}); }});
        break;
    }
  }

  /// A second operand for a's binary op: a register that broadcasts with it, or a number.
  std::pair<std::string, std::function<value(const std::vector<value>&)>> operand_for(std::size_t a) {
    const shape_t sa = shape_of(a);
    if (r_.coin(0.7)) {
      if (auto b = pick_where([&](const shape_t& s) { return broadcastable(s, sa); })) {
        const std::size_t j = *b;
        return {reg(j), [j](const auto& x) { return x[j]; }};
      }
    }
    const double c = std::round(r_.real(-2, 2) * 4) / 4;
    return {num(c), [c, a](const auto& x) { return tw::full_like(x[a], c); }};
  }

  void try_step() {
    const std::size_t a = pick();
    const std::string A = reg(a);
    const shape_t sa = shape_of(a);
    const std::int64_t ra = rank_of(sa);
    const double c = std::round(r_.real(-2, 2) * 4) / 4;  // a constant
    const std::string C = num(c);
    switch (r_.below(30)) {
      case 0: {  // unary ops on their whole domain
        static const char* names[] = {"neg",     "abs",      "sign", "square", "sin", "cos",   "tanh", "atan",
                                      "sigmoid", "softplus", "relu", "erf",    "exp", "expm1", "sinh", "cosh"};
        const int k = r_.below(16);
        if (k == 1 || k == 2 || k == 10) c_.kinks_at_zeros = true;
        add(std::string(names[k]) + "(" + A + ")", [a, k](const auto& x) -> value {
          const value& v = x[a];
          switch (k) {
            case 0:
              return tw::neg(v);
            case 1:
              return tw::abs(v);
            case 2:
              return tw::sign(v);
            case 3:
              return tw::square(v);
            case 4:
              return tw::sin(v);
            case 5:
              return tw::cos(v);
            case 6:
              return tw::tanh(v);
            case 7:
              return tw::atan(v);
            case 8:
              return tw::sigmoid(v);
            case 9:
              return tw::softplus(v);
            case 10:
              return tw::relu(v);
            case 11:
              return tw::erf(v);
            case 12:
              return tw::exp(v * 0.5);
            case 13:
              return tw::expm1(v * 0.5);
            case 14:
              return tw::sinh(v);
            default:
              return tw::cosh(v);
          }
        });
        break;
      }
      case 1: {  // unary ops on part of the line: the operand is mapped into the domain
        static const char* names[] = {"log(softplus(x) + 0.2)",   "sqrt(softplus(x) + 0.2)",
                                      "rsqrt(softplus(x) + 0.2)", "reciprocal(softplus(x) + 0.2)",
                                      "log1p(softplus(x))",       "asin(tanh(x) * 0.9)",
                                      "acos(tanh(x) * 0.9)",      "tan(tanh(x))"};
        const int k = r_.below(8);
        std::string t = names[k];
        t.replace(t.find('x'), 1, A);
        add(t, [a, k](const auto& x) -> value {
          const value p = tw::softplus(x[a]) + 0.2, h = tw::tanh(x[a]);
          switch (k) {
            case 0:
              return tw::log(p);
            case 1:
              return tw::sqrt(p);
            case 2:
              return tw::rsqrt(p);
            case 3:
              return tw::reciprocal(p);
            case 4:
              return tw::log1p(tw::softplus(x[a]));
            case 5:
              return tw::asin(h * 0.9);
            case 6:
              return tw::acos(h * 0.9);
            default:
              return tw::tan(h);
          }
        });
        break;
      }
      case 2:
      case 3: {  // + - * with a register or a number on either side
        auto [B, fb] = operand_for(a);
        const int k = r_.below(6);
        static const char* ops[] = {"+", "-", "*"};
        if (k < 3) {
          add(A + " " + ops[k] + " " + B, [a, k, fb = fb](const auto& x) -> value {
            const value b = fb(x);
            return k == 0 ? x[a] + b : k == 1 ? x[a] - b : x[a] * b;
          });
        } else {
          add(C + " " + ops[k - 3] + " " + A, [a, k, c](const auto& x) -> value {
            return k == 3 ? c + x[a] : k == 4 ? c - x[a] : c * x[a];
          });
        }
        break;
      }
      case 4: {  // division: denominators kept away from 0
        auto [B, fb] = operand_for(a);
        if (r_.coin())
          add(A + " / (softplus(" + B + ") + 0.5)",
              [a, fb = fb](const auto& x) { return x[a] / (tw::softplus(fb(x)) + 0.5); });
        else add(C + " / (square(" + A + ") + 0.5)", [a, c](const auto& x) { return c / (tw::square(x[a]) + 0.5); });
        break;
      }
      case 5: {  // pow: positive bases
        auto [B, fb] = operand_for(a);
        switch (r_.below(3)) {
          case 0:
            add("pow(softplus(" + A + ") + 0.2, tanh(" + B + ") * 2)",
                [a, fb = fb](const auto& x) { return tw::pow(tw::softplus(x[a]) + 0.2, tw::tanh(fb(x)) * 2.0); });
            break;
          case 1:
            add("pow(softplus(" + A + ") + 0.2, " + C + ")",
                [a, c](const auto& x) { return tw::pow(tw::softplus(x[a]) + 0.2, c); });
            break;
          default:
            add("pow(1.5, " + A + ")", [a](const auto& x) { return tw::pow(1.5, x[a]); });
            break;
        }
        break;
      }
      case 6: {  // maximum, minimum, atan2
        auto [B, fb] = operand_for(a);
        const int k = r_.below(6);
        static const char* names[] = {"maximum", "minimum", "atan2"};
        if (k % 3 != 2) c_.kinks_at_zeros = true;
        // atan2(y, x) away from the origin, where its derivative is 0 / 0 (NaN, as in PyTorch and
        // JAX) even when y and x are constants of the program (x = mse_loss(r, r)).
        const double cy = c == 0 ? 0.75 : c;
        if (k < 3)
          add(std::string(names[k]) + "(" + A + ", " + B + ")", [a, k, fb = fb](const auto& x) -> value {
            const value b = fb(x);
            return k == 0   ? tw::maximum(x[a], b)
                   : k == 1 ? tw::minimum(x[a], b)
                            : tw::atan2(x[a], tw::softplus(b) + 0.1);
          });
        else
          add(std::string(names[k - 3]) + "(" + (k == 5 ? num(cy) : C) + ", " + A + ")",
              [a, k, c, cy](const auto& x) -> value {
                return k == 3 ? tw::maximum(c, x[a]) : k == 4 ? tw::minimum(c, x[a]) : tw::atan2(cy, x[a]);
              });
        break;
      }
      case 7: {  // comparisons: a mask (not differentiated) in where or in a product
        auto [B, fb] = operand_for(a);
        const int k = r_.below(6);
        static const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
        auto cmp = [k](const value& u, const value& v) -> value {
          switch (k) {
            case 0:
              return tw::eq(u, v);
            case 1:
              return tw::ne(u, v);
            case 2:
              return tw::lt(u, v);
            case 3:
              return tw::le(u, v);
            case 4:
              return tw::gt(u, v);
            default:
              return tw::ge(u, v);
          }
        };
        c_.kinks_at_zeros = true;
        if (r_.coin())
          add("where(" + std::string(names[k]) + "(" + A + ", " + B + "), " + A + " * 2, sin(" + B + "))",
              [a, cmp, fb = fb](const auto& x) {
                const value b = fb(x);
                return tw::where(cmp(x[a], b), x[a] * 2.0, tw::sin(b));
              });
        else
          add(A + " * " + names[k] + "(" + B + ", " + C + ")",
              [a, c, cmp, fb = fb](const auto& x) { return x[a] * cmp(fb(x), tw::full_like(x[a], c)); });
        break;
      }
      case 8: {  // creation ops
        auto [B, fb] = operand_for(a);
        add(A + " * ones_like(" + B + ") + zeros_like(" + A + ") + full_like(" + A + ", " + C + ")",
            [a, c, fb = fb](const auto& x) {
              return x[a] * tw::ones_like(fb(x)) + tw::zeros_like(x[a]) + tw::full_like(x[a], c);
            });
        break;
      }
      case 9:
      case 10: {  // reductions over all dims, a dim (keepdim), two dims
        static const char* names[] = {"sum",       "mean", "prod",  "amax",  "amin",
                                      "logsumexp", "var",  "norm1", "norm2", "norminf"};
        const int k = r_.below(10);
        if (k == 3 || k == 4 || k >= 7) c_.kinks_at_zeros = true;
        const int how = ra == 0 ? 0 : ra >= 2 ? r_.below(3) : r_.below(2);
        const std::int64_t d = ra ? pick_dim(ra) : 0;
        const bool keep = r_.coin();
        const shape_t dims = ra >= 2 ? shape_t{0, ra - 1} : shape_t{0};
        std::string t = std::string(names[k]) + "(" + A +
                        (how == 1   ? ", " + std::to_string(d) + (keep ? ", keepdim" : "")
                         : how == 2 ? ", " + dims_str(dims) + (keep ? ", keepdim" : "")
                                    : "") +
                        ")";
        add(t, [a, k, how, d, keep, dims](const auto& x) -> value {
          const value& v = x[a];
          auto red = [&](auto all, auto one, auto many) -> value {
            return how == 0 ? all() : how == 1 ? one() : many();
          };
#define TOWER_FUZZ_RED(F) \
  red([&] { return value(F(v)); }, [&] { return value(F(v, d, keep)); }, [&] { return value(F(v, dims, keep)); })
          switch (k) {
            case 0:
              return TOWER_FUZZ_RED(tw::sum);
            case 1:
              return TOWER_FUZZ_RED(tw::mean);
            case 2: {
              const value p = tw::tanh(v) * 0.5 + 1.0;
              return red([&] { return tw::prod(p); }, [&] { return tw::prod(p, d, keep); },
                         [&] { return tw::prod(p, dims, keep); });
            }
            case 3:
              return TOWER_FUZZ_RED(tw::amax);
            case 4:
              return TOWER_FUZZ_RED(tw::amin);
            case 5:
              return TOWER_FUZZ_RED(tw::logsumexp);
            case 6:
              return red([&] { return tw::var(v); }, [&] { return tw::var(v, d, keep); },
                         [&] { return tw::var(v, dims, keep); });
            default: {
              const double p = k == 7 ? 1.0 : k == 8 ? 2.0 : inf;
              return red([&] { return tw::norm(v, p); }, [&] { return tw::norm(v, p, d, keep); },
                         [&] { return tw::norm(v, p, dims, keep); });
            }
          }
#undef TOWER_FUZZ_RED
        });
        break;
      }
      case 11: {  // dot, vecdot
        if (ra == 1 && r_.coin()) {
          if (auto b = pick_where([&](const shape_t& s) { return s == sa; }))
            add("dot(" + A + ", " + reg(*b) + ")", [a, b = *b](const auto& x) { return tw::dot(x[a], x[b]); });
        } else if (ra >= 1) {
          if (auto b = pick_where(
                  [&](const shape_t& s) { return s.size() >= 1 && s.back() == sa.back() && broadcastable(s, sa); }))
            add("vecdot(" + A + ", " + reg(*b) + ")", [a, b = *b](const auto& x) { return tw::vecdot(x[a], x[b]); });
        }
        break;
      }
      case 12: {  // matmul with a constant weight on either side, mm, mv, bmm
        if (ra == 0) break;
        const std::int64_t k = 1 + r_.below(3);
        const tensor<double> w = random_tensor(r_, {sa.back(), k});
        const tensor<double> wl = random_tensor(r_, {k, ra >= 2 ? sa[static_cast<std::size_t>(ra - 2)] : sa.back()});
        switch (r_.below(4)) {
          case 0:
            add("matmul(" + A + ", W" + shape_str(w.shape()) + ")",
                [a, w](const auto& x) { return tw::matmul(x[a], value(w)); });
            break;
          case 1:
            add("matmul(W" + shape_str(wl.shape()) + ", " + A + ")",
                [a, wl](const auto& x) { return tw::matmul(value(wl), x[a]); });
            break;
          case 2:
            if (ra == 2) add("mm(" + A + ", W)", [a, w](const auto& x) { return tw::mm(x[a], value(w)); });
            else if (ra == 1) add("mv(W, " + A + ")", [a, wl](const auto& x) { return tw::mv(value(wl), x[a]); });
            break;
          default:
            if (ra == 3)
              add("bmm(" + A + ", transpose(" + A + ", 1, 2))",
                  [a](const auto& x) { return tw::bmm(x[a], tw::transpose(x[a], 1, 2)); });
            else if (auto b = pick_where(
                         [&](const shape_t& s) { return s.size() >= 1 && s.back() == sa.back() && s.size() <= 2; }))
              add("matmul(" + A + ", transpose(" + reg(*b) + "))", [a, b = *b](const auto& x) {
                return tw::matmul(x[a], tw::transpose(tw::unsqueeze(x[b], 0), 0, -1));
              });
        }
        break;
      }
      case 13: {  // outer, trace
        if (ra == 1) {
          auto b = pick_where([](const shape_t& s) { return s.size() == 1; });
          add("outer(" + A + ", " + reg(*b) + ")", [a, b = *b](const auto& x) { return tw::outer(x[a], x[b]); });
        } else if (ra == 2) {
          add("trace(matmul(" + A + ", transpose(" + A + ", 0, 1)))",
              [a](const auto& x) { return tw::trace(tw::matmul(x[a], tw::transpose(x[a], 0, 1))); });
        }
        break;
      }
      case 14: {  // solve and cholesky of a well-conditioned 2 x 2 matrix built from a's values
        const tensor<double> W = tensor<double>({2, 2}, {2.5, r_.real(-0.5, 0.5), r_.real(-0.5, 0.5), 2.5});
        auto matrix = [a, W](const std::vector<value>& x) {
          const value u = tw::stack({tw::tanh(tw::sum(x[a])), tw::sin(tw::mean(x[a]))});
          return std::make_pair(value(W) + tw::outer(u, u) * 0.3, u);
        };
        if (r_.coin())
          add("solve(W + 0.3 outer(u, u), u), u = [tanh(sum(" + A + ")), sin(mean(" + A + "))]",
              [matrix](const auto& x) {
                auto [m, u] = matrix(x);
                return tw::solve(m, u);
              });
        else
          add("cholesky(M Mᵀ + I), M = W + 0.3 outer(u, u), u from " + A, [matrix](const auto& x) {
            const value m = matrix(x).first;
            return tw::cholesky(tw::matmul(m, tw::transpose(m, 0, 1)) + value(tw::eye<double>(2)));
          });
        break;
      }
      case 15: {  // reshape family
        switch (r_.below(4)) {
          case 0:
            add("reshape(" + A + ", [-1])", [a](const auto& x) { return tw::reshape(x[a], {-1}); });
            break;
          case 1:
            add("flatten(" + A + ")", [a](const auto& x) { return tw::flatten(x[a]); });
            break;
          case 2:
            add("squeeze(" + A + ")", [a](const auto& x) { return tw::squeeze(x[a]); });
            break;
          default: {
            const std::int64_t d = r_.below(static_cast<int>(ra + 1));
            add("unsqueeze(" + A + ", " + std::to_string(d) + ")",
                [a, d](const auto& x) { return tw::unsqueeze(x[a], d); });
          }
        }
        break;
      }
      case 16: {  // expand, broadcast_to
        const std::int64_t n = 2 + r_.below(2);
        if (r_.coin()) {
          shape_t s(static_cast<std::size_t>(ra), -1);
          s.insert(s.begin(), n);
          add("expand(unsqueeze(" + A + ", 0), " + shape_str(s) + ")",
              [a, s](const auto& x) { return tw::expand(tw::unsqueeze(x[a], 0), s); });
        } else {
          shape_t s = sa;
          s.insert(s.begin(), n);
          add("broadcast_to(" + A + ", " + shape_str(s) + ")",
              [a, s](const auto& x) { return tw::broadcast_to(x[a], s); });
        }
        break;
      }
      case 17: {  // permute, transpose, movedim
        if (ra < 2) break;
        shape_t perm(static_cast<std::size_t>(ra));
        for (std::int64_t i = 0; i < ra; ++i) perm[static_cast<std::size_t>(i)] = i;
        std::shuffle(perm.begin(), perm.end(), r_.g);
        const std::int64_t d0 = pick_dim(ra), d1 = pick_dim(ra);
        switch (r_.below(3)) {
          case 0:
            add("permute(" + A + ", " + shape_str(perm) + ")",
                [a, perm](const auto& x) { return tw::permute(x[a], perm); });
            break;
          case 1:
            add("transpose(" + A + ", " + std::to_string(d0) + ", " + std::to_string(d1) + ")",
                [a, d0, d1](const auto& x) { return tw::transpose(x[a], d0, d1); });
            break;
          default:
            add("movedim(" + A + ", " + std::to_string(d0) + ", " + std::to_string(d1) + ")",
                [a, d0, d1](const auto& x) { return tw::movedim(x[a], d0, d1); });
        }
        break;
      }
      case 18: {  // narrow, slice, pad
        if (ra == 0) break;
        const std::int64_t d = pick_dim(ra), n = dim_size(sa, d);
        if (n == 0) break;
        const std::int64_t start = r_.below(static_cast<int>(n)), len = 1 + r_.below(static_cast<int>(n - start));
        switch (r_.below(3)) {
          case 0:
            add("narrow(" + A + ", " + std::to_string(d) + ", " + std::to_string(start) + ", " + std::to_string(len) +
                    ")",
                [a, d, start, len](const auto& x) { return tw::narrow(x[a], d, start, len); });
            break;
          case 1:
            add("slice(" + A + ", " + std::to_string(d) + ", " + std::to_string(start - n) + ", " +
                    std::to_string(start + len) + ")",
                [a, d, start, len, n](const auto& x) { return tw::slice(x[a], d, start - n, start + len); });
            break;
          default:
            add("pad(" + A + ", dim " + std::to_string(d) + ", start " + std::to_string(start) + ", total " +
                    std::to_string(n + start + 1) + ")",
                [a, d, start, n](const auto& x) { return tw::call_op(tw::pad_op{d, start, n + start + 1}, x[a]); });
        }
        break;
      }
      case 19: {  // cat, stack
        if (ra == 0) {
          if (auto b = pick_where([](const shape_t& s) { return s.empty(); }))
            add("stack({" + A + ", " + reg(*b) + ", " + A + " * " + reg(*b) + "})",
                [a, b = *b](const auto& x) { return tw::stack({x[a], x[b], x[a] * x[b]}); });
          break;
        }
        const std::int64_t d = pick_dim(ra);
        if (r_.coin()) {
          auto b = pick_where([&](const shape_t& s) {
            if (s.size() != sa.size()) return false;
            for (std::int64_t i = 0; i < ra; ++i)
              if (i != (d < 0 ? d + ra : d) && s[static_cast<std::size_t>(i)] != sa[static_cast<std::size_t>(i)])
                return false;
            return true;
          });
          add("cat({" + A + ", " + reg(*b) + "}, " + std::to_string(d) + ")",
              [a, b = *b, d](const auto& x) { return tw::cat({x[a], x[b]}, d); });
        } else {
          auto b = pick_where([&](const shape_t& s) { return s == sa; });
          const std::int64_t sd = r_.below(static_cast<int>(2 * ra + 2)) - (ra + 1);
          add("stack({" + A + ", cos(" + reg(*b) + ")}, " + std::to_string(sd) + ")",
              [a, b = *b, sd](const auto& x) { return tw::stack({x[a], tw::cos(x[b])}, sd); });
        }
        break;
      }
      case 20: {  // split
        if (ra == 0) break;
        const std::int64_t d = pick_dim(ra), n = dim_size(sa, d);
        if (n == 0) break;
        const std::int64_t size = 1 + r_.below(static_cast<int>(n));
        const int part = r_.below(static_cast<int>((n + size - 1) / size));
        add("split(" + A + ", " + std::to_string(size) + ", " + std::to_string(d) + ")[" + std::to_string(part) + "]",
            [a, d, size, part](const auto& x) { return tw::split(x[a], size, d)[static_cast<std::size_t>(part)]; });
        break;
      }
      case 21: {  // index_select, gather, scatter_add
        if (ra == 0) break;
        const std::int64_t d = pick_dim(ra), n = dim_size(sa, d);
        if (n == 0) break;
        shape_t idx(static_cast<std::size_t>(1 + r_.below(4)));
        for (auto& i : idx) i = r_.below(static_cast<int>(2 * n)) - n;
        const int k = r_.below(3);
        if (k == 0) {
          add("index_select(" + A + ", " + std::to_string(d) + ", " + shape_str(idx) + ")",
              [a, d, idx](const auto& x) { return tw::index_select(x[a], d, idx); });
          break;
        }
        shape_t is = sa;
        is[static_cast<std::size_t>(d < 0 ? d + ra : d)] = 1 + r_.below(3);
        tensor<double> index = random_tensor(r_, is, 0, static_cast<double>(n) - 1e-9);
        for (std::int64_t i = 0; i < index.numel(); ++i) index.data()[i] = std::floor(index.data()[i]);
        if (k == 1)
          add("gather(" + A + ", " + std::to_string(d) + ", I" + shape_str(is) + ")",
              [a, d, index](const auto& x) { return tw::gather(x[a], d, value(index)); });
        else if (is == sa || tw::numel_of(is) <= tw::numel_of(sa))
          add("scatter_add(" + A + ", " + std::to_string(d) + ", I, gather(" + A + ", " + std::to_string(d) +
                  ", I) * 0.5)",
              [a, d, index](const auto& x) {
                return tw::scatter_add(x[a], d, value(index), tw::gather(x[a], d, value(index)) * 0.5);
              });
        break;
      }
      case 22: {  // softmax, log_softmax
        if (ra == 0) break;
        const std::int64_t d = pick_dim(ra);
        if (r_.coin())
          add("softmax(" + A + ", " + std::to_string(d) + ")", [a, d](const auto& x) { return tw::softmax(x[a], d); });
        else
          add("log_softmax(" + A + ", " + std::to_string(d) + ")",
              [a, d](const auto& x) { return tw::log_softmax(x[a], d); });
        break;
      }
      case 23: {  // losses
        auto [B, fb] = operand_for(a);
        switch (r_.below(4)) {
          case 0:
            add("mse_loss(" + A + ", " + B + ")", [a, fb = fb](const auto& x) { return tw::mse_loss(x[a], fb(x)); });
            break;
          case 1:
            add("binary_cross_entropy_with_logits(" + A + ", sigmoid(" + B + "))",
                [a, fb = fb](const auto& x) { return tw::binary_cross_entropy_with_logits(x[a], tw::sigmoid(fb(x))); });
            break;
          case 2:
            if (ra == 1 || ra == 2) {
              const std::int64_t classes = sa.back();
              const shape_t ts = ra == 2 ? shape_t{sa[0]} : shape_t{};
              tensor<double> t = random_tensor(r_, ts, 0, static_cast<double>(classes) - 1e-9);
              for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] = std::floor(t.data()[i]);
              add("cross_entropy(" + A + ", classes " + shape_str(ts) + ")",
                  [a, t](const auto& x) { return tw::cross_entropy(x[a], value(t)); });
            }
            break;
          default:
            if (ra == 1 || ra == 2)
              if (auto b = pick_where([&](const shape_t& s) { return s == sa; }))
                add("cross_entropy(" + A + ", softmax(" + reg(*b) + ", -1))",
                    [a, b = *b](const auto& x) { return tw::cross_entropy(x[a], tw::softmax(x[b], -1)); });
        }
        break;
      }
      default: {  // more elementwise arithmetic: the common case of real programs
        auto [B, fb] = operand_for(a);
        add("sin(" + A + ") * " + B + " + " + A, [a, fb = fb](const auto& x) { return tw::sin(x[a]) * fb(x) + x[a]; });
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Transform layers.

enum class kind { vmap, vmap_unbatched_arg, vmap_closure, grad, grad_closure, vjp, jvp, jacrev, jacfwd, hessian };
const char* kind_name(kind k) {
  static const char* n[] = {
      "vmap",   "vmap(in_dims(d, none))", "vmap(closure)", "grad", "grad(closure)", "vjp", "jvp", "jacrev", "jacfwd",
      "hessian"};
  return n[static_cast<int>(k)];
}

struct layer {
  kind k;
  std::int64_t in_dim = 0, out_dim = 0, batch = 0;
  int strategy = 0;  // vmap: 0 automatic, 1 batched, 2 chunk_size(2)

  bool consumes() const { return k == kind::vmap || k == kind::vmap_unbatched_arg; }
  bool is_vmap() const { return consumes() || k == kind::vmap_closure; }
  std::string text() const {
    std::string t = kind_name(k);
    if (is_vmap()) {
      static const char* s[] = {"automatic", "batched", "chunk_size(2)"};
      t += "[" + (consumes() ? "in " + std::to_string(in_dim) + ", " : std::string()) + "out " +
           std::to_string(out_dim) + ", " + s[strategy] + "]";
    }
    return t;
  }
};

/// A deterministic tensor of shape s (vjp's cotangent, jvp's tangent).
tensor<double> direction(const shape_t& s) {
  std::vector<double> v(static_cast<std::size_t>(tw::numel_of(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1.0 + 0.5 * std::sin(static_cast<double>(i) + 1.0);
  return tensor<double>(s, std::move(v));
}

value run_vmap(const layer& l, const std::function<value(value, value)>& g2, const fn& g1, const value& x,
               const value* w) {
  auto o = tw::out_dims(l.out_dim);
  if (w) {
    auto in = tw::in_dims(l.in_dim, tw::none);
    switch (l.strategy) {
      case 0:
        return tw::vmap(g2, in, o)(x, *w);
      case 1:
        return tw::vmap(g2, in, o, tw::strategy::batched)(x, *w);
      default:
        return tw::vmap(g2, in, o, tw::chunk_size(2))(x, *w);
    }
  }
  auto in = tw::in_dims(l.in_dim);
  switch (l.strategy) {
    case 0:
      return tw::vmap(g1, in, o)(x);
    case 1:
      return tw::vmap(g1, in, o, tw::strategy::batched)(x);
    default:
      return tw::vmap(g1, in, o, tw::chunk_size(2))(x);
  }
}

/// The transform itself, applied to g.
fn transformed(const layer& l, fn g) {
  switch (l.k) {
    case kind::vmap:
      return [l, g](value x) { return run_vmap(l, {}, g, x, nullptr); };
    case kind::vmap_unbatched_arg:
      return [l, g](value x) {
        const value w = tw::sum(x, l.in_dim) * 0.3;
        std::function<value(value, value)> h = [g](value y, value v) { return g(y + v); };
        return run_vmap(l, h, {}, x, &w);
      };
    case kind::vmap_closure:
      return [l, g](value x) {
        const value X = tw::stack({x * 0.5, x * -1.0, x + 1.0});
        fn h = [g, x](value y) { return g(y * 0.5 + tw::sin(x)); };  // captures the enclosing value x
        layer m = l;
        m.in_dim = 0;
        return run_vmap(m, {}, h, X, nullptr);
      };
    case kind::grad:
      return [g](value x) { return tw::grad(fn([g](value y) { return tw::sum(g(y)); }))(x); };
    case kind::grad_closure:
      return [g](value x) { return tw::grad(fn([g, x](value y) { return tw::sum(g(y + x * 0.5)); }))(x); };
    case kind::vjp:
      return [g](value x) {
        auto [y, pull] = tw::vjp(g, x);
        return std::get<0>(pull(value(direction(y.shape()))));
      };
    case kind::jvp:
      return [g](value x) { return tw::jvp(g, std::tuple{x}, std::tuple{value(direction(x.shape()))}).second; };
    case kind::jacrev:
      return [g](value x) { return tw::jacrev(g)(x); };
    case kind::jacfwd:
      return [g](value x) { return tw::jacfwd(g)(x); };
    case kind::hessian:
      return [g](value x) { return tw::hessian(fn([g](value y) { return tw::sum(g(y)); }))(x); };
  }
  return g;
}

tensor<double> eval(const fn& g, const tensor<double>& x) { return g(value(x)).to_tensor(); }

tensor<double> slice_of(const tensor<double>& x, std::int64_t d, std::int64_t b) {
  return tw::squeeze(tw::narrow(x, d, b, 1), d);
}

/// vmap's definition: a loop over examples, stacked along out_dim. nullopt for an empty batch.
std::optional<tensor<double>> loop_reference(const layer& l, const fn& g, const tensor<double>& x) {
  std::vector<tensor<double>> rows;
  if (l.k == kind::vmap_closure) {
    const tensor<double> X[] = {x * 0.5, x * -1.0, x + 1.0};
    for (const auto& xb : X) rows.push_back(eval(g, xb * 0.5 + tw::sin(x)));
  } else {
    const std::int64_t n = dim_size(x.shape(), l.in_dim);
    const tensor<double> w = tw::sum(x, l.in_dim) * 0.3;
    for (std::int64_t b = 0; b < n; ++b) {
      const tensor<double> xb = slice_of(x, l.in_dim, b);
      rows.push_back(eval(g, l.k == kind::vmap_unbatched_arg ? xb + w : xb));
    }
  }
  if (rows.empty()) return std::nullopt;
  return tw::stack(rows, l.out_dim);
}

/// Central and one-sided differences of h (a tensor function) along direction v at x.
struct difference {
  tensor<double> central, forward, backward;
};
difference directional(const std::function<tensor<double>(const tensor<double>&)>& h, const tensor<double>& x,
                       const tensor<double>& v, double step) {
  const tensor<double> y0 = h(x), yp = h(x + v * step), ym = h(x - v * step);
  return {(yp - ym) / (2 * step), (yp - y0) / step, (y0 - ym) / step};
}

/// A reference by differences: central differences at two steps, and `kink` where the
/// one-sided differences disagree (not differentiable there).
struct fd_result {
  tensor<double> fine, coarse;
  std::vector<bool> kink;
};

bool disagree(double f, double b) { return !(std::abs(f - b) <= 1e-3 * (1 + std::abs(f) + std::abs(b))); }

/// The Jacobian of h (out shape + in shape) by differences.
fd_result fd_jacobian(const std::function<tensor<double>(const tensor<double>&)>& h, const tensor<double>& x) {
  const tensor<double> y0 = h(x);
  shape_t s = y0.shape();
  s.insert(s.end(), x.shape().begin(), x.shape().end());
  const std::int64_t n = x.numel(), m = y0.numel();
  fd_result r{tw::zeros<double>(s), tw::zeros<double>(s), std::vector<bool>(static_cast<std::size_t>(n * m))};
  for (std::int64_t j = 0; j < n; ++j) {
    tensor<double> e = tw::zeros<double>(x.shape());
    e.data()[j] = 1;
    const difference d = directional(h, x, e, 1e-6), c = directional(h, x, e, 1e-4);
    for (std::int64_t i = 0; i < m; ++i) {
      r.fine.data()[i * n + j] = d.central.data()[i];
      r.coarse.data()[i * n + j] = c.central.data()[i];
      r.kink[static_cast<std::size_t>(i * n + j)] = disagree(d.forward.data()[i], d.backward.data()[i]);
    }
  }
  return r;
}

/// The derivative of h along v by differences.
fd_result fd_directional(const std::function<tensor<double>(const tensor<double>&)>& h, const tensor<double>& x,
                         const tensor<double>& v) {
  const difference d = directional(h, x, v, 1e-6), c = directional(h, x, v, 1e-4);
  fd_result r{d.central, c.central, std::vector<bool>(static_cast<std::size_t>(d.central.numel()))};
  for (std::int64_t i = 0; i < d.central.numel(); ++i)
    r.kink[static_cast<std::size_t>(i)] = disagree(d.forward.data()[i], d.backward.data()[i]);
  return r;
}

struct verdict {
  bool ok = true;
  std::string why;
  int skipped = 0;  // entries at kinks or non-finite references
};

bool close(double a, double b, double tol) { return std::abs(a - b) <= tol * (1 + std::abs(b)); }

verdict mismatch(std::int64_t i, double a, double b) {
  return {false, "entry " + std::to_string(i) + ": " + num(a) + ", expected " + num(b), 0};
}

/// vmap against its loop: the same numbers, NaN for NaN, infinities exactly.
verdict compare_exact(const tensor<double>& got, const tensor<double>& want) {
  if (got.shape() != want.shape())
    return {false, "shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape()), 0};
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.data()[i], b = want.data()[i];
    if (std::isnan(a) != std::isnan(b) || (std::isinf(b) && a != b) || (std::isfinite(b) && !close(a, b, 1e-8)))
      return mismatch(i, a, b);
  }
  return {};
}

/// A derivative against differences. Skipped: entries at a kink, where the two steps disagree
/// (rounding, or a jump), where the reference is not finite, non-finite results where the input
/// or the function's value is not (check_layer), and any mismatch where the point may be an isolated one (eq(a, b) true
/// at exact zeros only: differences see the other branch on both sides).
verdict compare_fd(const tensor<double>& got, const fd_result& r, bool finite_point, bool isolated_points) {
  if (got.shape() != r.fine.shape())
    return {false, "shape " + shape_str(got.shape()) + ", expected " + shape_str(r.fine.shape()), 0};
  verdict v;
  const double tol = 1e-4;
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.data()[i], b = r.fine.data()[i], b2 = r.coarse.data()[i];
    if (close(a, b, tol) || close(a, b2, tol)) continue;
    if (!std::isfinite(b) || r.kink[static_cast<std::size_t>(i)] || !close(b2, b, tol) ||
        (!finite_point && !std::isfinite(a)) || isolated_points) {
      ++v.skipped;
      continue;
    }
    v.ok = false;
    v.why = mismatch(i, a, b).why;
    return v;
  }
  return v;
}

/// Checks one layer l applied to the inner composition g at x.
verdict check_layer(const layer& l, const fn& g, const tensor<double>& x, bool isolated_points) {
  const tensor<double> got = eval(transformed(l, g), x);
  if (l.is_vmap()) {
    const auto want = loop_reference(l, g, x);
    if (!want) return got.numel() == 0 ? verdict{} : verdict{false, "an empty batch gave " + shape_str(got.shape()), 0};
    return compare_exact(got, *want);
  }
  auto h = [&g](const tensor<double>& t) { return eval(g, t); };
  // Non-finite derivatives are not compared where x or g's value at the point is not finite: NaN
  // propagates, and a zero cotangent or tangent times an infinite partial is NaN (IEEE, as in
  // PyTorch and JAX), also in entries whose true derivative is 0.
  auto all_finite = [](const tensor<double>& t) {
    return std::all_of(t.data(), t.data() + t.numel(), [](double e) { return std::isfinite(e); });
  };
  const bool finite = all_finite(x) && all_finite(h(l.k == kind::grad_closure ? x * 1.5 : x));
  std::function<tensor<double>(const tensor<double>&)> target;
  switch (l.k) {
    case kind::grad:
      target = [&](const tensor<double>& t) { return tensor<double>(tw::sum(h(t)).item()); };
      break;
    case kind::grad_closure:
      target = [&](const tensor<double>& t) { return tensor<double>(tw::sum(h(t + x * 0.5)).item()); };
      break;
    case kind::vjp: {
      const tensor<double> ct = direction(h(x).shape());
      target = [&, ct](const tensor<double>& t) { return tensor<double>(tw::sum(h(t) * ct).item()); };
      break;
    }
    case kind::jvp:
      return compare_fd(got, fd_directional(h, x, direction(x.shape())), finite, isolated_points);
    case kind::hessian: {  // differences of grad (checked as a layer of its own)
      const fn gr = transformed(layer{kind::grad}, g);
      target = [gr](const tensor<double>& t) { return eval(gr, t); };
      break;
    }
    default:
      target = h;  // jacrev, jacfwd
  }
  // grad-like results have x's shape (the Jacobian of a number is [] + x.shape()).
  return compare_fd(got, fd_jacobian(target, x), finite, isolated_points);
}

// ---------------------------------------------------------------------------------------------
// Programs.

struct program {
  std::uint64_t seed;
  std::vector<layer> layers;  // outermost first
  chain f;
  std::vector<shape_t> in_shapes;  // the input shape of each level (in_shapes[k]: layers[k]'s)
  enum class edge { none, values, empty, huge } e = edge::none;

  std::string text() const {
    static const char* edges[] = {"", " [edge values]", " [empty dims]", " [huge sizes]"};
    std::string t = "seed " + std::to_string(seed) + edges[static_cast<int>(e)] + ": ";
    for (const auto& l : layers) t += l.text() + "(";
    t += "f" + std::string(layers.size(), ')') + " at " + shape_str(in_shapes.empty() ? f.in_shape : in_shapes[0]) +
         "\n    " + f.text();
    return t;
  }
};

program generate(std::uint64_t seed) {
  rng r(seed);
  program p;
  p.seed = seed;
  const int u = r.below(20);
  p.e = u == 0   ? program::edge::values
        : u == 1 ? program::edge::empty
        : u == 2 ? program::edge::huge
                 : program::edge::none;
  const int depth = 1 + r.below(4);
  for (int i = 0; i < depth; ++i) {
    static const kind kinds[] = {kind::vmap,         kind::vmap,   kind::vmap_unbatched_arg,
                                 kind::vmap_closure, kind::grad,   kind::grad_closure,
                                 kind::vjp,          kind::jvp,    kind::jacrev,
                                 kind::jacfwd,       kind::hessian};
    layer l{kinds[r.below(11)]};
    l.strategy = r.below(3);
    p.layers.push_back(l);
  }
  // Hessians and Jacobians multiply the work by the input's size: keep few of them deep.
  int jac = 0;
  for (auto& l : p.layers)
    if ((l.k == kind::jacrev || l.k == kind::jacfwd || l.k == kind::hessian) && ++jac > 2) l.k = kind::grad;
  // The chain's input: small; then each vmap from the inside out adds its batch dim.
  shape_t s;
  const int rank = r.below(3);
  for (int i = 0; i < rank; ++i) s.push_back(1 + r.below(3));
  if (p.e == program::edge::empty && !s.empty()) s[static_cast<std::size_t>(r.below(rank))] = 0;
  const shape_t chain_in = s;
  std::vector<shape_t> shapes(p.layers.size());
  for (std::size_t k = p.layers.size(); k-- > 0;) {
    layer& l = p.layers[k];
    if (l.consumes()) {
      const std::int64_t new_rank = rank_of(s) + 1;
      const int c = r.below(3);
      l.in_dim = c == 0 ? 0 : c == 1 ? -1 : (new_rank >= 2 ? 1 : 0);
      l.batch = p.e == program::edge::empty && r.coin(0.3) ? 0 : 1 + r.below(3);
      s.insert(s.begin() + (l.in_dim < 0 ? l.in_dim + new_rank : l.in_dim), l.batch);
    }
    shapes[k] = s;
  }
  // out_dims: the result's first or last dim (the per-example result's rank is known only once
  // the chain is drawn).
  for (auto& l : p.layers)
    if (l.is_vmap()) l.out_dim = r.coin() ? 0 : -1;
  p.in_shapes = shapes;
  chain_generator gen(r, chain_in, p.e == program::edge::huge);
  p.f = gen.generate(2 + r.below(6));
  return p;
}

/// An input of shape s; edge programs get zeros, infinities and NaN among their values.
tensor<double> input(rng& r, const shape_t& s, program::edge e) {
  tensor<double> x = random_tensor(r, s);
  if (e != program::edge::values || x.numel() == 0) return x;
  const int how = r.below(4);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    if (how == 0) x.data()[i] = 0;  // a zero vector
    else if (r.coin(0.4)) x.data()[i] = how == 1 ? 0.0 : how == 2 ? (r.coin() ? inf : -inf) : nan_v;
  }
  return x;
}

struct totals {
  int programs = 0, checks = 0, failures = 0, bad_input_errors = 0, skipped_entries = 0;
};

bool internal(const std::string& what) { return what.find("internal") != std::string::npos; }

/// Runs every level's check; returns false (and prints the program) on a failure.
bool run(const program& p, totals& t, bool verbose) {
  ++t.programs;
  if (verbose) std::cout << p.text() << "\n";
  // fns[k]: layers k.. applied to f (fns[n] is f).
  std::vector<fn> fns(p.layers.size() + 1);
  fns.back() = [c = p.f](value x) { return c(x); };
  for (std::size_t k = p.layers.size(); k-- > 0;) fns[k] = transformed(p.layers[k], fns[k + 1]);
  rng r(p.seed ^ 0xABCDEF);
  auto fail = [&](const std::string& why) {
    ++t.failures;
    std::cout << "FAIL " << p.text() << "\n    " << why << "\n";
    return false;
  };
  for (std::size_t k = p.layers.size(); k-- > 0;) {
    const tensor<double> x = input(r, p.in_shapes[k], p.e);
    std::ostringstream xs;
    xs << x;
    const std::string at = "level " + std::to_string(k) + " (" + p.layers[k].text() + ") at x = " + xs.str();
    try {
      const verdict v = check_layer(p.layers[k], fns[k + 1], x, p.e == program::edge::values && p.f.kinks_at_zeros);
      ++t.checks;
      t.skipped_entries += v.skipped;
      if (!v.ok) return fail(at + ": " + v.why);
      if (p.e == program::edge::huge) return fail(at + ": a huge size was accepted");
    } catch (const tw::error& e) {
      if (internal(e.what())) return fail(at + ": internal error: " + e.what());
      // Programs without edge inputs are valid; NaN or infinite input may be bad input (a
      // cholesky of a matrix of NaN), empty dims and huge sizes are.
      if (p.e == program::edge::none) return fail(at + ": unexpected tower::error: " + e.what());
      ++t.bad_input_errors;
      if (verbose) std::cout << "    bad input: " << e.what() << "\n";
      return true;  // bad input, reported clearly: the outer levels would raise it too
    } catch (const std::exception& e) {
      return fail(at + ": an exception other than tower::error: " + e.what());
    }
    if (tw::interpreter_stack_depth() != 0) return fail(at + ": the interpreter stack is not empty afterwards");
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  long programs = 600;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--programs" && i + 1 < argc) programs = std::strtol(argv[++i], nullptr, 10);
    else if (a == "--verbose") verbose = true;
    else {
      std::cerr << "usage: runtime_fuzz [--seed S] [--programs N] [--verbose]\n";
      return 2;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  totals t;
  for (long i = 0; i < programs; ++i) {
    const std::uint64_t s = seed + static_cast<std::uint64_t>(i);
    program p;
    try {
      p = generate(s);
    } catch (const std::exception& e) {
      std::cout << "FAIL seed " << s << ": the generator raised " << e.what() << "\n";
      ++t.failures;
      continue;
    }
    run(p, t, verbose);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "runtime_fuzz: seeds " << seed << ".." << seed + static_cast<std::uint64_t>(programs) - 1 << ": "
            << t.programs << " programs, " << t.checks << " layer checks, " << t.failures << " failures, "
            << t.bad_input_errors << " clear errors on bad input, " << t.skipped_entries
            << " entries skipped (kinks, non-finite), " << secs << " s\n";
  return t.failures == 0 ? 0 : 1;
}

// The generic, table-driven rule checker (functorch's OpInfo tests, Stan's expect_ad): every row
// of an op table — a name, the op as a generic function of N values, samplers of inputs — is
// checked by the same code, so a new row needs no new test code. For each sample it checks
//
//   base       float kernels agree with double kernels;
//   vjp        grad (all differentiable args) against central finite differences, static path;
//   runtime    the runtime path (std::function of dyn::value) equals the static path, for grad,
//              every vmap and vmap(grad);
//   jvp        for primitive rows: the op's jvp member against finite differences, and the
//              JVP/VJP consistency <u, J v> == <Jᵀu, v> through its vjp member;
//   vmap       against a loop over the batch, for every combination of in_dims over the args
//              (none, 0, -1), and for vmap nested twice;
//   vmap(grad) against a loop of grad;
//   forms      vmap and vmap(grad) in every physical form (batching rules, packets, the
//              per-example loop, the runtime path's traced program) against loops;
//   batch 1    vmap and vmap(grad) of one example, both paths (the runtime path runs one-element
//              values as kernels on doubles), against f on the example;
//   traced     for rows marked so: the runtime path's automatic form ran the traced program;
//   scalars    for rows marked so: double arguments under grad and grad(grad), both paths (a zero
//              gradient for an argument not differentiated);
//   fixed      for rows marked so (with_fixed): the row on tw::fixed values (3-vectors, numbers,
//              size-1 vectors) against tensors: values, grad (tape-free against the tape), grad
//              of grad, hessian (elementwise jets against central differences of the tape's
//              gradient) and vmap(grad) with fixed_rows (the per-example loop, which must take
//              the row) against in_dims 0; a deep form adds hessian against the tensor path's
//              hessian and vmap(hessian) with fixed_rows against hessian per example (the
//              deep checks instantiate transform stacks four deep, ~15 s of g++ each: a few
//              rows that stand for the rule kinds get them).
//
// The count of (op, rule, sample) cases is reported per rule, so a table's output says what ran.
#pragma once
#include <catch2/catch.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tower::testing {

template <std::size_t N>
using inputs = std::array<tensor<double>, N>;
/// Draws one example of an op's inputs; different seeds give different values, same shapes.
template <std::size_t N>
using sampler = std::function<inputs<N>(unsigned seed)>;

/// A row without an op struct (a composition): no rule-level JVP check.
struct composite {};

/// One argument of a row's form on tw::fixed values: a 3-vector, a number, a size-1 vector.
enum class kind { vector, number, single };
/// A form on tw::fixed values: the argument kinds, and whether it gets the deep checks.
template <bool Deep, kind... K>
struct fixed_form {};
template <kind... K>
using on_fixed = fixed_form<false, K...>;
template <kind... K>
using on_fixed_deep = fixed_form<true, K...>;

template <std::size_t N, class F, class Op = composite, bool Scalars = false, bool Floats = true,
          class Fixed = std::tuple<>>
struct op_row {
  static constexpr bool scalars = Scalars;  // also run with double arguments (samples of rank 0)
  static constexpr bool floats = Floats;    // check the float kernels
  using fixed_forms = Fixed;                // a std::tuple of fixed_form: the row on tw::fixed values
  std::string name;
  F f;
  std::vector<sampler<N>> samples;
  std::array<bool, N> diff;  // which args are differentiated (index args are not)
  Op op{};
  double tol = 1e-5;                   // finite-difference tolerance (relative)
  double fixed_lo = -1, fixed_hi = 1;  // where the fixed forms draw their inputs
  bool traced = false;                 // the runtime path's automatic vmap must run the traced program (see traced())
};

template <std::size_t N>
std::array<bool, N> all_diff() {
  std::array<bool, N> d;
  d.fill(true);
  return d;
}

/// A row for a composition f (a generic lambda of N values).
template <std::size_t N, class F>
op_row<N, F> row(std::string name, F f, std::vector<sampler<N>> s, double tol = 1e-5) {
  return {std::move(name), std::move(f), std::move(s), all_diff<N>(), {}, tol};
}

/// A row for a primitive op struct: also checks its jvp member.
template <std::size_t N, class Op>
auto prim(std::string name, Op op, std::vector<sampler<N>> s, double tol = 1e-5) {
  auto f = [op](const auto&... x) { return call_op(op, x...); };
  return op_row<N, decltype(f), Op>{std::move(name), f, std::move(s), all_diff<N>(), op, tol};
}

/// The row, also checked with double arguments on its rank-0 samples.
template <std::size_t N, class F, class Op, bool S, bool Fl, class Fx>
op_row<N, F, Op, true, Fl, Fx> with_scalars(op_row<N, F, Op, S, Fl, Fx> r) {
  return {std::move(r.name), std::move(r.f), std::move(r.samples), r.diff, r.op, r.tol, r.fixed_lo,
          r.fixed_hi,        r.traced};
}

/// The row, also checked on tw::fixed values in each of Forms (fixed_form), inputs in [lo, hi].
template <class... Forms, std::size_t N, class F, class Op, bool S, bool Fl, class Fx>
op_row<N, F, Op, S, Fl, std::tuple<Forms...>> with_fixed(op_row<N, F, Op, S, Fl, Fx> r, double lo = -1, double hi = 1) {
  return {std::move(r.name), std::move(r.f), std::move(r.samples), r.diff, r.op, r.tol, lo, hi, r.traced};
}

/// The row, whose vmap and vmap(grad) on the runtime path must run as the traced program
/// (transforms/runtime/fusion.hpp) under strategy::automatic: an elementwise op that lost its
/// fused form would still give the right numbers, by batching rules, and fail here.
template <class Row>
Row traced(Row r) {
  r.traced = true;
  return r;
}

/// The row without the float-kernel check (for functions that build double constants).
template <std::size_t N, class F, class Op, bool S, bool Fl, class Fx>
op_row<N, F, Op, S, false, Fx> doubles_only(op_row<N, F, Op, S, Fl, Fx> r) {
  return {std::move(r.name), std::move(r.f), std::move(r.samples), r.diff, r.op, r.tol, r.fixed_lo,
          r.fixed_hi,        r.traced};
}

/// Independent uniform samples of the given shapes in [lo, hi].
template <std::size_t N>
sampler<N> uniform(std::array<shape_t, N> shapes, double lo = -1, double hi = 1) {
  return [=](unsigned seed) {
    inputs<N> r;
    for (std::size_t i = 0; i < N; ++i)
      r[i] = sample(shapes[i], lo, hi, seed * 7919u + static_cast<unsigned>(i) * 131u + 1u);
    return r;
  };
}

struct case_counter {
  std::map<std::string, int> per_rule;
  int total() const {
    int n = 0;
    for (const auto& [k, v] : per_rule) n += v;
    return n;
  }
  void report(const std::string& table) const {
    std::string s = table + " op rule checker: " + std::to_string(total()) + " (op, rule, sample) cases:";
    for (const auto& [k, v] : per_rule) s += " " + k + "=" + std::to_string(v);
    WARN(s);
  }
};
inline case_counter& counter() {
  static case_counter c;
  return c;
}
inline void count(const char* rule) { ++counter().per_rule[rule]; }

namespace detail_check {

inline tensor<float> to_float(const tensor<double>& t) {
  return tensor<float>(t.shape(), std::vector<float>(t.data(), t.data() + t.numel()));
}
inline tensor<double> to_double(const tensor<float>& t) {
  return tensor<double>(t.shape(), std::vector<double>(t.data(), t.data() + t.numel()));
}
inline tensor<double> to_double(float x) { return tensor<double>(static_cast<double>(x)); }

inline double inner(const tensor<double>& a, const tensor<double>& b) {
  REQUIRE(a.shape() == b.shape());
  double s = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) s += a.data()[i] * b.data()[i];
  return s;
}

template <std::size_t N, class R>
inputs<N> grads_array(const R& r) {
  if constexpr (!requires { std::tuple_size<R>::value; }) return {as_tensor(r)};
  else return std::apply([](const auto&... g) { return inputs<N>{as_tensor(g)...}; }, r);
}

/// f as a type-erased function of N dyn::values (the runtime path).
template <std::size_t N, class F>
auto erase(F f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::function<dyn::value(std::conditional_t<true, dyn::value, std::integral_constant<std::size_t, I>>...)>(
        [f](const auto&... v) { return dyn::value(f(v...)); });
  }(std::make_index_sequence<N>{});
}

template <std::size_t N, class F>
auto grad_all(F f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return tower::grad(std::move(f), argnums<static_cast<int>(I)...>);
  }(std::make_index_sequence<N>{});
}

template <unsigned M, std::size_t I>
auto pick_dim(std::int64_t d) {
  if constexpr (((M >> I) & 1u) != 0) return d;
  else return none;
}
template <unsigned M, std::size_t N>
auto make_in_dims(const std::array<std::int64_t, N>& d) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return in_dims_t<std::conditional_t<((M >> I) & 1u) != 0, std::int64_t, none_t>...>{{pick_dim<M, I>(d[I])...}};
  }(std::make_index_sequence<N>{});
}

template <class Op, std::size_t... I>
constexpr bool has_jvp_rule(std::index_sequence<I...>) {
  return requires(const Op& op, const tensor<double>& t) { op.jvp(t, ((void)I, t)..., ((void)I, t)...); };
}

/// Stacks tensors along `dim` of the result.
inline tensor<double> stack_at(const std::vector<tensor<double>>& xs, std::int64_t dim) {
  return as_tensor(tower::stack(xs, dim));
}

}  // namespace detail_check

template <class Row, std::size_t N>
void check_sample(const Row& r, const sampler<N>& draw, unsigned seed) {
  using namespace detail_check;
  const auto& f = r.f;
  const inputs<N> x = draw(seed);
  std::string shapes;
  for (const auto& xi : x) shapes += tower::detail::shape_str(xi.shape()) + " ";
  INFO("op " << r.name << ", sample shapes " << shapes);

  const tensor<double> y = as_tensor(std::apply(f, x));

  // base: float kernels agree with double ones.
  if constexpr (Row::floats) {
    const auto yf = std::apply([&](const auto&... xi) { return f(to_float(xi)...); }, x);
    require_close(to_double(yf), y, 1e-4);
    count("base");
  }

  // vjp: grad of <f(x), w> against central finite differences; runtime path equals static.
  const tensor<double> w = sample(y.shape(), -1, 1, seed + 97);
  auto loss = [f, w](const auto&... xi) { return tower::sum(f(xi...) * w); };
  const inputs<N> g = grads_array<N>(std::apply(grad_all<N>(loss), x));
  for (std::size_t i = 0; i < N; ++i) {
    if (!r.diff[i]) continue;
    INFO("gradient wrt argument " << i);
    const tensor<double> fd = fd_grad(
        [&](const tensor<double>& v) {
          inputs<N> xv = x;
          xv[i] = v;
          return as_tensor(std::apply(loss, xv)).item();
        },
        x[i]);
    require_close(g[i], fd, r.tol);
    count("vjp");
  }
  const auto loss_rt = erase<N>(loss);
  const inputs<N> gr = grads_array<N>(std::apply(grad_all<N>(loss_rt), x));
  for (std::size_t i = 0; i < N; ++i)
    if (r.diff[i]) require_close(gr[i], g[i], 1e-12);
  count("runtime");

  // jvp: the op's own rule, called on plain values.
  if constexpr (!std::is_same_v<std::remove_cvref_t<decltype(r.op)>, composite>) {
    inputs<N> t;
    for (std::size_t i = 0; i < N; ++i)
      t[i] =
          r.diff[i] ? sample(x[i].shape(), -1, 1, seed + 31 + static_cast<unsigned>(i)) : zeros<double>(x[i].shape());
    if constexpr (detail_check::has_jvp_rule<std::remove_cvref_t<decltype(r.op)>>(std::make_index_sequence<N>{})) {
      const tensor<double> jt = as_tensor(std::apply(
          [&](const auto&... xi) {
            return std::apply([&](const auto&... ti) { return r.op.jvp(y, xi..., ti...); }, t);
          },
          x));
      const double h = fd_step;
      inputs<N> xp = x, xm = x;
      for (std::size_t i = 0; i < N; ++i) {
        xp[i] = as_tensor(x[i] + t[i] * h);
        xm[i] = as_tensor(x[i] - t[i] * h);
      }
      const tensor<double> fd = as_tensor((std::apply(f, xp) - std::apply(f, xm)) * (1 / (2 * h)));
      {
        INFO("jvp rule against finite differences");
        require_close(jt, fd, r.tol);
      }
      count("jvp");
      const tensor<double> u = sample(y.shape(), -1, 1, seed + 53);
      const inputs<N> vt = grads_array<N>(std::apply([&](const auto&... xi) { return r.op.vjp(u, y, xi...); }, x));
      double rhs = 0;
      for (std::size_t i = 0; i < N; ++i)
        if (r.diff[i]) rhs += inner(vt[i], t[i]);
      INFO("<u, J v> against <J^T u, v>");
      require_close(inner(u, jt), rhs, 1e-9);
      count("jvp/vjp");
    }
  }

  // vmap: every combination of in_dims (none, 0, -1), against a loop over the batch.
  constexpr std::int64_t B = 3;
  std::vector<inputs<N>> ex;
  for (std::int64_t b = 0; b < B; ++b) ex.push_back(draw(seed + 1000 + static_cast<unsigned>(b)));
  [&]<unsigned... Mm1>(std::integer_sequence<unsigned, Mm1...>) {
    (
        [&] {
          constexpr unsigned M = Mm1 + 1;
          const int k = std::popcount(M);
          for (int c = 0; c < (1 << k); ++c) {
            std::array<std::int64_t, N> dims{};
            std::string desc;
            for (std::size_t i = 0, j = 0; i < N; ++i) {
              if ((M >> i) & 1u) {
                dims[i] = ((c >> j++) & 1) ? -1 : 0;
                desc += std::to_string(dims[i]) + " ";
              } else {
                desc += "none ";
              }
            }
            INFO("vmap in_dims " << desc);
            inputs<N> in;
            for (std::size_t i = 0; i < N; ++i) {
              if ((M >> i) & 1u) {
                std::vector<tensor<double>> col;
                for (const auto& e : ex) col.push_back(e[i]);
                in[i] = stack_at(col, dims[i]);
              } else {
                in[i] = ex[0][i];
              }
            }
            std::vector<tensor<double>> rows;
            for (std::int64_t b = 0; b < B; ++b) {
              inputs<N> xb;
              for (std::size_t i = 0; i < N; ++i)
                xb[i] = ((M >> i) & 1u) ? ex[static_cast<std::size_t>(b)][i] : ex[0][i];
              rows.push_back(as_tensor(std::apply(f, xb)));
            }
            const tensor<double> expect = stack(rows);
            const auto ind = make_in_dims<M, N>(dims);
            require_close(as_tensor(std::apply(tower::vmap(f, ind), in)), expect, 1e-12);
            count("vmap");
            require_close(as_tensor(std::apply(tower::vmap(erase<N>(f), ind), in)), expect, 1e-12);
            count("runtime");
          }
        }(),
        ...);
  }(std::make_integer_sequence<unsigned, (1u << N) - 1>{});

  // vmap nested twice (every arg batched at dim 0 at both levels).
  {
    INFO("vmap(vmap(f))");
    constexpr std::int64_t B1 = 2, B2 = 3;
    std::vector<inputs<N>> ex2;
    for (std::int64_t b = 0; b < B1 * B2; ++b) ex2.push_back(draw(seed + 2000 + static_cast<unsigned>(b)));
    inputs<N> in;
    for (std::size_t i = 0; i < N; ++i) {
      std::vector<tensor<double>> outer;
      for (std::int64_t b1 = 0; b1 < B1; ++b1) {
        std::vector<tensor<double>> inner_;
        for (std::int64_t b2 = 0; b2 < B2; ++b2) inner_.push_back(ex2[static_cast<std::size_t>(b1 * B2 + b2)][i]);
        outer.push_back(stack(inner_));
      }
      in[i] = stack(outer);
    }
    std::vector<tensor<double>> outer;
    for (std::int64_t b1 = 0; b1 < B1; ++b1) {
      std::vector<tensor<double>> inner_;
      for (std::int64_t b2 = 0; b2 < B2; ++b2)
        inner_.push_back(as_tensor(std::apply(f, ex2[static_cast<std::size_t>(b1 * B2 + b2)])));
      outer.push_back(stack(inner_));
    }
    const tensor<double> expect = stack(outer);
    require_close(as_tensor(std::apply(tower::vmap(tower::vmap(f)), in)), expect, 1e-12);
    count("vmap2");
    require_close(as_tensor(std::apply(tower::vmap(tower::vmap(erase<N>(f))), in)), expect, 1e-12);
    count("runtime");
  }

  // vmap(grad): per-example gradients against a loop of grad, both paths.
  {
    INFO("vmap(grad(f))");
    inputs<N> in;
    for (std::size_t i = 0; i < N; ++i) {
      std::vector<tensor<double>> col;
      for (const auto& e : ex) col.push_back(e[i]);
      in[i] = stack(col);
    }
    const inputs<N> pg = grads_array<N>(std::apply(tower::vmap(grad_all<N>(loss)), in));
    const inputs<N> pr = grads_array<N>(std::apply(tower::vmap(grad_all<N>(loss_rt)), in));
    for (std::size_t i = 0; i < N; ++i) {
      if (!r.diff[i]) continue;
      std::vector<tensor<double>> rows;
      for (const auto& e : ex) rows.push_back(grads_array<N>(std::apply(grad_all<N>(loss), e))[i]);
      require_close(pg[i], stack(rows), 1e-12);
      require_close(pr[i], pg[i], 1e-12);
    }
    count("vmap(grad)");
    count("runtime");
  }

  // Every physical form of vmap, for f and for grad of <f, w>, against loops over the examples:
  // on the static path the automatic choice, batching rules, packets of 8 examples (several
  // packets and a short one, each computing into its rows of the output) and the per-example
  // loop; on the runtime path the automatic choice (the traced program wherever f traces),
  // batching rules and packets. Every argument batched at dim 0; 300 examples: a block of 256
  // lanes of the traced program and a short one, four blocks of 64 of the per-example loop and
  // a tail.
  {
    constexpr std::int64_t Bf = 300;
    std::vector<inputs<N>> exf;
    for (std::int64_t b = 0; b < Bf; ++b) exf.push_back(draw(seed + 3000 + static_cast<unsigned>(b)));
    inputs<N> in;
    for (std::size_t i = 0; i < N; ++i) {
      std::vector<tensor<double>> col;
      for (const auto& e : exf) col.push_back(e[i]);
      in[i] = stack(col);
    }
    std::vector<tensor<double>> rows;
    std::vector<inputs<N>> grad_rows;
    for (const auto& e : exf) {
      rows.push_back(as_tensor(std::apply(f, e)));
      grad_rows.push_back(grads_array<N>(std::apply(grad_all<N>(loss), e)));
    }
    const tensor<double> expect = stack(rows);
    // The forms every path has, then `loop...` (the static path's per-example loop).
    // On the runtime path, `must_trace` (the row is traced()) requires the automatic form to
    // run the traced program.
    auto forms = [&](const char* path, bool must_trace, const auto& fn, const auto& gn, auto... loop) {
      auto traced_if_automatic = [&](const char* form) {
        if (!must_trace || std::string(form) != "automatic") return;
        INFO("refusal: " << dyn::last_fusion().refusal);
        REQUIRE(dyn::last_fusion().fused);
        count("traced");
      };
      auto one = [&](const char* form, auto... opt) {
        INFO(path << " vmap, " << form);
        dyn::last_fusion() = {};
        require_close(as_tensor(std::apply(tower::vmap(fn, opt...), in)), expect, 1e-12);
        traced_if_automatic(form);
        INFO(path << " vmap(grad), " << form);
        dyn::last_fusion() = {};
        const inputs<N> pg = grads_array<N>(std::apply(tower::vmap(grad_all<N>(gn), opt...), in));
        traced_if_automatic(form);
        for (std::size_t i = 0; i < N; ++i) {
          if (!r.diff[i]) continue;
          std::vector<tensor<double>> gi;
          for (const auto& e : grad_rows) gi.push_back(e[i]);
          require_close(pg[i], stack(gi), 1e-12);
        }
        count(form);
      };
      one("automatic");
      one("batched", tower::strategy::batched);
      one("packets", tower::strategy::packets, tower::chunk_size(8));
      (one("per-example loop", loop), ...);
    };
    forms("static", false, f, loss, tower::strategy::fused);
    forms("runtime", r.traced, erase<N>(f), loss_rt);
    // A traced row with the first argument batched and the others not: the traced program
    // broadcasts the unbatched values against the lanes (and may grow their shape).
    if constexpr (N >= 2) {
      if (r.traced) {
        INFO("runtime vmap, automatic, only the first argument batched");
        inputs<N> first_only = exf[0];
        first_only[0] = in[0];
        std::vector<tensor<double>> rows_first;
        for (const auto& e : exf) {
          inputs<N> xb = exf[0];
          xb[0] = e[0];
          rows_first.push_back(as_tensor(std::apply(f, xb)));
        }
        dyn::last_fusion() = {};
        std::array<std::int64_t, N> zero_dims{};
        require_close(as_tensor(std::apply(tower::vmap(erase<N>(f), make_in_dims<1u, N>(zero_dims)), first_only)),
                      stack(rows_first), 1e-12);
        INFO("refusal: " << dyn::last_fusion().refusal);
        REQUIRE(dyn::last_fusion().fused);
        count("traced");
      }
    }
  }

  // batch 1: one example, every argument batched, then (two or more arguments) only the first;
  // vmap and vmap(grad) on both paths against f and grad on the example.
  {
    INFO("vmap at batch size 1");
    inputs<N> in1;
    for (std::size_t i = 0; i < N; ++i) in1[i] = stack({x[i]});
    const tensor<double> expect1 = stack({y});
    auto both_paths = [&](const auto& dims, const inputs<N>& args) {
      require_close(as_tensor(std::apply(tower::vmap(f, dims), args)), expect1, 1e-12);
      require_close(as_tensor(std::apply(tower::vmap(erase<N>(f), dims), args)), expect1, 1e-12);
      count("batch 1");
      count("runtime");
    };
    std::array<std::int64_t, N> zero_dims{};
    both_paths(make_in_dims<(1u << N) - 1, N>(zero_dims), in1);
    if constexpr (N >= 2) {
      inputs<N> first_only = x;
      first_only[0] = in1[0];
      both_paths(make_in_dims<1u, N>(zero_dims), first_only);
    }
    const inputs<N> pg = grads_array<N>(std::apply(tower::vmap(grad_all<N>(loss)), in1));
    const inputs<N> pr = grads_array<N>(std::apply(tower::vmap(grad_all<N>(loss_rt)), in1));
    for (std::size_t i = 0; i < N; ++i) {
      if (!r.diff[i]) continue;
      require_close(pg[i], stack({g[i]}), 1e-12);
      require_close(pr[i], pg[i], 1e-12);
    }
    count("batch 1");
    count("runtime");
  }

  // scalars: double arguments, grad and grad(grad) against finite differences, both paths.
  if constexpr (Row::scalars) {
    if (y.dim() == 0) {
      bool all_scalar = true;
      for (const auto& xi : x) all_scalar = all_scalar && xi.dim() == 0;
      if (all_scalar) {
        std::array<double, N> xs;
        for (std::size_t i = 0; i < N; ++i) xs[i] = x[i].item();
        auto fs = [f](auto... v) { return f(v...) * 1.0; };
        const inputs<N> gs = grads_array<N>(std::apply(grad_all<N>(fs), xs));
        for (std::size_t i = 0; i < N; ++i) {
          if (!r.diff[i]) {  // not differentiated (a condition, stop_gradient): a zero gradient
            require_close(gs[i].item(), 0.0, 0);
            continue;
          }
          std::array<double, N> xp = xs, xm = xs;
          xp[i] += fd_step;
          xm[i] -= fd_step;
          require_close(gs[i].item(),
                        (as_tensor(std::apply(f, xp)).item() - as_tensor(std::apply(f, xm)).item()) / (2 * fd_step),
                        r.tol);
        }
        count("scalar grad");
        const inputs<N> gsr = grads_array<N>(std::apply(grad_all<N>(erase<N>(fs)), xs));
        for (std::size_t i = 0; i < N; ++i) require_close(gsr[i].item(), gs[i].item(), 1e-12);
        count("runtime");
        if constexpr (N == 1) {
          const double dd = tower::grad(tower::grad(fs))(xs[0]);
          auto d1 = [&](double v) { return static_cast<double>(tower::grad(fs)(v)); };
          require_close(dd, (d1(xs[0] + 1e-5) - d1(xs[0] - 1e-5)) / 2e-5, 1e-4);
          count("grad(grad)");
          require_close(tower::grad(tower::grad(erase<1>(fs)))(xs[0]).item(), dd, 1e-12);
          count("runtime");
        }
      }
    }
  }
}

namespace detail_fixed {

inline constexpr int n = 3;
inline constexpr std::int64_t batch = 70;  // more than one block of 64 examples, and a tail
using vec = fixed<double, n>;

inline vec fx(const tensor<double>& t) { return to_fixed<vec>(t); }
inline tensor<double> tt(const vec& v) { return to_tensor(v); }

/// An argument as the fixed path sees it, as the tensor path sees it, and its shape.
template <kind K>
auto fixed_arg(const tensor<double>& t) {
  if constexpr (K == kind::vector) return fx(t);
  else if constexpr (K == kind::number) return t.item();
  else return to_fixed<fixed<double, 1>>(t);
}
template <kind K>
auto tensor_arg(const tensor<double>& t) {
  if constexpr (K == kind::number) return t.item();
  else return t;
}
template <kind K>
shape_t shape_of() {
  if constexpr (K == kind::vector) return {n};
  else if constexpr (K == kind::number) return {};
  else return {1};
}

/// Element I of a gradient of A arguments (the gradient itself when A is 1).
template <std::size_t I, std::size_t A, class G>
const auto& component(const G& g) {
  if constexpr (A == 1) return g;
  else return std::get<I>(g);
}

/// Central differences, column by column, of gradient component I of `gradient` (a function of
/// the tuple args) in argument I, a vector of n elements.
template <std::size_t I, std::size_t A, class Gradient, class Args>
tensor<double> fd_hessian(const Gradient& gradient, const Args& args) {
  const double h = 1e-5;
  const tensor<double>& x = std::get<I>(args);
  std::vector<double> out(static_cast<std::size_t>(n * n));
  for (std::int64_t j = 0; j < n; ++j) {
    std::vector<double> p(x.data(), x.data() + n), m = p;
    p[static_cast<std::size_t>(j)] += h;
    m[static_cast<std::size_t>(j)] -= h;
    Args ap = args, am = args;
    std::get<I>(ap) = tensor<double>({n}, p);
    std::get<I>(am) = tensor<double>({n}, m);
    const auto gp = std::apply(gradient, ap);
    const auto gm = std::apply(gradient, am);
    const tensor<double>& cp = component<I, A>(gp);
    const tensor<double>& cm = component<I, A>(gm);
    for (std::int64_t i = 0; i < n; ++i)
      out[static_cast<std::size_t>(i * n + j)] = (cp.data()[i] - cm.data()[i]) / (2 * h);
  }
  return tensor<double>({n, n}, out);
}

}  // namespace detail_fixed

/// A row's form on tw::fixed values (see the header comment), inputs drawn in [lo, hi].
template <class Row, bool Deep, kind... K>
void check_fixed(const Row& r, fixed_form<Deep, K...>, unsigned seed) {
  using namespace detail_fixed;
  using detail_check::grad_all;
  constexpr std::size_t A = sizeof...(K);
  static_assert(A == std::tuple_size_v<decltype(r.diff)>, "with_fixed: one kind per argument");
  constexpr bool unary_vector = A == 1 && ((K == kind::vector) && ...);
  const auto& f = r.f;
  std::string kinds;
  ((kinds += K == kind::vector ? "vector " : K == kind::number ? "number " : "size-1 "), ...);
  INFO("op " << r.name << " on tw::fixed values: " << kinds);
  std::vector<tensor<double>> xs;
  unsigned s = seed;
  ((xs.push_back(sample(shape_of<K>(), r.fixed_lo, r.fixed_hi, s++))), ...);
  auto fixed_args = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple(fixed_arg<K>(xs[I])...);
  }(std::make_index_sequence<A>{});
  auto tensor_args = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::make_tuple(tensor_arg<K>(xs[I])...);
  }(std::make_index_sequence<A>{});

  // Values.
  const auto yf = std::apply(f, fixed_args);
  const auto yt = std::apply(f, tensor_args);
  REQUIRE(tower::shape(yf) == tower::shape(yt));
  require_close(as_tensor(tower::sum(yf) * 1.0), as_tensor(tower::sum(yt) * 1.0), 1e-13);
  count("fixed values");

  // grad of a scalar loss, every argument: the tape-free path on fixed values against the tape.
  const vec wv = fx(sample({n}, -1, 1, seed + 50));
  auto loss_f = [&](const auto&... x) { return tower::sum(f(x...) * wv); };
  auto loss_t = [&](const auto&... x) { return tower::sum(f(x...) * tt(wv)); };
  const auto grad_t = grad_all<A>(loss_t);
  const auto gf = std::apply(grad_all<A>(loss_f), fixed_args);
  const auto gt = std::apply(grad_t, tensor_args);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (require_close(as_tensor(tower::sum(component<I, A>(gf)) * 1.0), as_tensor(tower::sum(component<I, A>(gt)) * 1.0),
                   1e-12),
     ...);
  }(std::make_index_sequence<A>{});
  if constexpr (unary_vector) require_close(tt(gf), gt, 1e-12);  // elementwise: a sum could hide a permutation
  count("fixed grad");

  // grad of grad (forward over forward on fixed values) against the tape: d/dx <grad loss(x), v>.
  if constexpr (unary_vector) {
    const vec v = fx(sample({n}, -1, 1, seed + 60));
    auto hv_f = tower::grad([&](const auto& x) { return tower::dot(tower::grad(loss_f)(x), v); });
    auto hv_t = tower::grad([&](const auto& x) { return tower::dot(tower::grad(loss_t)(x), tt(v)); });
    require_close(tt(hv_f(std::get<0>(fixed_args))), hv_t(std::get<0>(tensor_args)), 1e-10);
    count("fixed grad(grad)");
  }

  // hessian of the loss in each vector argument, on elementwise jets (jacobian_rows.hpp),
  // against central differences of the tape's gradient; deep: against the tensor path exactly.
  auto hessian_in = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
    constexpr kind kinds_[] = {K...};
    if constexpr (kinds_[I] == kind::vector) {
      using G = decltype(loss_f);
      constexpr bool on_jets = []<std::size_t... J>(std::index_sequence<J...>) {
        return jacrev_transform<G, argnums_t<static_cast<int>(I)>>::template jacobian_rows_ok<
            static_cast<int>(I),
            std::remove_cvref_t<decltype(fixed_arg<kinds_[J]>(std::declval<tensor<double>>()))>...>();
      }(std::make_index_sequence<A>{});
      STATIC_REQUIRE(on_jets);
      const tensor<double> hf = to_tensor(std::apply(tower::hessian(loss_f, argnums<static_cast<int>(I)>), fixed_args));
      require_close(hf, fd_hessian<I, A>(grad_t, tensor_args), 1e-7);
      count("fixed hessian");
      if constexpr (Deep) {
        require_close(hf, std::apply(tower::hessian(loss_t, argnums<static_cast<int>(I)>), tensor_args), 1e-10);
        count("fixed hessian (exact)");
      }
    }
  };
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (hessian_in(std::integral_constant<std::size_t, I>{}), ...);
  }(std::make_index_sequence<A>{});

  // Deep: vmap(hessian) with fixed_rows against hessian on each row.
  if constexpr (Deep && unary_vector) {
    const tensor<double> X = sample({batch, n}, r.fixed_lo, r.fixed_hi, seed + 200);
    const tensor<double> H = tower::vmap(tower::hessian(loss_f), in_dims(fixed_rows<n>))(X);
    REQUIRE(H.shape() == shape_t{batch, n, n});
    for (std::int64_t b = 0; b < batch; ++b)
      require_close(row(H, b), to_tensor(tower::hessian(loss_f)(fx(row(X, b)))), 1e-13);
    count("fixed vmap(hessian)");
  }

  // vmap(grad) with fixed_rows for the vector arguments, which the per-example loop must take,
  // against in_dims 0 on tensors.
  if constexpr (((K == kind::vector) || ...)) {
    std::vector<tensor<double>> batched_;
    unsigned bs_seed = seed + 100;
    ((batched_.push_back(K == kind::vector ? sample({batch, n}, r.fixed_lo, r.fixed_hi, bs_seed++)
                                           : sample({batch}, r.fixed_lo, r.fixed_hi, bs_seed++))),
     ...);
    auto entry_fixed = [](auto k) {
      if constexpr (decltype(k)::value == kind::vector) return fixed_rows<n>;
      else return 0;
    };
    const auto in_f = in_dims(entry_fixed(std::integral_constant<kind, K>{})...);
    const auto in_t = in_dims((static_cast<void>(K), 0)...);
    STATIC_REQUIRE(tower::detail::fused_fixed::applies<
                   decltype(grad_all<A>(loss_f)), decltype(in_f),
                   std::conditional_t<true, tensor<double>, std::integral_constant<kind, K>>...>());
    auto batched_args = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tie(batched_[I]...);
    }(std::make_index_sequence<A>{});
    auto per_f = std::apply(tower::vmap(grad_all<A>(loss_f), in_f), batched_args);
    auto per_t = std::apply(tower::vmap(grad_t, in_t), batched_args);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (require_close(component<I, A>(per_f), component<I, A>(per_t), 1e-12), ...);
    }(std::make_index_sequence<A>{});
    count("fixed vmap(grad)");
  }
}

/// Checks every sample of every row of a table (a std::tuple of rows), and each row's forms on
/// tw::fixed values.
template <class Row>
void check_row(const Row& r) {
  for (std::size_t s = 0; s < r.samples.size(); ++s) check_sample(r, r.samples[s], static_cast<unsigned>(s + 1));
  std::apply([&](auto... form) { (check_fixed(r, form, 1), ...); }, typename Row::fixed_forms{});
}
template <class Table>
void check_table(const Table& table) {
  std::apply([](const auto&... r) { (check_row(r), ...); }, table);
}

}  // namespace tower::testing

#pragma once
// Tracing a runtime vmap: the ops its interpreter runs, as a per-example fusion::program
// (fused_program.hpp). transforms/runtime/fusion.hpp sets a trace_recorder as the vmap's entry
// state while f runs on a few examples; vmap_interpreter::process hands it each op with the op's
// logical (per-example) arguments and result.
//
// What it can express: elementwise ops (one instruction per element, with broadcasting),
// shape-only ops (ones_like: constants), and ops that declare themselves linear in one operand
// (`static constexpr bool linear = true;`: sum, reshape, broadcast_to, movedim, permute, narrow):
// those are probed with one-hot inputs at trace time, so an output element is an input
// register (a data move costs nothing) or a sum of scaled ones. Any other op, or a value the
// trace did not see made, stops the trace (trace_stopped leaves f at once); vmap then runs as
// if it had not been traced.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tower/runtime/dyn_value.hpp"
#include "tower/runtime/fused_program.hpp"
#include "tower/kernels/base.hpp"
#include "tower/core/op_traits.hpp"

namespace tower {

/// An op whose result does not read its operand's values, only its shape (ones_like).
template <class Op>
inline constexpr bool is_shape_only_v = [] {
  if constexpr (requires { Op::shape_only; }) return static_cast<bool>(Op::shape_only);
  else return false;
}();

}  // namespace tower

namespace tower::runtime {

/// Thrown out of f when the trace stops, so that f does not run to its end for nothing (not a
/// tower::error: only the fused vmap catches it).
struct trace_stopped {};

class trace_recorder {
 public:
  /// Limits that keep a trace cheap: elements of one value, registers of the program.
  static constexpr std::int64_t max_elements = 4096;
  static constexpr std::size_t max_registers = std::size_t{1} << 18;

  trace_recorder(int level, std::uint64_t serial) : level_(level), serial_(serial) {}

  /// f's argument `arg`, wrapped at the traced level: its elements are input registers.
  void add_input(const dyn::value& wrapped, int arg) {
    const std::int64_t n = numel(wrapped.shape());
    if (n > max_elements) return stop("an argument has " + std::to_string(n) + " elements per example");
    std::vector<int> r(static_cast<std::size_t>(n));
    for (std::int64_t e = 0; e < n; ++e) r[static_cast<std::size_t>(e)] = prog_.input(arg, e);
    remember(wrapped, std::move(r));
  }

  /// One op at the traced level: op(args) gave out.
  template <class Op, std::size_t N>
  void record(const Op& op, const std::array<const dyn::value*, N>& args, const dyn::value& out) {
    if (!ok_) return;
    record_op(op, args, out);
    if (!ok_) throw trace_stopped{};
  }

 private:
  template <class Op, std::size_t N>
  void record_op(const Op& op, const std::array<const dyn::value*, N>& args, const dyn::value& out) {
    if (!here(out)) return stop(std::string("op '") + Op::name + "' gave a value the trace cannot follow");
    const shape_t s = out.shape();
    const std::int64_t n = numel(s);
    if (n > max_elements)
      return stop(std::string("op '") + Op::name + "' gives " + std::to_string(n) + " elements per example");
    std::array<const std::vector<int>*, N> in{};
    std::array<std::vector<int>, N> made;
    std::array<shape_t, N> shapes;
    for (std::size_t i = 0; i < N; ++i) {
      shapes[i] = args[i]->shape();
      in[i] = operand(*args[i], made[i]);
      if (!in[i]) return stop(std::string("op '") + Op::name + "' reads a value the trace did not see made");
    }
    std::vector<int> r(static_cast<std::size_t>(n));
    if constexpr (is_elementwise_v<Op> && is_shape_only_v<Op>) {
      const int c = prog_.constant(static_cast<double>(op.base(0.0)));
      std::fill(r.begin(), r.end(), c);
    } else if constexpr (is_elementwise_v<Op> && N <= 3) {
      const auto shared = std::make_shared<const Op>(op);
      std::array<shape_t, N> strides;
      for (std::size_t i = 0; i < N; ++i) strides[i] = kernels::broadcast_strides(shapes[i], s);
      shape_t index(s.size(), 0);
      for (std::int64_t e = 0; e < n; ++e) {
        std::array<int, N> x;
        for (std::size_t i = 0; i < N; ++i) {
          std::int64_t at = 0;
          for (std::size_t d = 0; d < s.size(); ++d) at += index[d] * strides[i][d];
          x[i] = (*in[i])[static_cast<std::size_t>(at)];
        }
        r[static_cast<std::size_t>(e)] = prog_.emit<Op, N>(shared, x);
        for (std::size_t d = s.size(); d-- > 0;) {  // the next row-major index
          if (++index[d] < s[d]) break;
          index[d] = 0;
        }
      }
    } else if constexpr (is_linear_v<Op> && N == 1) {
      if (!expand_linear(op, shapes[0], *in[0], s, r)) return;
    } else {
      return stop(std::string("op '") + Op::name + "' has no fused form");
    }
    if (prog_.register_count() > max_registers)
      return stop("the program has more than " + std::to_string(max_registers) + " registers");
    remember(out, std::move(r));
  }

 public:
  /// The registers of a value the trace made or was given; null when it has none.
  const std::vector<int>* registers(const dyn::value& v) const {
    if (!here(v)) return nullptr;
    auto it = regs_.find(&v.get());
    return it == regs_.end() ? nullptr : &it->second;
  }

  bool ok() const { return ok_; }
  /// Why the trace stopped (empty while it is ok).
  const std::string& why() const { return why_; }
  void stop(std::string why) {
    if (ok_) why_ = std::move(why);
    ok_ = false;
  }
  fusion::program& program() { return prog_; }

 private:
  static std::int64_t numel(const shape_t& s) {
    std::int64_t n = 1;
    for (auto d : s) n *= d;
    return n;
  }

  bool here(const dyn::value& v) const { return v.level() == level_ && v.get().serial == serial_; }

  void remember(const dyn::value& v, std::vector<int> r) {
    regs_[&v.get()] = std::move(r);
    keep_.push_back(v);  // its rep stays alive, so no later value takes its address
  }

  /// An operand's registers: a traced value's own, or constants for a value of the level below.
  const std::vector<int>* operand(const dyn::value& x, std::vector<int>& made) {
    if (x.level() == level_) return registers(x);
    if (x.level() != 0) return nullptr;
    std::optional<tensor<double>> scratch;
    const tensor<double>& t = x.plain_ref(scratch);
    if (t.numel() > max_elements) return nullptr;
    made.resize(static_cast<std::size_t>(t.numel()));
    for (std::int64_t e = 0; e < t.numel(); ++e) made[static_cast<std::size_t>(e)] = prog_.constant(t.data()[e]);
    return &made;
  }

  /// out = op(x) for an op linear in x: each output element from one-hot probes of x.
  template <class Op>
  bool expand_linear(const Op& op, const shape_t& xs, const std::vector<int>& x, const shape_t& s,
                     std::vector<int>& r) {
    const auto n_in = static_cast<std::int64_t>(x.size());
    if (n_in * static_cast<std::int64_t>(r.size()) > std::int64_t{1} << 22) {
      stop(std::string("op '") + Op::name + "' is too large to probe");
      return false;
    }
    std::vector<std::vector<std::pair<std::int64_t, double>>> terms(r.size());
    tensor<double> probe(xs, std::vector<double>(static_cast<std::size_t>(n_in), 0.0));
    for (std::int64_t i = 0; i < n_in; ++i) {
      probe.data()[i] = 1.0;
      const tensor<double> y = op.base(probe);
      probe.data()[i] = 0.0;
      if (y.shape() != s) {
        stop(std::string("op '") + Op::name + "' gives a different shape on its own than under vmap");
        return false;
      }
      for (std::int64_t j = 0; j < y.numel(); ++j)
        if (y.data()[j] != 0.0) terms[static_cast<std::size_t>(j)].push_back({i, y.data()[j]});
    }
    for (std::size_t j = 0; j < r.size(); ++j) {
      int acc = -1;
      for (const auto& [i, c] : terms[j]) {
        const int xi = x[static_cast<std::size_t>(i)];
        const int term = c == 1.0 ? xi : prog_.emit<fusion::times, 2>(times_, {prog_.constant(c), xi});
        acc = acc < 0 ? term : prog_.emit<fusion::plus, 2>(plus_, {acc, term});
      }
      r[j] = acc < 0 ? prog_.constant(0.0) : acc;
    }
    return true;
  }

  int level_;
  std::uint64_t serial_;
  fusion::program prog_;
  std::unordered_map<const dyn::value::rep*, std::vector<int>> regs_;
  std::vector<dyn::value> keep_;
  std::shared_ptr<const fusion::plus> plus_ = std::make_shared<const fusion::plus>();
  std::shared_ptr<const fusion::times> times_ = std::make_shared<const fusion::times>();
  bool ok_ = true;
  std::string why_;
};

}  // namespace tower::runtime

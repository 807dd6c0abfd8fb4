#pragma once
// A per-example program of scalar instructions, run on lanes of examples: the form the runtime
// path's vmap compiles a traced function to (runtime/trace.hpp, transforms/runtime/fusion.hpp).
//
// Each element of each per-example value is a register. An instruction applies one elementwise
// op's kernel on doubles to block_lanes examples at once (a register holds one number per example),
// so a chain of ops runs on a few KiB that stay in L1, instead of writing batch-sized tensors
// per op. Built once per vmap call:
//
//   fusion::program p;
//   const int x = p.input(0, 0), two = p.constant(2.0);
//   const int y = p.emit(fusion::kernel_of<mul_op, 2>(), std::make_shared<mul_op>(), {x, two});
//   p.finish({{y}});                      // one output of one element
//   p.run({X.data()}, {1}, B, {Y.data()});  // Y[b] = X[b] * 2 for b < B
//
// emit folds instructions whose inputs are all constants, gives x * 1, x / 1, x + -0, x - 0 and
// -(-x) as x, and reuses an earlier instruction with the same stateless op and inputs; finish
// drops instructions no output needs, runs an arithmetic instruction inside the one arithmetic
// instruction that reads it (arith_of), and gives registers lane buffers, reusing a buffer once
// its register is dead. Rows go to lanes and back in packets (kernels/rows_lanes.hpp).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tower/core/error.hpp"
#include "tower/core/op_traits.hpp"
#include "tower/kernels/rows_lanes.hpp"
#include "tower/kernels/vector_math.hpp"

namespace tower::fusion {

/// Examples per block: a register's lanes take 2 KiB (TOWER_FUSED_BLOCK_LANES overrides it).
#ifdef TOWER_FUSED_BLOCK_LANES
inline constexpr std::size_t block_lanes = TOWER_FUSED_BLOCK_LANES;
#else
inline constexpr std::size_t block_lanes = 256;
#endif
static_assert(block_lanes % 16 == 0, "fusion: a block is a whole number of packets");

/// out[k] = op(in[0][k], ...) for the block_lanes lanes of a block. (A trip count the compiler
/// knows, and a multiple of every packet width, lets g++ -O2 vectorise the loop.)
using lane_kernel = void (*)(const void* op, double* out, const double* const* in);

/// The lane kernel of an elementwise Op with N operands: its kernel on doubles, or glibc's
/// libmvec a packet at a time for the ops that use it on tensors (Op::vmath_fn), so that a fused
/// program gives the bits the op gives on a tensor of the whole batch.
template <class Op, std::size_t N>
void run_lanes(const void* p, double* __restrict out, const double* const* in) {
  const Op& op = *static_cast<const Op*>(p);
  constexpr auto n = static_cast<std::int64_t>(block_lanes);
  if constexpr (N == 1 && requires { typename Op::vmath_fn; }) {
    kernels::vmath::apply<typename Op::vmath_fn>(in[0], out, n);
  } else if constexpr (N == 1) {
    const double* __restrict a = in[0];
    for (std::int64_t k = 0; k < n; ++k) out[k] = static_cast<double>(op.base(a[k]));
  } else if constexpr (N == 2) {
    const double* __restrict a = in[0];
    const double* __restrict b = in[1];
    for (std::int64_t k = 0; k < n; ++k) out[k] = static_cast<double>(op.base(a[k], b[k]));
  } else {
    static_assert(N == 3, "fusion: elementwise ops take one to three operands");
    const double* __restrict a = in[0];
    const double* __restrict b = in[1];
    const double* __restrict c = in[2];
    for (std::int64_t k = 0; k < n; ++k) out[k] = static_cast<double>(op.base(a[k], b[k], c[k]));
  }
}

template <class Op, std::size_t N>
constexpr lane_kernel kernel_of() {
  return &run_lanes<Op, N>;
}

/// The two kernels a linear op's expansion needs (runtime/trace.hpp): a + b and c * a.
struct plus {
  static constexpr const char* name = "plus";
  double base(double a, double b) const { return a + b; }
};
struct times {
  static constexpr const char* name = "times";
  double base(double a, double b) const { return a * b; }
};

#if defined(__GNUC__) && !defined(__clang__)
#define TOWER_NO_FP_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define TOWER_NO_FP_CONTRACT
#endif

// The arithmetic operations (arith, arith_of: core/op_traits.hpp): finish() runs an instruction
// whose result only one later instruction reads inside that one, one pass over the lanes and one
// store fewer.
template <>
inline constexpr arith arith_of<plus> = arith::add;
template <>
inline constexpr arith arith_of<times> = arith::mul;

/// How many operands the operation takes.
constexpr int arity_of(arith a) { return a == arith::neg ? 1 : 2; }

template <arith A>
inline double arith_apply(double x, double y) {
  if constexpr (A == arith::add) return x + y;
  else if constexpr (A == arith::sub) return x - y;
  else if constexpr (A == arith::mul) return x * y;
  else if constexpr (A == arith::div) return x / y;
  else return -x;
}

/// out = second(t, c) (Pos 0), second(c, t) (Pos 1) or second(t, t) (Pos 2: x + x, the two
/// gradient terms of r * r), t = first(a, b); a unary first or second takes one operand (-a,
/// -t). The operands come in that order: a, b if first is binary, c if second reads one.
///
/// Never contracted to a fused multiply-add (g++ contracts by default, even in ISO C++ mode,
/// when the target has FMA): the pair gives the bits of the two ops run one after the other.
template <arith First, arith Second, int Pos>
TOWER_NO_FP_CONTRACT void run_pair(const void*, double* __restrict out, const double* const* in) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  constexpr int first_operands = arity_of(First);
  const double* __restrict a = in[0];
  const double* __restrict b = first_operands == 2 ? in[1] : a;
  const double* __restrict c = arity_of(Second) == 2 && Pos != 2 ? in[first_operands] : a;
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(block_lanes); ++k) {
    const double t = arith_apply<First>(a[k], b[k]);
    if constexpr (arity_of(Second) == 1) out[k] = arith_apply<Second>(t, t);
    else if constexpr (Pos == 0) out[k] = arith_apply<Second>(t, c[k]);
    else if constexpr (Pos == 1) out[k] = arith_apply<Second>(c[k], t);
    else out[k] = arith_apply<Second>(t, t);
  }
}

/// The pair kernel for arithmetic operations first and second (not none).
inline lane_kernel pair_kernel(arith first, arith second, int pos) {
  constexpr int ops = static_cast<int>(arith::neg);
  static constexpr auto table = []<int... I>(std::integer_sequence<int, I...>) {
    return std::array<lane_kernel, ops * ops * 3>{
        &run_pair<static_cast<arith>(I / (3 * ops) + 1), static_cast<arith>(I / 3 % ops + 1), I % 3>...};
  }(std::make_integer_sequence<int, ops * ops * 3>{});
  const int i = (static_cast<int>(first) - 1) * 3 * ops + (static_cast<int>(second) - 1) * 3 + pos;
  return table[static_cast<std::size_t>(i)];
}

class program {
 public:
  /// The register of element `element` of argument `arg` (loaded per block from its tensor).
  int input(int arg, std::int64_t element) {
    regs_.push_back({kind::input, arg, element, 0, -1});
    return static_cast<int>(regs_.size()) - 1;
  }

  /// A register holding v in every lane (one per distinct bit pattern).
  int constant(double v) {
    auto [it, fresh] = constants_.try_emplace(bits(v), static_cast<int>(regs_.size()));
    if (fresh) regs_.push_back({kind::constant, 0, 0, v, -1});
    return it->second;
  }

  bool is_constant(int r) const { return regs_[static_cast<std::size_t>(r)].k == kind::constant; }
  double constant_value(int r) const { return regs_[static_cast<std::size_t>(r)].value; }

  /// The register of kernel(op, in...). `op` is kept alive by the program; a stateless op
  /// (an empty class) with the same kernel and inputs as an earlier one gives that one's register.
  int emit(lane_kernel kernel, std::shared_ptr<const void> op, std::initializer_list<int> in, bool stateless = false,
           const char* name = "op") {
    if (in.size() < 1 || in.size() > 3) throw error("fusion: an instruction takes one to three operands");
    instruction ins{kernel, op.get(), -1, {-1, -1, -1}, static_cast<int>(in.size()), name};
    std::copy(in.begin(), in.end(), ins.in.begin());
    if (std::all_of(in.begin(), in.end(), [&](int r) { return is_constant(r); })) return fold(ins);
    const key k{reinterpret_cast<std::uintptr_t>(kernel), ins.in[0], ins.in[1], ins.in[2]};
    if (stateless)
      if (auto it = seen_.find(k); it != seen_.end()) return it->second;
    ops_.push_back(std::move(op));
    ins.out = static_cast<int>(regs_.size());
    regs_.push_back({kind::computed, 0, 0, 0, static_cast<int>(code_.size())});
    code_.push_back(ins);
    if (stateless) seen_.emplace(k, ins.out);
    return ins.out;
  }

  /// An elementwise Op of N registers. Arithmetic whose result is exactly an operand (x * 1,
  /// 1 * x, x / 1, x + -0, -0 + x, x - 0, -(-x)) gives that operand's register: jacfwd's one-hot
  /// seeds leave many of them in Hessian programs.
  template <class Op, std::size_t N>
  int emit(const std::shared_ptr<const Op>& op, const std::array<int, N>& in) {
    if constexpr (arith_of<Op> != arith::none)
      if (const int same = identity<arith_of<Op>>(in.data()); same >= 0) return same;
    const int r = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return emit(kernel_of<Op, N>(), op, {in[I]...}, std::is_empty_v<Op>, Op::name);
    }(std::make_index_sequence<N>{});
    if constexpr (arith_of<Op> != arith::none) {
      static_assert(arity_of(arith_of<Op>) == static_cast<int>(N),
                    "fusion: arith_of gives an operation of another arity");
      const reg& g = regs_[static_cast<std::size_t>(r)];
      if (g.k == kind::computed) code_[static_cast<std::size_t>(g.def)].a = arith_of<Op>;
    }
    return r;
  }

  std::size_t instruction_count() const { return code_.size(); }
  std::size_t register_count() const { return regs_.size(); }
  /// After finish: the instructions that run per block, and the lane buffers they use.
  std::size_t live_instruction_count() const { return live_.size(); }
  std::size_t buffer_count() const { return buffers_; }

  /// The instructions that run per block, one per line ("r5 = mul(r2, c0.5)"), for tuning.
  std::string listing() const {
    std::string s;
    auto reg = [&](int r) {
      const auto& g = regs_[static_cast<std::size_t>(r)];
      if (g.k == kind::constant) return "c" + std::to_string(g.value);
      if (g.k == kind::input) return "x" + std::to_string(g.arg) + "[" + std::to_string(g.element) + "]";
      return "r" + std::to_string(r);
    };
    for (const instruction& ins : live_) {
      s += reg(ins.out) + " = ";
      if (ins.second) {  // a pair: second(first(a, b), c), second(c, first(a, b)), -first(a, b) ...
        std::string inner = std::string(ins.name) + "(" + reg(ins.in[0]);
        if (ins.split == 2) inner += ", " + reg(ins.in[1]);
        inner += ")";
        const std::string other = ins.arity > ins.split ? reg(ins.in[static_cast<std::size_t>(ins.split)]) : inner;
        std::string args = ins.pos == 1 ? other + ", " + inner : inner + ", " + other;
        if (ins.second_arity == 1) args = inner;
        s += std::string(ins.second) + "(" + args + ")\n";
        continue;
      }
      s += std::string(ins.name) + "(";
      for (int j = 0; j < ins.arity; ++j) s += (j ? ", " : "") + reg(ins.in[static_cast<std::size_t>(j)]);
      s += ")\n";
    }
    return s;
  }

  /// Fixes the outputs (per output, the registers of its elements in row-major order), drops
  /// the instructions they do not need and assigns lane buffers.
  void finish(std::vector<std::vector<int>> outputs) {
    outputs_ = std::move(outputs);
    // Liveness, backwards from the outputs.
    std::vector<char> needed(regs_.size(), 0);
    for (const auto& o : outputs_)
      for (int r : o) needed[static_cast<std::size_t>(r)] = 1;
    std::vector<char> runs(code_.size(), 0);
    for (std::size_t i = code_.size(); i-- > 0;) {
      const instruction& ins = code_[i];
      if (!needed[static_cast<std::size_t>(ins.out)]) continue;
      runs[i] = 1;
      for (int j = 0; j < ins.arity; ++j) needed[static_cast<std::size_t>(ins.in[static_cast<std::size_t>(j)])] = 1;
    }
    std::vector<instruction> code = pair_up(code_, runs);
    // The last instruction reading each register; outputs and constants live to the end.
    constexpr int forever = 1 << 30;
    std::vector<int> last(regs_.size(), -1);
    live_.clear();
    for (std::size_t i = 0; i < code.size(); ++i) {
      if (!runs[i]) continue;
      const int at = static_cast<int>(live_.size());
      live_.push_back(code[i]);
      for (int j = 0; j < code[i].arity; ++j)
        last[static_cast<std::size_t>(code[i].in[static_cast<std::size_t>(j)])] = at;
    }
    for (const auto& o : outputs_)
      for (int r : o) last[static_cast<std::size_t>(r)] = forever;
    // Buffers: constants and inputs first (loaded before the instructions run), then each
    // instruction's result takes a buffer freed by a register that died before it.
    buffer_of_.assign(regs_.size(), -1);
    std::vector<int> free;
    std::vector<std::vector<int>> dies_at(live_.size());
    int count = 0;
    auto take = [&] {
      if (free.empty()) return count++;
      const int b = free.back();
      free.pop_back();
      return b;
    };
    loads_.clear();
    constant_buffers_.clear();
    for (std::size_t r = 0; r < regs_.size(); ++r) {
      if (!needed[r] || regs_[r].k == kind::computed) continue;
      const int b = count++;
      buffer_of_[r] = b;
      if (regs_[r].k == kind::constant) constant_buffers_.push_back({b, regs_[r].value});
      else loads_.push_back({b, regs_[r].arg, regs_[r].element});
      if (regs_[r].k == kind::input && last[r] >= 0 && last[r] != forever)
        dies_at[static_cast<std::size_t>(last[r])].push_back(b);
    }
    for (std::size_t i = 0; i < live_.size(); ++i) {
      instruction& ins = live_[i];
      const int b = take();
      buffer_of_[static_cast<std::size_t>(ins.out)] = b;
      const int l = last[static_cast<std::size_t>(ins.out)];
      if (l == -1) free.push_back(b);  // read by nothing (kept only as a shared result)
      else if (l != forever) dies_at[static_cast<std::size_t>(l)].push_back(b);
      for (int d : dies_at[i]) free.push_back(d);
    }
    buffers_ = static_cast<std::size_t>(count);
    finished_ = true;
  }

  /// Runs the program for examples [0, batch): inputs[a] holds argument a as [batch, numel[a]]
  /// (row-major), outputs[o] receives output o as [batch, outputs[o].size()].
  void run(const std::vector<const double*>& inputs, const std::vector<std::int64_t>& numel, std::int64_t batch,
           const std::vector<double*>& outputs) const {
    if (!finished_) throw error("fusion: program::run before finish");
    constexpr std::size_t K = block_lanes;
    // Buffers a cache line more than a block apart, so that neighbours do not share their
    // address modulo 4 KiB (a guard against 4K aliasing; no change measured on this host).
    constexpr std::size_t pitch = K + 8;
    std::vector<double> store(buffers_ * pitch + 8);
    double* base = store.data();
    while (reinterpret_cast<std::uintptr_t>(base) % 64 != 0) ++base;  // whole packets per buffer
    auto buf = [&](int b) { return base + static_cast<std::size_t>(b) * pitch; };
    for (const auto& [b, v] : constant_buffers_) std::fill_n(buf(b), K, v);
    // Each instruction's kernel and buffers, fixed for the whole run.
    struct step {
      lane_kernel run;
      const void* op;
      double* out;
      std::array<const double*, 3> in;
    };
    std::vector<step> steps;
    for (const instruction& ins : live_) {
      step& st = steps.emplace_back(step{ins.run, ins.op, buf(buffer_of_[static_cast<std::size_t>(ins.out)]), {}});
      for (int j = 0; j < ins.arity; ++j)
        st.in[static_cast<std::size_t>(j)] =
            buf(buffer_of_[static_cast<std::size_t>(ins.in[static_cast<std::size_t>(j)])]);
    }
    // Per argument, the buffers its elements load into; per output, the buffers it stores from.
    std::vector<std::vector<std::pair<double*, std::int64_t>>> loads(inputs.size());
    for (const auto& [b, arg, element] : loads_) loads[static_cast<std::size_t>(arg)].push_back({buf(b), element});
    std::vector<std::vector<const double*>> stores(outputs_.size());
    for (std::size_t o = 0; o < outputs_.size(); ++o)
      for (int r : outputs_[o]) stores[o].push_back(buf(buffer_of_[static_cast<std::size_t>(r)]));
    std::int64_t out_numbers = 0, in_numbers = 0;
    for (const auto& o : outputs_) out_numbers += static_cast<std::int64_t>(o.size()) * batch;
    for (std::size_t a = 0; a < loads.size(); ++a) in_numbers += loads[a].empty() ? 0 : numel[a] * batch;
    // Data past the L2 cache: the next block's lines are fetched while this one computes (in L2
    // already, fetching them only costs: 10% of Lennard-Jones at 4096 examples).
    const bool fetch_ahead = (in_numbers + out_numbers) * 8 >= (std::int64_t{1} << 20);
    line_walk ahead;
    for (std::int64_t start = 0; start < batch; start += static_cast<std::int64_t>(K)) {
      const auto n = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(K), batch - start));
      for (std::size_t a = 0; a < loads.size(); ++a) {
        if (loads[a].empty()) continue;
        const std::int64_t stride = numel[a];
        const double* src = inputs[a] + start * stride;
        if (!rows_to_lanes(src, stride, loads[a], n))
          for (std::size_t k = 0; k < n; ++k, src += stride)
            for (const auto& [dst, element] : loads[a]) dst[k] = src[element];
        for (const auto& [dst, element] : loads[a])
          std::fill(dst + n, dst + K, 1.0);  // a short last block: lanes every op is defined at
      }
      // The next block's rows, fetched a few cache lines per instruction so that memory works
      // while this block computes (in one burst they stall; unaided, memory idles during the
      // instructions and the loads and stores of a block wait on it).
      ahead.clear();
      if (const std::int64_t next = start + static_cast<std::int64_t>(K); fetch_ahead && next < batch) {
        const std::int64_t m = std::min<std::int64_t>(static_cast<std::int64_t>(K), batch - next);
        for (std::size_t a = 0; a < loads.size(); ++a)
          if (!loads[a].empty()) ahead.add(inputs[a] + next * numel[a], m * numel[a]);
        for (std::size_t o = 0; o < stores.size(); ++o)
          ahead.add(outputs[o] + next * static_cast<std::int64_t>(stores[o].size()),
                    m * static_cast<std::int64_t>(stores[o].size()));
      }
      const std::size_t per = steps.empty() ? 0 : (ahead.lines() + steps.size() - 1) / steps.size();
      for (const step& st : steps) {
        ahead.fetch(per);
        st.run(st.op, st.out, st.in.data());
      }
      for (std::size_t o = 0; o < stores.size(); ++o) {
        const auto& from = stores[o];
        const auto width = static_cast<std::int64_t>(from.size());
        double* dst = outputs[o] + start * width;
        if (!lanes_to_rows(from, dst, n))
          for (std::size_t k = 0; k < n; ++k, dst += width)
            for (std::int64_t e = 0; e < width; ++e) dst[e] = from[static_cast<std::size_t>(e)][k];
      }
    }
  }

 private:
  /// Memory ranges to prefetch, a few cache lines at a time.
  class line_walk {
   public:
    void clear() {
      ranges_.clear();
      at_ = 0;
      lines_ = 0;
    }
    /// The cache lines of n numbers from p.
    void add(const double* p, std::int64_t n) {
      const char* c = reinterpret_cast<const char*>(p);
      const char* end = reinterpret_cast<const char*>(p + n);
      c -= reinterpret_cast<std::uintptr_t>(c) % 64;
      if (c >= end) return;
      if (ranges_.empty()) next_ = c;
      ranges_.push_back({c, end});
      lines_ += static_cast<std::size_t>(end - c + 63) / 64;
    }
    std::size_t lines() const { return lines_; }
    /// Prefetches the next `count` lines (fewer at the end).
    void fetch(std::size_t count) {
      for (; count > 0 && at_ < ranges_.size(); --count) {
        __builtin_prefetch(next_, 0);
        next_ += 64;
        if (next_ >= ranges_[at_].second && ++at_ < ranges_.size()) next_ = ranges_[at_].first;
      }
    }

   private:
    std::vector<std::pair<const char*, const char*>> ranges_;
    std::size_t at_ = 0, lines_ = 0;
    const char* next_ = nullptr;
  };

  /// Rows of up to 8 numbers, all loaded, to lanes (and back) with the row width known to the
  /// compiler: the common case, shuffled in packets (kernels/rows_lanes.hpp). False: not that case.
  static bool rows_to_lanes(const double* src, std::int64_t stride,
                            const std::vector<std::pair<double*, std::int64_t>>& to, std::size_t n) {
    if (static_cast<std::int64_t>(to.size()) != stride || stride > 8) return false;
    for (std::size_t e = 0; e < to.size(); ++e)
      if (to[e].second != static_cast<std::int64_t>(e)) return false;
    std::array<double*, 8> dst{};
    for (std::size_t e = 0; e < to.size(); ++e) dst[e] = to[e].first;
    return with_width(stride, [&]<int W>() { kernels::rows_to_lanes<W>(src, dst.data(), n); });
  }
  static bool lanes_to_rows(const std::vector<const double*>& from, double* dst, std::size_t n) {
    if (from.size() > 8) return false;
    return with_width(static_cast<std::int64_t>(from.size()),
                      [&]<int W>() { kernels::lanes_to_rows<W>(from.data(), dst, n); });
  }
  /// body.template operator()<W>() for W = w in [1, 8].
  template <class Body>
  static bool with_width(std::int64_t w, Body&& body) {
    return [&]<int... W>(std::integer_sequence<int, W...>) {
      return ((w == W + 1 ? (body.template operator()<W + 1>(), true) : false) || ...);
    }(std::make_integer_sequence<int, 8>{});
  }

  enum class kind : unsigned char { input, constant, computed };
  struct reg {
    kind k;
    int arg;               // input
    std::int64_t element;  // input
    double value;          // constant
    int def;               // computed: its instruction
  };
  struct instruction {
    lane_kernel run;
    const void* op;
    int out;
    std::array<int, 3> in;
    int arity;
    const char* name;
    arith a = arith::none;         // a two-operand arithmetic instruction
    const char* second = nullptr;  // a pair: the second operation's name
    int pos = 0;                   // a pair: which operand of the second the first gives
    int split = 0;                 // a pair: how many operands the first takes
    int second_arity = 0;          // a pair: how many operands the second takes
  };
  struct load {
    int buffer, arg;
    std::int64_t element;
  };
  using key = std::tuple<std::uintptr_t, int, int, int>;

  static std::uint64_t bits(double v) {
    std::uint64_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  }

  /// The operand register that A(in...) equals bit for bit, or -1.
  template <arith A>
  int identity(const int* in) const {
    auto is = [&](int r, double v) { return is_constant(r) && bits(constant_value(r)) == bits(v); };
    if constexpr (A == arith::mul) {
      if (is(in[1], 1.0)) return in[0];
      if (is(in[0], 1.0)) return in[1];
    } else if constexpr (A == arith::div) {
      if (is(in[1], 1.0)) return in[0];
    } else if constexpr (A == arith::add) {
      if (is(in[1], -0.0)) return in[0];
      if (is(in[0], -0.0)) return in[1];
    } else if constexpr (A == arith::sub) {
      if (is(in[1], 0.0)) return in[0];
    } else if constexpr (A == arith::neg) {
      const reg& g = regs_[static_cast<std::size_t>(in[0])];
      if (g.k == kind::computed && code_[static_cast<std::size_t>(g.def)].a == arith::neg)
        return code_[static_cast<std::size_t>(g.def)].in[0];
    }
    return -1;
  }

  /// An instruction on constants: its value now, by the same kernel on a packet of lanes.
  int fold(const instruction& ins) {
    alignas(64) double lanes_in[3][block_lanes];
    alignas(64) double lanes_out[block_lanes];
    std::array<const double*, 3> in{};
    for (int j = 0; j < ins.arity; ++j) {
      std::fill_n(lanes_in[j], block_lanes, constant_value(ins.in[static_cast<std::size_t>(j)]));
      in[static_cast<std::size_t>(j)] = lanes_in[j];
    }
    ins.run(ins.op, lanes_out, in.data());
    return constant(lanes_out[0]);
  }

  /// Pairs of arithmetic instructions: a producer whose result only one later arithmetic
  /// instruction reads (and no output) moves into that one. Its operands are registers made
  /// before it, so they exist at the consumer too; liveness is computed afterwards.
  std::vector<instruction> pair_up(std::vector<instruction> code, std::vector<char>& runs) const {
    std::vector<int> uses(regs_.size(), 0);
    for (std::size_t i = 0; i < code.size(); ++i)
      if (runs[i])
        for (int j = 0; j < code[i].arity; ++j)
          ++uses[static_cast<std::size_t>(code[i].in[static_cast<std::size_t>(j)])];
    for (const auto& o : outputs_)
      for (int r : o) uses[static_cast<std::size_t>(r)] += 2;
    for (std::size_t j = 0; j < code.size(); ++j) {
      instruction& c = code[j];
      if (!runs[j] || c.a == arith::none) continue;
      const int second_arity = arity_of(c.a);
      const bool square = second_arity == 2 && c.in[0] == c.in[1];  // second(t, t): t is read twice, here only
      for (int pos = 0; pos < second_arity; ++pos) {
        const int r = c.in[static_cast<std::size_t>(pos)];
        const reg& g = regs_[static_cast<std::size_t>(r)];
        if (g.k != kind::computed || uses[static_cast<std::size_t>(r)] != (square ? 2 : 1)) continue;
        const auto i = static_cast<std::size_t>(g.def);
        const instruction& p = code[i];
        if (!runs[i] || p.a == arith::none || p.second) continue;
        const int at = square ? 2 : pos;
        instruction pair{pair_kernel(p.a, c.a, at),
                         nullptr,
                         c.out,
                         {p.in[0], -1, -1},
                         1,
                         p.name,
                         arith::none,
                         c.name,
                         at,
                         arity_of(p.a),
                         second_arity};
        if (pair.split == 2) pair.in[static_cast<std::size_t>(pair.arity++)] = p.in[1];
        if (second_arity == 2 && !square)
          pair.in[static_cast<std::size_t>(pair.arity++)] = c.in[static_cast<std::size_t>(1 - pos)];
        c = pair;
        runs[i] = 0;
        break;
      }
    }
    return code;
  }

  std::vector<reg> regs_;
  std::vector<instruction> code_;
  std::vector<std::shared_ptr<const void>> ops_;
  std::map<std::uint64_t, int> constants_;
  std::map<key, int> seen_;
  std::vector<std::vector<int>> outputs_;
  // After finish.
  std::vector<instruction> live_;
  std::vector<int> buffer_of_;
  std::vector<load> loads_;
  std::vector<std::pair<int, double>> constant_buffers_;
  std::size_t buffers_ = 0;
  bool finished_ = false;
};

}  // namespace tower::fusion

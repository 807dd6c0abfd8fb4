#pragma once
// The runtime path's fused vmap: trace f on a few examples, then run the traced per-example
// program on lanes of examples (runtime/trace.hpp, fused_program.hpp).
//
// A type-erased f has no per-example form the compiler can see, and its batching rules write a
// batch-sized tensor per op, out of cache for a large batch. Here vmap runs f once, at its own
// level, on the first examples, with a trace_recorder on its stack entry; every op that reaches the vmap's interpreter (f's own ops,
// and those that grad's backward sweep or an inner transform lowers to it) becomes scalar
// instructions. When all of them could, the program runs over the whole batch, 256 examples at
// a time, with every intermediate in L1; otherwise vmap runs the batching rules as usual.
//
//   std::function<tw::dyn::value(tw::dyn::value)> energy = [](tw::dyn::value r) { return 1.0 / tw::sum(r * r); };
//   tw::dyn::value F = tw::vmap(tw::grad(energy))(R);             // R: [B, 3]; traced once, fused
//   bool fused = tw::dyn::last_fusion().fused;                    // .refusal says why not
//   tw::dyn::value G = tw::vmap(tw::grad(energy), tw::strategy::batched)(R);  // batching rules
//
// Used for a vmap with no live transform below it, over plain arguments, with randomness=error
// and no chunk_size, and strategy::automatic or strategy::fused (strategy::batched and
// strategy::packets run the batching rules). As with jax.jit, f runs once, for the trace; when
// the trace cannot be fused (or raises), f runs again by batching rules.
// Results equal the batching rules' up to the order of a sum's additions.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "dsl/layout.hpp"
#include "dsl/shape_ops.hpp"
#include "tower/runtime/dyn_value.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/tensor/lent_rows.hpp"
#include "tower/runtime/trace.hpp"
#include "tower/tensor/batch_size.hpp"

namespace tower::dyn {

namespace detail {
/// Examples f runs on while it is traced, and the smallest batch worth tracing.
inline constexpr std::int64_t trace_examples = 8;
inline constexpr std::int64_t min_fused_batch = 64;  // (the refusal below says 64)

/// The batch size that the batched arguments agree on; tower::error when they disagree or none
/// is batched.
template <std::size_t N>
std::int64_t batch_size_of(const std::array<std::optional<std::int64_t>, N>& in_dims,
                           const std::array<value, N>& args) {
  std::int64_t bs = -1;
  tower::detail::batch_origin first;
  for (std::size_t i = 0; i < N; ++i)
    if (in_dims[i]) tower::detail::merge_batch_size(i, *in_dims[i], args[i].shape(), bs, first);
  tower::detail::require_batched(bs);
  return bs;
}

/// x with its batch dim (in_dim, negative from the end) moved to the front. (V is dyn::value; a
/// template so that only callers instantiate movedim, as transforms/runtime/transforms.hpp's unbatch.)
template <class V>
V batch_first(const V& x, std::int64_t in_dim) {
  const std::int64_t d = in_dim < 0 ? in_dim + x.rank() : in_dim;
  return d == 0 ? x : movedim(x, d, 0);
}

/// Where output k takes its batch dim: out_dims[k], or the one entry for all, or 0.
inline std::int64_t out_dim_at(const shape_t& out_dims, std::size_t k) {
  return out_dims.empty() ? 0 : out_dims.size() == 1 ? out_dims[0] : out_dims.at(k);
}
}  // namespace detail

/// What the last runtime vmap that could fuse did, on this thread: for tests and tuning.
struct fusion_report {
  bool fused = false;
  std::string refusal;                             // why not, when not fused
  std::size_t traced_instructions = 0;             // scalar instructions the trace made
  std::size_t instructions = 0;                    // those that run per block (after dead-code removal)
  std::size_t buffers = 0;                         // lane buffers of a block
  std::shared_ptr<const fusion::program> program;  // what ran, when fused

  /// The instructions, one per line (fusion::program::listing); built only when asked for.
  std::string listing() const { return program ? program->listing() : std::string(); }
};
/// What this thread's last runtime vmap did: `.fused`, and `.refusal` naming the op that kept
/// it on batching rules.
inline fusion_report& last_fusion() {
  thread_local fusion_report r;
  return r;
}

template <class R>
inline constexpr bool is_value_or_tuple_of_values_v = std::is_same_v<R, value>;
template <class... V>
inline constexpr bool is_value_or_tuple_of_values_v<std::tuple<V...>> = (std::is_same_v<V, value> && ...);

template <class R, class Call, std::size_t N>
std::optional<R> run_vmap_fused_program(const Call& call, const std::array<std::optional<std::int64_t>, N>& in_dims,
                                        const shape_t& out_dims, const std::array<value, N>& args,
                                        randomness_kind randomness);

/// The result of vmap(call) by the fused program, or nullopt when f has an op with no fused form
/// (or the batch is too small to be worth a trace, or f returns a pytree other than a value or
/// a tuple of values). R: the type run_vmap_once returns.
template <class R, class Call, std::size_t N>
std::optional<R> run_vmap_fused(const Call& call, const std::array<std::optional<std::int64_t>, N>& in_dims,
                                const shape_t& out_dims, const std::array<value, N>& args, randomness_kind randomness) {
  if constexpr (is_value_or_tuple_of_values_v<R>) {
    return run_vmap_fused_program<R>(call, in_dims, out_dims, args, randomness);
  } else {
    last_fusion().fused = false;
    last_fusion().refusal.assign("f returns a pytree other than a tensor or a std::tuple of tensors");
    return std::nullopt;
  }
}

template <class R, class Call, std::size_t N>
std::optional<R> run_vmap_fused_program(const Call& call, const std::array<std::optional<std::int64_t>, N>& in_dims,
                                        const shape_t& out_dims, const std::array<value, N>& args,
                                        randomness_kind randomness) {
  // The report is reset in place: its strings keep their storage, so that a vmap that does not
  // fuse (batch size 1 in a loop) allocates nothing here.
  fusion_report& report = last_fusion();
  report.fused = false;
  report.traced_instructions = report.instructions = report.buffers = 0;
  report.program.reset();
  std::string& refusal = report.refusal;
  refusal.assign("inside another transform, over wrapped values, or with random ops");
  if (top_live_level() != 0 || randomness != randomness_kind::error) return std::nullopt;
  for (const value& a : args)
    if (!a.is_plain()) return std::nullopt;
  const std::int64_t bs = detail::batch_size_of(in_dims, args);
  if (bs < detail::min_fused_batch) {
    refusal.assign("a batch of fewer than 64 examples");
    return std::nullopt;
  }
  // Batched arguments as [B, ...] tensors.
  std::array<value, N> moved;
  std::array<std::optional<tensor<double>>, N> scratch;
  std::array<const tensor<double>*, N> batched{};
  std::vector<const double*> inputs(N, nullptr);
  std::vector<std::int64_t> numel(N, 0);
  for (std::size_t i = 0; i < N; ++i) {
    if (!in_dims[i]) continue;
    moved[i] = detail::batch_first(args[i], *in_dims[i]);
    batched[i] = &moved[i].plain_ref(scratch[i]);  // no copy of the batch
    inputs[i] = batched[i]->data();
    numel[i] = batched[i]->numel() / bs;
  }
  // The trace: f at a vmap level of trace_examples examples, recorded.
  std::vector<shape_t> out_shapes;
  std::optional<runtime::trace_recorder> rec;
  {
    const int level = top_live_level() + 1;
    interpreter_scope scope(transform_type::vmap, level);
    scope.entry().randomness = randomness;
    scope.entry().batch_size = detail::trace_examples;
    const std::uint64_t serial = scope.entry().serial;
    rec.emplace(level, serial);
    scope.entry().state = &*rec;
    std::array<value, N> wrapped;
    for (std::size_t i = 0; i < N; ++i) {
      if (!in_dims[i]) {
        wrapped[i] = args[i];
        continue;
      }
      wrapped[i] =
          wrap(transform_type::vmap, level, serial, value(kernels::narrow(*batched[i], 0, 0, detail::trace_examples)));
      rec->add_input(wrapped[i], static_cast<int>(i));
    }
    // An error in the trace would name the trace's physical shapes: the batching rules on the
    // whole batch raise it again, as they would have without a trace.
    using Out = decltype(call(wrapped));
    std::optional<Out> traced;
    try {
      traced.emplace(call(wrapped));
    } catch (const runtime::trace_stopped&) {
      refusal = rec->why();
      return std::nullopt;
    } catch (const error& e) {
      refusal = std::string("the trace raised: ") + e.what();
      return std::nullopt;
    }
    scope.entry().state = nullptr;
    const Out& r = *traced;
    std::vector<std::vector<int>> outs;
    auto output = [&](const value& v) {
      const std::vector<int>* regs = rec->registers(v);
      if (!regs) return rec->stop("an output is not batched by the traced vmap");
      outs.push_back(*regs);
      out_shapes.push_back(v.shape());
    };
    if constexpr (std::is_same_v<Out, value>) output(r);
    else std::apply([&](const auto&... v) { (output(v), ...); }, r);
    if (!rec->ok()) {
      refusal = rec->why();
      return std::nullopt;
    }
    rec->program().finish(std::move(outs));
    report.program = std::make_shared<const fusion::program>(std::move(rec->program()));
    report.traced_instructions = report.program->instruction_count();
    report.instructions = report.program->live_instruction_count();
    report.buffers = report.program->buffer_count();
  }
  // The program over the whole batch.
  std::vector<tensor<double>> results;
  std::vector<double*> dst;
  for (const shape_t& s : out_shapes) {
    shape_t full = s;
    full.insert(full.begin(), bs);
    double* p = nullptr;
    const std::int64_t n = numel_of(full);
    results.push_back(
        tower::detail::new_output<double>(std::move(full), n, p));  // (tw::parallel lends rows: lent_rows.hpp)
    dst.push_back(p);
  }
  report.program->run(inputs, numel, bs, dst);
  refusal.clear();
  report.fused = true;
  auto place = [&](auto k) {  // (generic: movedim is instantiated where this runs)
    using V = std::conditional_t<sizeof(k) != 0, value, void>;
    const std::int64_t d = tower::detail::out_dim_of(detail::out_dim_at(out_dims, k), results[k].shape());
    return d == 0 ? V(std::move(results[k])) : movedim(V(std::move(results[k])), 0, d);
  };
  if constexpr (std::is_same_v<R, value>) {
    return place(0);
  } else {
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return R{place(K)...};
    }(std::make_index_sequence<std::tuple_size_v<R>>{});
  }
}

}  // namespace tower::dyn

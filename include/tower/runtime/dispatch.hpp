#pragma once
// The runtime path: interpreters over the thread-local stack, each op's functorch_table, and
// dispatch_functorch, as in functorch.
//
// dispatch_functorch(op, args) peeks the top interpreter. If no argument is wrapped at its level
// it lowers (temporarily pops itself and re-dispatches); otherwise it looks up the op's rule for
// its key in the op's functorch_table and runs it. The table's entries are the op's own generic
// rules (dsl/) instantiated with dyn::value: one rule, two paths.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tower/runtime/dyn_value.hpp"
#include "tower/core/grad_mode.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/core/needs_input_grad.hpp"
#include "tower/core/op_traits.hpp"
#include "tower/memory/pool_allocator.hpp"
#include "tower/runtime/trace.hpp"
#include "tower/core/zero_tangent.hpp"
#include "tower/tensor/batch_size.hpp"

namespace tower::runtime {

using dyn::grad_node;
using dyn::value;

/// An op's arguments as dispatch sees them: references, so that passing them down the stack
/// copies no value (a copy is a reference-count update).
template <std::size_t N>
using arg_refs = std::array<const value*, N>;

/// References to the values of an array.
template <std::size_t N>
arg_refs<N> refs_of(const std::array<value, N>& a) {
  return
      [&]<std::size_t... I>(std::index_sequence<I...>) { return arg_refs<N>{&a[I]...}; }(std::make_index_sequence<N>{});
}

template <class Op, std::size_t N>
value dispatch_functorch(const Op& op, const arg_refs<N>& args);

/// What every runtime interpreter shares: its stack entry (checked against its key), level() and
/// lower (functorch's Interpreter: sendToNextInterpreter pops itself and re-dispatches). Each
/// interpreter adds process (the transform's rule for an op, which lowers and lifts) and lift (a
/// result as a value at its level); vmap's adds batch_size(). grad's and jvp's lowering under a
/// mode that was off outside is the entry's prev_grad_mode / prev_fwd_grad_mode, applied where
/// the transform is entered (core/grad_mode.hpp).
template <transform_type Key>
class interpreter_base {
 public:
  explicit interpreter_base(const interpreter_entry& e) : e_(e) {
    if (e.key != Key) [[unlikely]]
      wrong_key(e.key);
  }
  int level() const { return e_.level; }

  template <class Op, std::size_t N>
  static value lower(const Op& op, const std::array<value, N>& args) {
    temporarily_pop_interpreter_stack pop;
    return dispatch_functorch(op, refs_of(args));
  }

 protected:
  const interpreter_entry& e_;

 private:
  [[noreturn, gnu::cold, gnu::noinline]] static void wrong_key(transform_type key) {
    throw error("expected a " + to_string(Key) + " interpreter, got " + to_string(key));
  }
};

/// A stack entry seen as a vmap interpreter (functorch's VmapInterpreterPtr).
class vmap_interpreter : public interpreter_base<transform_type::vmap> {
 public:
  using interpreter_base::interpreter_base;
  std::int64_t batch_size() const { return e_.batch_size; }
  /// functorch's lift: phys (batch first) as a value batched at this level.
  value lift(value phys) const { return dyn::wrap(transform_type::vmap, level(), e_.serial, std::move(phys)); }

  template <class Op, std::size_t N>
  value process(const Op& op, const arg_refs<N>& args) const {
    try {
      return process_here(op, args);
    } catch (const error&) {
      std::vector<shape_t> shapes;  // the shapes f's values have, not the kernel's
      for (const value* a : args) shapes.push_back(a->shape());
      tower::detail::rethrow_per_example(shapes);
    }
  }

 private:
  template <class Op, std::size_t N>
  value process_here(const Op& op, const arg_refs<N>& args) const {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (is_elementwise_v<Op> && !requires { op.batch_with_entry(e_, batch_size(), arg<I>(args)...); }) {
        // One-element physical values (vmap at batch size 1 of scalar code): the kernel on
        // doubles, as the batching rule would run it, without the rule's layers. The result has
        // the broadcast rank: one more than the largest logical rank.
        if ((physical(*args[I]).is_inline() && ...)) {
          int r = 0;
          ((r = rank_with_batch(*args[I]) > r ? rank_with_batch(*args[I]) : r), ...);
          return lift(value::one_element(static_cast<double>(op.base(physical(*args[I]).scalar()...)), r));
        }
      }
      value phys = [&] {
        if constexpr (requires { op.batch_with_entry(e_, batch_size(), arg<I>(args)...); })
          return value(op.batch_with_entry(e_, batch_size(), arg<I>(args)...));
        else return value(tower::detail::batch_rule_or_fallback(op, batch_size(), arg<I>(args)...));
      }();
      value out = lift(std::move(phys));
      if (e_.state) [[unlikely]]  // a vmap being traced (transforms/runtime/fusion.hpp)
        static_cast<trace_recorder*>(e_.state)->record(op, args, out);
      return out;
    }(std::make_index_sequence<N>{});
  }

  /// x's physical value at this level: its inner value if batched here, else x.
  const value& physical(const value& x) const { return x.level() == level() ? x.get().inner : x; }
  /// The rank x has with a batch dim: its physical rank if batched here, else one more.
  int rank_with_batch(const value& x) const {
    return x.level() == level() ? x.get().inner.inline_rank() : x.inline_rank() + 1;
  }

  template <std::size_t I, std::size_t N>
  bval<value, bool> arg(const arg_refs<N>& a) const {
    const value& x = *a[I];
    const bool here = x.level() == level();
    return {here ? x.get().inner : x, here};
  }
};

/// A stack entry seen as a grad interpreter (functorch's GradInterpreterPtr).
class grad_interpreter : public interpreter_base<transform_type::grad> {
 public:
  using interpreter_base::interpreter_base;
  /// functorch's lift: x as a value at this level, with its node on the graph (null: a constant).
  value lift(value x, std::shared_ptr<grad_node> node = nullptr) const {
    return dyn::wrap(transform_type::grad, level(), e_.serial, std::move(x), std::move(node));
  }

  template <class Op, std::size_t N>
  value process(const Op& op, const arg_refs<N>& args) const {
    std::array<value, N> primals;
    std::array<std::shared_ptr<grad_node>, N> parents;
    bool tracked = false;
    for (std::size_t i = 0; i < N; ++i) {
      const value& x = *args[i];
      if (x.level() == level()) {  // the primal at this level and its node (functorch: unwrap)
        primals[i] = x.get().inner;
        parents[i] = x.get().node;
        tracked = tracked || parents[i];
      } else {
        primals[i] = x;
      }
    }
    value out = lower(op, primals);
    std::shared_ptr<grad_node> node;
    if constexpr (is_differentiable_v<Op>) {
      if (tracked && grad_enabled_at(level()))
        node = std::allocate_shared<op_node<Op, N>>(tower::detail::pool_allocator<op_node<Op, N>>(), op, out,
                                                    std::move(primals), std::move(parents));
    }
    return lift(std::move(out), std::move(node));
  }

 private:
  /// The node grad records for one op: its inputs' nodes and what its VJP rule needs.
  template <class Op, std::size_t N>
  struct op_node final : grad_node {
    Op op;
    value out;
    std::array<value, N> primals;
    std::array<std::shared_ptr<grad_node>, N> parents;
    op_node(const Op& o, value y, std::array<value, N> x, std::array<std::shared_ptr<grad_node>, N> p)
        : op(o), out(std::move(y)), primals(std::move(x)), parents(std::move(p)) {
      parents_ = parents.data();
      parent_count_ = N;
    }
    bool has_vjp() const override { return true; }
    void vjp(const value& g, value* grads) const override {
      // Untracked inputs (constants) get no gradient: the rule may skip them (needs_input_grad.hpp).
      std::uint32_t needed = 0;
      for (std::size_t i = 0; i < N; ++i)
        if (parents[i]) needed |= std::uint32_t{1} << i;
      tower::detail::needed_inputs_scope scope(needed);
      auto gs = std::apply([&](const auto&... x) { return op.vjp(g, out, x...); }, primals);
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((grads[I] = value(std::move(std::get<I>(gs)))), ...);
      }(std::make_index_sequence<N>{});
    }
  };
};

/// A stack entry seen as a jvp interpreter (forward mode).
class jvp_interpreter : public interpreter_base<transform_type::jvp> {
 public:
  using interpreter_base::interpreter_base;
  /// functorch's lift: (primal, tangent) as a value at this level.
  value lift(value primal, value tangent) const {
    return dyn::wrap_dual(level(), e_.serial, std::move(primal), std::move(tangent));
  }

  template <class Op, std::size_t N>
  value process(const Op& op, const arg_refs<N>& args) const {
    std::array<value, N> primals, tangents;
    bool tracked = false;
    for (std::size_t i = 0; i < N; ++i) {
      const bool here = args[i]->level() == level();
      primals[i] = here ? args[i]->get().inner : *args[i];
      tracked = tracked || here;
    }
    const int level = this->level();
    value out = lower(op, primals);
    value t;
    if constexpr (is_differentiable_v<Op>) {
      if (tracked && fwd_grad_enabled_at(level)) {
        constexpr bool symbolic_zeros = N == 2 && tower::detail::takes_zero_tangents_v<Op>;
        for (std::size_t i = 0; i < N; ++i)
          if (args[i]->level() == level) tangents[i] = args[i]->get().tangent;
          else if (!symbolic_zeros) tangents[i] = tower::detail::zeros_like_value(primals[i]);
        if constexpr (symbolic_zeros) {
          // The static path's symbolic zero (zero_tangent.hpp) for the argument without a tangent.
          using tower::detail::zero_tangent;
          const bool t0 = args[0]->level() == level, t1 = args[1]->level() == level;
          t = t0 && t1 ? value(op.jvp(out, primals[0], primals[1], tangents[0], tangents[1]))
              : t0     ? value(op.jvp(out, primals[0], primals[1], tangents[0], zero_tangent{}))
                       : value(op.jvp(out, primals[0], primals[1], zero_tangent{}, tangents[1]));
        } else {
          t = [&]<std::size_t... I>(std::index_sequence<I...>) {
            return value(op.jvp(out, primals[I]..., tangents[I]...));
          }(std::make_index_sequence<N>{});
        }
        return lift(std::move(out), std::move(t));
      }
    }
    t = tower::detail::zeros_like_value(out);
    return lift(std::move(out), std::move(t));
  }
};

namespace detail {
/// A static-path value seen by the runtime path (bridge.hpp).
template <class W>
value static_to_value(const W& w);

/// Any operand as a dyn::value.
template <class X0>
value to_value(X0&& x) {  // a result tensor is moved in, not copied
  using X = std::remove_cvref_t<X0>;
  if constexpr (std::is_same_v<X, value>) return std::forward<X0>(x);
  else if constexpr (std::is_arithmetic_v<X>) return value(static_cast<double>(x));
  else if constexpr (std::is_same_v<X, tensor<double>>) return value(std::forward<X0>(x));
  else if constexpr (is_tensor_v<X>)
    static_assert(!is_tensor_v<X>, "tower: the runtime path works on tensor<double> only");
  else return static_to_value(x);
}

template <class Op, std::size_t N>
value run_base(const Op& op, const arg_refs<N>& args) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    if constexpr (is_elementwise_v<Op>) {
      // One-element operands (scalars, batch-size-1 values): the kernel on doubles, and the
      // result has the broadcast shape, ones of the largest rank. No tensor is built.
      if ((args[I]->is_inline() && ...)) {
        int r = 0;  // (a fold, not std::max of a list: GCC called that out of line here)
        ((r = args[I]->inline_rank() > r ? args[I]->inline_rank() : r), ...);
        return value::one_element(static_cast<double>(op.base(args[I]->scalar()...)), r);
      }
    }
    if constexpr (has_base_kernel_v<Op, decltype((void)I, tensor<double>{})...>) {
      [[maybe_unused]] std::array<std::optional<tensor<double>>, N> made;  // inline values as tensors
      return to_value(op.base(args[I]->plain_ref(made[I])...));
    } else {
      throw error(std::string("op '") + Op::name + "' has no base kernel for tensors");
      return value();
    }
  }(std::make_index_sequence<N>{});
}
}  // namespace detail

/// One op's kernels keyed by transform_type (functorch's functorch_table): a null entry means
/// the op has no rule for that transform.
template <class Op, std::size_t N>
struct functorch_table {
  using kernel = value (*)(const Op&, const interpreter_entry&, const arg_refs<N>&);
  std::array<kernel, transform_type_count> process{};

  static constexpr functorch_table make() {
    return [] {
      functorch_table r;
      // Every op runs under vmap: its batching rule, or the per-example fallback.
      r.process[static_cast<int>(transform_type::vmap)] = [](const Op& op, const interpreter_entry& e,
                                                             const arg_refs<N>& a) {
        return vmap_interpreter(e).process(op, a);
      };
      if constexpr (!is_differentiable_v<Op> || []<std::size_t... I>(std::index_sequence<I...>) {
                      return has_vjp_rule_v<Op, value, decltype((void)I, std::declval<value>())...>;
                    }(std::make_index_sequence<N>{}))
        r.process[static_cast<int>(transform_type::grad)] = [](const Op& op, const interpreter_entry& e,
                                                               const arg_refs<N>& a) {
          return grad_interpreter(e).process(op, a);
        };
      if constexpr (!is_differentiable_v<Op> || []<std::size_t... I>(std::index_sequence<I...>) {
                      return requires(const Op& op, const value& v) { op.jvp(v, ((void)I, v)..., ((void)I, v)...); };
                    }(std::make_index_sequence<N>{}))
        r.process[static_cast<int>(transform_type::jvp)] = [](const Op& op, const interpreter_entry& e,
                                                              const arg_refs<N>& a) {
          return jvp_interpreter(e).process(op, a);
        };
      return r;
    }();
  }
  /// Built at compile time: no guard on the dispatch path.
  static constexpr const functorch_table& get() { return table; }
  static const functorch_table table;
};

template <class Op, std::size_t N>
constexpr functorch_table<Op, N> functorch_table<Op, N>::table = functorch_table<Op, N>::make();

namespace detail {
/// Raises the error for an op with no rule for the top interpreter's key (kept out of line:
/// the message is built only when it is thrown).
template <class Op>
[[noreturn, gnu::cold, gnu::noinline]] void throw_no_rule(transform_type key) {
  const int k = static_cast<int>(key);
  if (k < 0 || k >= transform_type_count)
    throw error(std::string("op '") + Op::name + "': unknown transform key " + std::to_string(k));
  throw error(std::string("op '") + Op::name + "' has no " +
              (key == transform_type::vmap   ? "batching rule"
               : key == transform_type::grad ? "VJP rule"
                                             : "JVP rule") +
              " for transform '" + to_string(key) + "'");
}

/// Whether the outer wrapper of x belongs to a transform that has returned.
inline bool has_dead_wrapper(const value& x, const std::vector<interpreter_entry*>& stack) {
  if (x.level() == 0) return false;
  const std::uint64_t serial = x.get().serial;
  for (auto it = stack.rbegin(); it != stack.rend(); ++it)
    if ((*it)->serial == serial) return false;
  return true;
}
}  // namespace detail

template <class Op, std::size_t N>
value dispatch_functorch(const Op& op, const arg_refs<N>& args) {
  // Wrappers whose transform has returned are dead: a grad wrapper is a constant (its primal);
  // a batched value has no meaning outside its vmap. (Rare: copy the arguments only then.)
  const auto& stack = interpreter_stack_entries();
  bool wrapped = false;
  for (const value* a : args) {
    wrapped = wrapped || a->level() > 0;
    if (!detail::has_dead_wrapper(*a, stack)) [[likely]]
      continue;
    std::array<value, N> live;
    for (std::size_t i = 0; i < N; ++i) {
      live[i] = *args[i];
      while (detail::has_dead_wrapper(live[i], stack)) {
        if (live[i].get().key == transform_type::vmap)
          throw error(std::string("op '") + Op::name +
                      "': a value batched by a vmap was used after that vmap returned");
        live[i] = value(live[i].get().inner);
      }
    }
    return dispatch_functorch(op, refs_of(live));
  }
  // Plain arguments: no interpreter has anything to do (levels start at 1), so the base kernel
  // runs at once, with no lowering through the live stack.
  if (!wrapped) return detail::run_base(op, args);
  if (stack.empty()) throw error(std::string("op '") + Op::name + "': wrapped value with no live transform");
  const interpreter_entry& top = *stack.back();
  bool here = false;
  for (const value* a : args) here = here || a->level() == top.level;
  if (!here) {
    temporarily_pop_interpreter_stack pop;
    return dispatch_functorch(op, args);
  }
  const auto k = static_cast<std::size_t>(top.key);
  const auto kernel =
      k < static_cast<std::size_t>(transform_type_count) ? functorch_table<Op, N>::get().process[k] : nullptr;
  if (!kernel) detail::throw_no_rule<Op>(top.key);
  return kernel(op, top, args);
}

}  // namespace tower::runtime

namespace tower::detail {
template <class Op, class... A>
dyn::value runtime_call(const Op& op, const A&... a) {
  // dyn::value arguments are passed by reference; others become values here.
  constexpr std::size_t N = sizeof...(A);
  [[maybe_unused]] std::array<dyn::value, N> made;
  const auto ref = [&]<class X>(const X& x, std::size_t i) -> const dyn::value* {
    if constexpr (std::is_same_v<X, dyn::value>) {
      return &x;
    } else {
      made[i] = runtime::detail::to_value(x);
      return &made[i];
    }
  };
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return runtime::dispatch_functorch(op, runtime::arg_refs<N>{ref(a, I)...});
  }(std::index_sequence_for<A...>{});
}
}  // namespace tower::detail

#pragma once
// The static path: the interpreter stack as a type-level list, and dispatch_functorch.
//
// static_stack_t<Args...> is a Boost.Hana tuple of interpreter types, one per level found in the
// arguments' types, sorted by level. dispatch_functorch<Stack>(op, args...) takes the top
// interpreter and calls its process(); process runs the op's rule for that transform and lowers
// (peels its own wrapper and re-dispatches on the rest of the list). The recursion ends at the
// op's base kernel on plain values, all resolved at compile time.
#include <boost/hana/append.hpp>
#include <boost/hana/back.hpp>
#include <boost/hana/flatten.hpp>
#include <boost/hana/basic_tuple.hpp>
#include <boost/hana/concat.hpp>
#include <boost/hana/drop_back.hpp>
#include <boost/hana/fold_left.hpp>
#include <boost/hana/is_empty.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/sort.hpp>
#include <boost/hana/type.hpp>
#include <boost/hana/unique.hpp>
#include <boost/hana/tuple.hpp>
#include <cstdint>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tower/static/diagnostics.hpp"
#include "tower/core/grad_mode.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/core/op_traits.hpp"
#include "tower/static/tape.hpp"
#include "tower/static/values.hpp"
#include "tower/core/zero_tangent.hpp"
#include "tower/tensor/batch_size.hpp"

namespace tower {

namespace hana = boost::hana;

template <int L>
struct vmap_interpreter;
template <int L>
struct grad_interpreter;
template <int L>
struct jvp_interpreter;

namespace detail {

template <class X>
constexpr auto interpreters_of() {
  using D = std::remove_cvref_t<X>;
  if constexpr (!is_static_wrapper_v<D>) {
    return hana::make_tuple();
  } else if constexpr (D::key == transform_type::vmap) {
    return hana::append(interpreters_of<typename D::physical_type>(), hana::type_c<vmap_interpreter<D::level>>);
  } else if constexpr (D::key == transform_type::grad) {
    return hana::append(interpreters_of<typename D::primal_type>(), hana::type_c<grad_interpreter<D::level>>);
  } else {
    return hana::append(interpreters_of<typename D::primal_type>(), hana::type_c<jvp_interpreter<D::level>>);
  }
}

template <class... A>
constexpr auto static_stack_of() {
  auto all = hana::flatten(hana::make_tuple(interpreters_of<A>()...));
  // By level, then key: values of two transforms at one level (a value captured from an enclosing
  // transform, in an instantiation that the level check never runs) still dispatch, each
  // interpreter taking only its own wrappers.
  auto sorted = hana::sort(all, [](auto a, auto b) {
    using Ia = typename decltype(a)::type;
    using Ib = typename decltype(b)::type;
    return hana::bool_c<(Ia::level() < Ib::level() || (Ia::level() == Ib::level() && Ia::key() < Ib::key()))>;
  });
  return hana::unique(sorted);
}

}  // namespace detail

/// The static interpreter stack of a call with these argument types (bottom first).
template <class... A>
using static_stack_t = decltype(detail::static_stack_of<std::remove_cvref_t<A>...>());

template <class Stack, class Op, class... A>
auto dispatch_functorch(const Op& op, const A&... a);

/// Dispatch on the stack the argument types imply.
template <class Op, class... A>
auto dispatch_static(const Op& op, const A&... a) {
  return dispatch_functorch<static_stack_t<A...>>(op, a...);
}

// ---------------------------------------------------------------------------------------------
// The interpreters (functorch's Interpreter, one per transform kind), each with:
//   level(), key()        its level and transform, from its type (they order the stack's list);
//   from_args(a...)       the live state of its transform call (tape, serial, batch size),
//                         read once per op;
//   process(op, a...)     the transform's rule for op, which lowers and lifts;
//   lower(op, a...)       op on the interpreters below: the rest of the stack's list;
//   lift(...)             a result as a value at this level;
//   batch_size()          (vmap) the size of the batch dim.
// grad's and jvp's lowering under a mode that was off outside is the entry's prev_grad_mode /
// prev_fwd_grad_mode, applied where the transform is entered (core/grad_mode.hpp).

// vmap_interpreter<L>: runs the op's batching rule on the physical values.
template <int L>
struct vmap_interpreter {
  std::int64_t batch_size_;
  std::uint64_t serial_;

  static constexpr int level() { return L; }
  static constexpr transform_type key() { return transform_type::vmap; }
  std::int64_t batch_size() const { return batch_size_; }
  /// functorch's lift: phys as a value batched at this level (its batch first, or last).
  template <class P>
  batched<P, L> lift(P phys, bool batch_last = false) const {
    return {std::move(phys), batch_size_, serial_, batch_last};
  }

  template <class... A>
  static vmap_interpreter from_args(const A&... a) {
    vmap_interpreter r{-1, 0};
    (r.take(a), ...);
    return r;
  }

  template <class Op, class... A>
  auto process(const Op& op, const A&... a) const {
    try {
      if constexpr ((is_tensor_batched_here<A>() || ...)) {
        if ((batch_last_here(a) || ...)) {
          // The batch last (batched::batch_last): kept there when the op can, else moved first.
          using R = decltype(process_batch_first(op, a...));
          if (auto r = keep_batch_last<R>(op, a...)) return std::move(*r);
          return process_batch_first(op, batch_first_here(a)...);
        }
      }
      return process_batch_first(op, a...);
    } catch (const error&) {
      detail::rethrow_per_example({shape(a)...});  // the shapes f's values have, not the kernel's
    }
  }

  /// Lowering: dispatch on the rest of the stack (the args given are already peeled).
  template <class Op, class... A>
  static auto lower(const Op& op, const A&... a) {
    return dispatch_static(op, a...);
  }

 private:
  template <class Op, class... A>
  auto process_batch_first(const Op& op, const A&... a) const {
    if constexpr (requires { op.batch_with_entry(*find_live_level(L), batch_size_, as_bval(a)...); }) {
      // Ops that depend on the vmap's options (random ops and randomness=).
      return lift(op.batch_with_entry(*find_live_level(L), batch_size_, as_bval(a)...));
    } else if constexpr (strict_vmap_v<Op> && !has_batch_rule_v<Op, std::int64_t, decltype(as_bval(a))...>) {
      (void)diagnostics::check_batch_rule<
          Op, decltype(as_bval(a))...>();  // reports "op <name> has no batching rule for transform vmap"
      return diagnostics::failed{};
    } else {
      // The op's batching rule, or the per-example fallback (batch_fallback.hpp).
      return lift(detail::batch_rule_or_fallback(op, batch_size_, as_bval(a)...));
    }
  }

  /// Whether X is a tensor batched at this level (the values batch_last applies to).
  template <class X>
  static constexpr bool is_tensor_batched_here() {
    if constexpr (is_batched_at_v<X, L>) return is_tensor_v<typename X::physical_type>;
    else return false;
  }
  template <class X>
  static bool batch_last_here(const X& x) {
    if constexpr (is_tensor_batched_here<X>()) return x.batch_last;
    else return false;
  }
  template <class X>
  static decltype(auto) batch_first_here(const X& x) {
    if constexpr (is_tensor_batched_here<X>()) return detail::batch_first(x);
    else return (x);
  }

  /// op's result with the batch kept last, when every argument is plain or a tensor batched
  /// here with its batch last (or no other dim), and the op is elementwise (a plain tensor gains
  /// a trailing 1, so broadcasting lines up the logical dims) or has a batch_last_rule (reshape,
  /// sum, matmul by a plain matrix). std::nullopt otherwise: the batch goes first.
  template <class R, class Op, class... A>
  std::optional<R> keep_batch_last(const Op& op, const A&... a) const {
    constexpr bool plain_or_here = ((is_tensor_batched_here<A>() || kernels::is_plain_v<A>) && ...);
    if constexpr (!plain_or_here ||
                  requires { op.batch_with_entry(*find_live_level(L), batch_size_, as_bval(a)...); }) {
      return std::nullopt;
    } else if (!((!is_tensor_batched_here<A>() || batch_last_here(a) || trailing_ok(a)) && ...)) {
      return std::nullopt;  // another argument has its batch first
    } else if constexpr (is_elementwise_v<Op>) {
      auto phys = dispatch_static(op, trailing(a)...);
      if constexpr (!std::is_same_v<batched<decltype(phys), L>, R>) {
        return std::nullopt;
      } else {
        const bool last = phys.dim() >= 2;  // a [B] result: no other dim, batch first and last
        return lift(std::move(phys), last);
      }
    } else if constexpr (requires { op.batch_last_rule(batch_size_, last_bval(a)...); }) {
      auto phys = op.batch_last_rule(batch_size_, last_bval(a)...);
      if constexpr (!std::is_same_v<batched<typename decltype(phys)::value_type, L>, R>) {
        return std::nullopt;
      } else {
        if (!phys) return std::nullopt;
        const bool last = phys->dim() >= 2;
        return lift(std::move(*phys), last);
      }
    } else {
      return std::nullopt;
    }
  }
  /// A batched value that is [B]: its batch is first and last.
  template <class X>
  static bool trailing_ok(const X& x) {
    if constexpr (is_tensor_batched_here<X>()) return x.value.dim() == 1;
    else return true;
  }
  /// An elementwise op's operand with the batch last: a batched value's physical value, a plain
  /// tensor with a trailing 1 (a number or a rank-0 tensor broadcasts as it is).
  template <class X>
  static auto trailing(const X& x) {
    if constexpr (is_tensor_batched_here<X>()) {
      return x.value;
    } else if constexpr (is_tensor_v<X>) {
      if (x.dim() == 0) return x;
      shape_t s = x.shape();
      s.push_back(1);
      return x.with_shape(std::move(s));
    } else {
      return x;
    }
  }
  /// A batch_last_rule's argument: the physical value (batch last) or the plain value.
  template <class X>
  static auto last_bval(const X& x) {
    if constexpr (is_tensor_batched_here<X>()) return bval<typename X::physical_type, std::true_type>{x.value, {}};
    else return bval<X, std::false_type>{x, {}};
  }

  template <class X>
  void take(const X& x) {
    if constexpr (is_batched_at_v<X, L>) {
      if (!find_live_interpreter(x.serial))
        throw error("vmap: a value batched by a vmap (level " + std::to_string(L) +
                    ") was used after that vmap returned");
      if (batch_size_ < 0) {
        batch_size_ = x.batch_size;
        serial_ = x.serial;
      }
    }
  }
  template <class X>
  static auto as_bval(const X& x) {
    if constexpr (is_batched_at_v<X, L>) return bval<typename X::physical_type, std::true_type>{x.value, {}};
    else return bval<X, std::false_type>{x, {}};
  }
};

// ---------------------------------------------------------------------------------------------
// grad_interpreter<L>: lifts the arguments to its level, records the op on its tape, lowers.
template <int L>
struct grad_interpreter {
  static constexpr int level() { return L; }

  detail::grad_tape* tape_;
  std::uint64_t serial_;

  static constexpr transform_type key() { return transform_type::grad; }
  /// functorch's lift: out as a value at this level with adjoint type Adj, a constant until process
  /// gives it a node.
  template <class Adj, class Out>
  grad_value_t<Out, L, Adj> lift(Out out) const {
    return {std::move(out), nullptr, serial_};
  }

  template <class... A>
  static grad_interpreter from_args(const A&...) {
    // Only the live grad call at level L owns a tape; wrappers from a call that returned are
    // dead and act as constants.
    if (const interpreter_entry* e = find_live_level(L); e && e->key == transform_type::grad)
      return {static_cast<detail::grad_tape*>(e->state), e->serial};
    return {nullptr, 0};
  }

  /// The primal of x at this level: x itself when x is not wrapped at L.
  template <class X>
  static const auto& primal(const X& x) {
    if constexpr (is_grad_at_v<X, L>) return x.primal;
    else return x;
  }

  /// functorch's lift: x's node at this level (typed by x's adjoint), null for a constant;
  /// std::nullptr_t when x is not wrapped at L, so its gradient is skipped at compile time.
  template <class X>
  auto node_of(const X& x) const {
    if constexpr (is_grad_at_v<X, L>) return tape_ && x.serial == serial_ ? x.node : nullptr;
    else return nullptr;
  }

  /// The adjoint type of an op's result: its primal, lifted to every level the tracked inputs'
  /// adjoints carry (an unbatched weight is not copied per example; only its gradient is).
  template <class Out, class... A>
  using adjoint_t = lift_levels_t<Out, std::conditional_t<is_grad_at_v<A, L>, adjoint_type_of<A>, double>...>;

  template <class Op, class... A>
  auto process(const Op& op, const A&... a) const {
    auto out = lower(op, primal(a)...);
    using Out = decltype(out);
    using Adj = adjoint_t<Out, A...>;
    auto r = lift<Adj>(std::move(out));
    if constexpr (is_differentiable_v<Op>) {
      if (tape_ && grad_enabled_at(L)) {
        auto parents = std::make_tuple(node_of(a)...);
        const bool tracked = std::apply([](auto... p) { return ((p != nullptr) || ...); }, parents);
        if constexpr (decltype(diagnostics::check_vjp_rule<Op, Out,
                                                           std::remove_cvref_t<decltype(primal(a))>...>())::value) {
          if (tracked) {
            using Node = detail::op_node<Op, Out, Adj, std::tuple<std::remove_cvref_t<decltype(primal(a))>...>,
                                         decltype(parents)>;
            r.node = tape_->template make<Node>(op, r.primal, std::make_tuple(primal(a)...), parents);
          }
        }
      }
    }
    return r;
  }

  template <class Op, class... A>
  static auto lower(const Op& op, const A&... a) {
    return dispatch_static(op, a...);
  }
};

// ---------------------------------------------------------------------------------------------
// jvp_interpreter<L>: forward mode. Lowers on the primals and runs the op's JVP rule on the
// tangents (zeros for arguments without a tangent at this level).
template <int L>
struct jvp_interpreter {
  static constexpr int level() { return L; }
  static constexpr transform_type key() { return transform_type::jvp; }

  std::uint64_t serial_;

  /// functorch's lift: (primal, tangent) as a value at this level.
  template <class P, class T>
  dual<P, T, L> lift(P primal, T tangent) const {
    return {std::move(primal), std::move(tangent), serial_};
  }

  template <class... A>
  static jvp_interpreter from_args(const A&...) {
    if (const interpreter_entry* e = find_live_level(L); e && e->key == transform_type::jvp) return {e->serial};
    return {0};
  }

  template <class X>
  static const auto& primal(const X& x) {
    if constexpr (is_dual_at_v<X, L>) return x.primal;
    else return x;
  }

  /// The tangent of x for the JVP rule of Op on A...: a symbolic zero (zero_tangent.hpp) when x
  /// has none at this level, if the rule takes one and another argument has a tangent here;
  /// otherwise tangent(x).
  template <class Op, class... A, class X>
  auto tangent_for(const X& x) const {
    if constexpr (detail::takes_zero_tangents_v<Op> && (... || is_dual_at_v<A, L>) && !is_dual_at_v<X, L>)
      return detail::zero_tangent{};
    else return tangent(x);
  }

  /// The tangent of x at this level: zeros when x has none (or its jvp has returned).
  template <class X>
  auto tangent(const X& x) const {
    if constexpr (is_dual_at_v<X, L>) {
      using T = std::remove_cvref_t<decltype(x.tangent)>;
      return x.serial == serial_ && serial_ ? x.tangent
                                            : detail::convert_adjoint<T>(detail::zeros_like_value(x.tangent));
    } else return detail::zeros_like_value(x);
  }

  template <class Op, class... A>
  auto process(const Op& op, const A&... a) const {
    auto out = lower(op, primal(a)...);
    if constexpr (!is_differentiable_v<Op>) {
      auto t = detail::zeros_like_value(out);
      return lift(std::move(out), std::move(t));
    } else if constexpr (!decltype(diagnostics::check_jvp_rule<Op, requires {
                           op.jvp(out, primal(a)..., tangent_for<Op, A...>(a)...);
                         }>())::value) {
      return diagnostics::failed{};
    } else {
      using T = decltype(op.jvp(out, primal(a)..., tangent_for<Op, A...>(a)...));
      if (serial_ && fwd_grad_enabled_at(L) && (... || is_dual_at_v<A, L>)) {
        // Inputs not at this level have zero tangents: the rule may skip their terms.
        detail::tangent_inputs_scope has(tangent_mask<A...>(std::index_sequence_for<A...>{}));
        T t = op.jvp(out, primal(a)..., tangent_for<Op, A...>(a)...);
        return lift(std::move(out), std::move(t));
      }
      T t = detail::convert_adjoint<T>(detail::zeros_like_value(out));
      return lift(std::move(out), std::move(t));
    }
  }

  template <class Op, class... A>
  static auto lower(const Op& op, const A&... a) {
    return dispatch_static(op, a...);
  }

 private:
  template <class... A, std::size_t... I>
  static constexpr std::uint32_t tangent_mask(std::index_sequence<I...>) {
    return ((is_dual_at_v<A, L> ? std::uint32_t{1} << I : 0u) | ... | 0u);
  }
};

// ---------------------------------------------------------------------------------------------
template <class Stack, class Op, class... A>
auto dispatch_functorch(const Op& op, const A&... a) {
  if constexpr (hana::is_empty(Stack{})) {
    if constexpr (!decltype(diagnostics::check_base_kernel<Op, A...>())::value) return diagnostics::failed{};
    else return op.base(a...);
  } else {
    using Top = typename decltype(+hana::back(Stack{}))::type;
    return Top::from_args(a...).process(op, a...);
  }
}

// ---------------------------------------------------------------------------------------------
// Adjoint conversion and accumulation (needs dispatch for the add/item ops).
namespace detail {

template <class V, class G>
V convert_adjoint(G&& g) {
  using GD = std::remove_cvref_t<G>;
  constexpr int lv = level_of<V>(), lg = level_of<GD>();
  if constexpr (std::is_same_v<V, GD>) {
    return std::forward<G>(g);
  } else if constexpr (lg > lv) {
    // The value depends on a level the target type does not carry: a value captured from an
    // enclosing transform. Lossless only when it is a constant at that level.
    if constexpr (GD::key == transform_type::grad) {
      if (g.node && find_live_interpreter(g.serial))
        throw error("grad: the result depends on a value captured from an enclosing grad (level " + std::to_string(lg) +
                    ") that its type cannot carry; pass that value as an argument");
      return convert_adjoint<V>(g.primal);
    } else if constexpr (GD::key == transform_type::jvp) {
      if (find_live_interpreter(g.serial))
        throw error("jvp: the result depends on a value captured from an enclosing jvp (level " + std::to_string(lg) +
                    ") that its type cannot carry; pass that value as an argument");
      return convert_adjoint<V>(g.primal);
    } else {
      throw error("vmap: the result depends on a value batched by an enclosing vmap (level " + std::to_string(lg) +
                  ") that its type cannot carry; pass that value as an argument");
    }
  } else if constexpr (lv > lg) {
    // Lift: the same value for every example of vmap level lv / a constant at grad level lv.
    const interpreter_entry* e = find_live_level(lv);
    if (!e) throw error("tower: internal: lifting a value to level " + std::to_string(lv) + ", which is not live");
    using P = typename inner_type<V>::type;
    if constexpr (V::key == transform_type::vmap) {
      shape_t s = shape(g), one = s, full = s;
      one.insert(one.begin(), 1);
      full.insert(full.begin(), e->batch_size);
      return V{convert_adjoint<P>(broadcast_values(reshape_value(g, one), full)), e->batch_size, e->serial};
    } else if constexpr (V::key == transform_type::jvp) {
      return V{convert_adjoint<P>(g), convert_adjoint<typename V::tangent_type>(zeros_like_value(g)), e->serial};
    } else {
      return V{convert_adjoint<P>(std::forward<G>(g)), nullptr, e->serial};
    }
  } else if constexpr (lv == 0) {
    // A float argument's adjoint from double arithmetic (x * 2.0): rounded to the argument's type.
    if constexpr (kernels::is_plain_scalar_v<V> && kernels::is_plain_scalar_v<GD>) return static_cast<V>(g);
    else if constexpr (kernels::is_plain_scalar_v<V> && is_tensor_v<GD>) return static_cast<V>(g.item());
    else if constexpr (is_tensor_v<V> && kernels::is_plain_scalar_v<GD>)
      return V(static_cast<typename V::value_type>(g));
    else static_assert(lv != 0, "tower: internal: cannot convert between these plain types");
  } else if constexpr (V::key != GD::key) {
    // Two transforms at one level: only in an instantiation the level check never runs (a value
    // captured from an enclosing transform, seen at a level it shares with fresh ones).
    throw error("tower: internal: an adjoint of another transform at level " + std::to_string(lv));
  } else if constexpr (!std::is_same_v<scalar_type_t<V>, scalar_type_t<GD>>) {
    return convert_adjoint<V>(element_cast_adjoint<V>(g));  // float <-> double, tracked at every level
  } else if constexpr (V::key == transform_type::vmap) {
    if constexpr (is_tensor_v<typename inner_type<GD>::type>)
      if (g.batch_last) return convert_adjoint<V>(batch_first(g));
    return V{convert_adjoint<typename inner_type<V>::type>(g.value), g.batch_size, g.serial};
  } else if constexpr (V::key == transform_type::jvp) {
    return V{convert_adjoint<typename V::primal_type>(g.primal), convert_adjoint<typename V::tangent_type>(g.tangent),
             g.serial};
  } else if constexpr (is_scalar_type_v<V> != is_scalar_type_v<GD>) {
    // scalar <-> rank-0 tensor, tracked at this level
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(cast_adjoint<V>(g))>, GD>)
      throw error("grad: internal: an adjoint at level " + std::to_string(lv) + " lacks a level its value carries");
    else return convert_adjoint<V>(cast_adjoint<V>(g));
  } else {
    if (g.node && find_live_interpreter(g.serial))
      throw error("grad: internal: an adjoint at level " + std::to_string(lv) + " lacks a level its value carries");
    return V{convert_adjoint<typename inner_type<V>::type>(g.primal), nullptr, g.serial};
  }
}

template <class V>
template <class G>
void var_node<V>::accumulate(G&& g) {
  V v = convert_adjoint<V>(std::forward<G>(g));
  if (adjoint) *adjoint = add_values(*adjoint, v);
  else adjoint.emplace(std::move(v));
}

}  // namespace detail

}  // namespace tower

#pragma once
// The tape of a grad call on the static path: reverse mode with typed nodes in an arena.
//
// Each recorded op becomes one op_node<Op, Out, In...> that saves its inputs' primals and its
// output, and knows its parents' nodes by type. Nodes live in a bump arena owned by the tape
// (an inline buffer, then blocks from a per-thread pool: no heap allocation per op, none per
// call once warm) and form an intrusive list; backward() visits them in reverse creation order,
// each calling its op's VJP rule. Adjoints are values one level down (possibly carrying more
// lower levels than their primals), so the VJP rules themselves dispatch to lower levels: grad(grad(f)) and vmap(grad(f)) just work.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <new>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "tower/core/needs_input_grad.hpp"
#include "tower/static/values.hpp"

namespace tower::detail {

struct node_base {
  node_base* prev_node = nullptr;  // the node recorded just before this one: the tape is a list
  virtual void backward() = 0;
  virtual ~node_base() = default;
};

/// Converts an adjoint computed by a VJP rule to the type of the value it belongs to.
template <class V, class G>
V convert_adjoint(G&& g);

/// A value on the tape: holds its adjoint. As a leaf (an input of grad) it has no backward.
template <class V>
struct var_node : node_base {
  std::optional<V> adjoint;

  template <class G>
  void accumulate(G&& g);
  void backward() override {}
};

/// An op's output on the tape. Adj, its adjoint's type, may carry levels Out does not (an op
/// on unbatched inputs whose per-example gradients are batched): the VJP rule dispatches on the
/// mixed levels like any other op.
template <class Op, class Out, class Adj, class Ins, class Parents>
struct op_node;

template <class Op, class Out, class Adj, class... In, class... P>
struct op_node<Op, Out, Adj, std::tuple<In...>, std::tuple<P...>> final : var_node<Adj> {
  Op op;
  Out out;
  std::tuple<In...> ins;
  std::tuple<P...> parents;  // the input's var_node (typed by its adjoint), or std::nullptr_t

  op_node(const Op& o, const Out& r, std::tuple<In...> i, std::tuple<P...> p)
      : op(o), out(r), ins(std::move(i)), parents(p) {}

  void backward() override {
    if (!this->adjoint) return;
    // Untracked inputs (constants) get no gradient: the rule may skip them (needs_input_grad.hpp).
    needed_inputs_scope needed(needed_mask(std::index_sequence_for<In...>{}));
    auto grads = std::apply([&](const auto&... x) { return op.vjp(*this->adjoint, out, x...); }, ins);
    push(grads, std::index_sequence_for<In...>{});
  }

 private:
  template <class G, std::size_t... I>
  void push(G& grads, std::index_sequence<I...>) {
    (push_one(std::get<I>(parents), std::get<I>(grads)), ...);
  }
  template <std::size_t... I>
  std::uint32_t needed_mask(std::index_sequence<I...>) const {
    return ((tracked(std::get<I>(parents)) ? std::uint32_t{1} << I : 0u) | ... | 0u);
  }
  template <class Parent>
  static bool tracked(Parent p) {
    if constexpr (std::is_null_pointer_v<Parent>) return false;
    else return p != nullptr;
  }
  template <class Parent, class G>
  static void push_one(Parent parent, G& g) {
    if constexpr (!std::is_null_pointer_v<Parent>)
      if (parent) parent->accumulate(std::move(g));
  }
};

/// Where a tape's arena grows past its inline buffer: a per-thread pool that keeps the blocks
/// a finished tape returns, so repeated grad calls reach a steady state with no heap allocation.
inline std::pmr::memory_resource* tape_upstream() {
  thread_local std::pmr::unsynchronized_pool_resource pool(std::pmr::pool_options{0, std::size_t{1} << 24});
  return &pool;
}

/// The nodes of one grad call, in a bump arena: an inline buffer, then blocks from the thread's
/// pool (tape_upstream). Nodes form an intrusive list, newest first, so recording an op is a
/// pointer bump and two stores: no allocation and no virtual call into a memory resource.
class grad_tape {
 public:
  grad_tape() = default;
  ~grad_tape() {
    for (node_base* n = last_; n;) {
      node_base* prev = n->prev_node;
      n->~node_base();
      n = prev;
    }
    for (block* b = blocks_; b;) {
      block* next = b->next;
      tape_upstream()->deallocate(b, b->size, alignof(std::max_align_t));
      b = next;
    }
  }
  grad_tape(const grad_tape&) = delete;
  grad_tape& operator=(const grad_tape&) = delete;

  template <class N, class... A>
  N* make(A&&... a) {
    void* p = allocate(sizeof(N), alignof(N));
    N* n = ::new (p) N(std::forward<A>(a)...);
    n->prev_node = last_;
    last_ = n;
    return n;
  }

  void backward() {
    for (node_base* n = last_; n; n = n->prev_node) n->backward();
  }

 private:
  struct block {
    block* next;
    std::size_t size;
  };

  static std::byte* align_up(std::byte* p, std::size_t a) {
    const auto v = reinterpret_cast<std::uintptr_t>(p);
    return reinterpret_cast<std::byte*>((v + a - 1) & ~(static_cast<std::uintptr_t>(a) - 1));
  }
  void* allocate(std::size_t size, std::size_t align) {
    std::byte* p = align_up(cur_, align);
    if (p + size > end_) [[unlikely]]
      p = grow(size, align);
    cur_ = p + size;
    return p;
  }
  std::byte* grow(std::size_t size, std::size_t align) {
    const std::size_t want = std::max(next_block_, sizeof(block) + size + align);
    next_block_ = 2 * want;
    auto* mem = static_cast<std::byte*>(tape_upstream()->allocate(want, alignof(std::max_align_t)));
    blocks_ = ::new (mem) block{blocks_, want};
    cur_ = mem + sizeof(block);
    end_ = mem + want;
    return align_up(cur_, align);
  }

  alignas(std::max_align_t) std::byte buffer_[4096];
  std::byte* cur_ = buffer_;
  std::byte* end_ = buffer_ + sizeof(buffer_);
  block* blocks_ = nullptr;
  std::size_t next_block_ = 16384;
  node_base* last_ = nullptr;
};

}  // namespace tower::detail

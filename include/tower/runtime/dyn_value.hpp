#pragma once
// dyn::value: the value of the runtime path, for code the compiler cannot see through
// (type-erased functions, transform depth chosen at run time).
//
//   std::function<tw::dyn::value(tw::dyn::value)> f = [](tw::dyn::value x) { return tw::sin(x) * x; };
//   double d = tw::grad(f)(2.0).item();
//
// A value is a plain tensor<double> (scalars are rank 0) or one wrapper layer — vmap's batched
// value or grad's tracked value at a runtime level — around another value, as in functorch.
//
// Per-op overhead: a plain value with one element (a scalar, or a [1, 1, ...] tensor such as a
// batch-size-1 vmap's physical value) is stored inline — its element and its rank — with no
// heap allocation; elementwise ops on such values run on doubles (runtime/dispatch.hpp).
// Wrappers live in pool-allocated blocks (pool_allocator.hpp).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "tower/core/error.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/memory/pool_allocator.hpp"
#include "tower/static/scalar_dual.hpp"
#include "tower/static/values.hpp"
#include "tower/tensor/tensor.hpp"
#include "tower/core/transform_type.hpp"

namespace tower::dyn {

struct grad_node;

/// The runtime path's value: a tensor<double> (a number is rank 0) or one transform's wrapper
/// around another value. `value(2.0)`, `value(tensor)`; read with item(), to_tensor(), shape()
/// (docs/runtime_path.md).
/// \code
/// std::function<tw::dyn::value(tw::dyn::value)> g = [](tw::dyn::value x) { return tw::exp(x * 2.0); };
/// double d2 = tw::grad(tw::grad(g))(tw::dyn::value(0.3)).item();   // 4 exp(0.6)
/// if (std::abs(d2 - 4 * std::exp(0.6)) > 1e-13 || tw::dyn::value(tw::tensor<double>{1, 2}).to_tensor()(1) != 2)
///   throw std::runtime_error("dyn::value");
/// \endcode
class value {
 public:
  struct rep;

  value();
  explicit value(double v);
  explicit value(tensor<double> t);
  /// A value held by `r` (a complete rep: its level and rank are read now); null: an inline 0.
  explicit value(std::shared_ptr<const rep> r);
  /// A static-path value (batched, grad_value, dual) handed to runtime code: its levels carry
  /// over, and a grad level's tracking is bridged back to the static tape (bridge.hpp).
  template <class W>
    requires is_static_wrapper_v<W>
  value(const W& w);  // NOLINT: implicit on purpose, so erased functions accept static values
  /// Grad's tape-free numbers, or a tw::fixed of them (not of plain numbers): vmap's per-example
  /// loop instantiates f on these to see whether f runs on them; f calling type-erased code then
  /// returns a dyn::value, which tells the loop to decline (so this never runs: it throws).
  template <class X>
    requires((is_fixed_v<X> && !std::is_arithmetic_v<detail::fixeds::scalar_t<X>>) || is_scalar_dual_v<X>)
  value(const X&) {  // NOLINT: implicit, as above
    throw error("dyn::value: internal: grad's tape-free numbers reached type-erased code");
  }

  /// Logical shape (what the transformed function sees).
  shape_t shape() const;
  /// Logical rank, without building the shape.
  std::int64_t rank() const;
  /// 0 for a plain value, else the level of the outermost wrapper.
  int level() const;
  bool is_plain() const { return level() == 0; }

  /// The plain tensor; tower::error if the value is still wrapped by a live transform.
  tensor<double> to_tensor() const;
  /// The single element of a one-element value.
  double item() const { return to_tensor().item(); }

  /// The wrapper (or the plain tensor's holder); not for an inline value (is_inline()).
  const rep& get() const { return *rep_; }

  /// A plain value with one element, held inline: its element is scalar(), its shape is
  /// inline_rank() ones.
  bool is_inline() const { return !rep_; }
  double scalar() const { return s_; }
  int inline_rank() const { return r_; }
  /// A one-element plain value of the given rank (shape [1] * rank), held inline.
  static value one_element(double v, int rank) {
    value r{std::shared_ptr<const rep>()};
    r.s_ = v;
    r.r_ = rank;
    return r;
  }
  /// The plain tensor of a level-0 value.
  tensor<double> plain() const;
  /// The same without a copy: the held tensor, or an inline value's tensor built in `scratch`.
  const tensor<double>& plain_ref(std::optional<tensor<double>>& scratch) const;

 private:
  std::shared_ptr<const rep> rep_;  // null: an inline one-element plain value
  double s_ = 0;                    // inline: the element
  int r_ = 0;                       // the logical rank (kept here so that batching rules need not walk the layers)
  int level_ = 0;                   // the outer wrapper's level (kept here: dispatch reads it for every argument)
};

struct value::rep {
  rep() {}        // user-provided: allocate_shared value-initialises, which would zero all of it first
  int level = 0;  // 0: plain
  transform_type key = transform_type::vmap;
  std::optional<tensor<double>> plain;  // level 0 (a wrapper builds no tensor)
  value inner{nullptr};                 // wrapper: vmap's physical value or grad's primal
  std::uint64_t serial = 0;             // the transform call that made the wrapper
  std::shared_ptr<grad_node> node;      // grad: null for a constant
  value tangent{nullptr};               // jvp: the tangent of `inner`
};

/// A node of the runtime autograd graph (functorch's grad levels use PyTorch autograd). A leaf
/// is a plain grad_node; an op's node (runtime/dispatch.hpp) knows its parents and its VJP.
/// `seen`, `has_adjoint_in` and `adjoint` belong to the backward sweep that is running
/// (transforms/runtime/transforms.hpp), which clears them when it ends.
struct grad_node {
  grad_node() = default;
  grad_node(const grad_node&) = delete;
  grad_node& operator=(const grad_node&) = delete;
  virtual ~grad_node() = default;
  /// One per input; a parent is null when that input is untracked. (Not virtual: the sweep
  /// reads them for every edge; an op's node points them at its own storage.)
  std::size_t parent_count() const { return parent_count_; }
  grad_node* parent(std::size_t i) const { return parents_[i].get(); }
  /// False for leaves.
  virtual bool has_vjp() const { return false; }
  /// The gradient of each input given the output's, into grads[0, parent_count()).
  virtual void vjp(const value&, value*) const {}

  std::uint64_t seen = 0, has_adjoint_in = 0;
  value adjoint{std::shared_ptr<const value::rep>()};

 protected:
  const std::shared_ptr<grad_node>* parents_ = nullptr;
  std::size_t parent_count_ = 0;
};

inline value::value() : value(0.0) {}
inline value::value(double v) : s_(v) {}
inline value::value(tensor<double> t) {
  if (t.numel() == 1 && std::all_of(t.shape().begin(), t.shape().end(), [](std::int64_t d) { return d == 1; })) {
    s_ = t.data()[0];
    r_ = static_cast<int>(t.dim());
    return;
  }
  auto r = std::allocate_shared<rep>(tower::detail::pool_allocator<rep>());
  r_ = static_cast<int>(t.dim());
  r->plain = std::move(t);
  rep_ = std::move(r);
}

inline value::value(std::shared_ptr<const rep> r) : rep_(std::move(r)) {
  if (!rep_) return;
  level_ = rep_->level;
  r_ =
      level_ == 0 ? static_cast<int>(rep_->plain->dim()) : rep_->inner.r_ - (rep_->key == transform_type::vmap ? 1 : 0);
}

inline int value::level() const { return level_; }

inline std::int64_t value::rank() const { return r_; }

inline tensor<double> value::plain() const {
  if (!rep_) return tensor<double>(shape_t(static_cast<std::size_t>(r_), 1), std::vector<double>{s_});
  return *rep_->plain;
}

inline const tensor<double>& value::plain_ref(std::optional<tensor<double>>& scratch) const {
  if (!rep_) return scratch.emplace(plain());
  return *rep_->plain;
}

inline shape_t value::shape() const {
  if (!rep_) return shape_t(static_cast<std::size_t>(r_), 1);
  const rep& r = get();
  if (r.level == 0) return r.plain->shape();
  if (rank() == 0) return {};
  shape_t s = r.inner.shape();
  if (r.key == transform_type::vmap) s.erase(s.begin());
  return s;
}

inline tensor<double> value::to_tensor() const {
  const value* v = this;
  while (v->level() > 0) {
    if (find_live_interpreter(v->get().serial))
      throw error("dyn::value: to_tensor on a value wrapped by a live " + to_string(v->get().key) + " (level " +
                  std::to_string(v->level()) + ")");
    if (v->get().key == transform_type::vmap)
      throw error("dyn::value: a value batched by a vmap was used after that vmap returned");
    v = &v->get().inner;  // a dead grad wrapper is a constant
  }
  return v->plain();
}

/// Wraps `inner` at a level.
inline value wrap(transform_type key, int level, std::uint64_t serial, value inner,
                  std::shared_ptr<grad_node> node = {}) {
  auto r = std::allocate_shared<value::rep>(tower::detail::pool_allocator<value::rep>());
  r->level = level;
  r->key = key;
  r->inner = std::move(inner);
  r->serial = serial;
  r->node = std::move(node);
  return value(std::shared_ptr<const value::rep>(std::move(r)));
}

/// Wraps a primal and its tangent at a jvp level.
inline value wrap_dual(int level, std::uint64_t serial, value primal, value tangent) {
  auto r = std::allocate_shared<value::rep>(tower::detail::pool_allocator<value::rep>());
  r->level = level;
  r->key = transform_type::jvp;
  r->inner = std::move(primal);
  r->serial = serial;
  r->tangent = std::move(tangent);
  return value(std::shared_ptr<const value::rep>(std::move(r)));
}

}  // namespace tower::dyn

#pragma once
// Whether a value is wrapped by grad levels only (grad, vjp, jacrev's reverse pass) around a
// tensor: then a call on it may be recorded as one op on those grads' tapes, whose VJP runs the
// call's own transform again (a parallel vmap's per-grain VJPs, pmap's per-rank VJP). A vmap or
// jvp level in between would see the op's inside, so such values take the op's inside instead.
#include <type_traits>

#include "tower/runtime/dyn_value.hpp"
#include "tower/static/values.hpp"

namespace tower::detail {

/// By type: a tensor, or grad_value of grad_value ... of a tensor.
template <class X>
struct grad_levels_only : std::bool_constant<is_tensor_v<X>> {};
template <class P, int L, class... Adj>
struct grad_levels_only<grad_value<P, L, Adj...>> : grad_levels_only<P> {};
/// ... with at least one grad level.
template <class X>
inline constexpr bool is_grad_wrapped_v = !is_tensor_v<X> && grad_levels_only<std::remove_cvref_t<X>>::value;

/// At run time, for a runtime value: its number of levels when all are grad levels (0: plain),
/// else -1.
inline int grad_levels_now(const dyn::value& x) {
  int n = 0;
  for (const dyn::value* v = &x; v->level() > 0; v = &v->get().inner, ++n)
    if (v->get().key != transform_type::grad) return -1;
  return n;
}

}  // namespace tower::detail

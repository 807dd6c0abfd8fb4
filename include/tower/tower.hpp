#pragma once
// tower: composable function transforms (vmap, grad, ...) for C++, with the interpreter stack
// resolved at compile time. One include for everything: the transforms, the ops (dsl/), the
// runtime path, pytrees and the Eigen interop (tower/eigen.hpp).
//
//   #include <tower/tower.hpp>
//   namespace tw = tower;
//   auto loss = [](auto w, auto x) { return tw::log(1.0 + tw::exp(-tw::dot(w, x))); };
//   tw::tensor<double> G = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0))(w, X);  // [B, d]
#include "tower/core/config.hpp"  // first: a clear #error below C++20
#include "tower/version.hpp"
#if TOWER_CXX20
// clang reports each loop marked TOWER_NO_ALIAS_LOOP (kernels/base.hpp: vectorize(assume_safety)) that
// it leaves scalar at -O2, e.g. a per-example function that calls libm: not a fault, and not
// the user's to fix. The pragma covers tower's headers included here, not the user's code.
#if defined(__clang__)
#if __has_warning("-Wpass-failed")  // (nested: g++ cannot parse __has_warning)
#define TOWER_IGNORE_PASS_FAILED 1
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
#endif
#include "dsl/layout.hpp"
#include "dsl/linalg.hpp"
#include "dsl/nn.hpp"
#include "dsl/pointwise.hpp"
#include "dsl/reduce.hpp"
#include "dsl/shape_ops.hpp"
#include "dsl/batch_fallback.hpp"
#include "tower/core/error.hpp"
#include "tower/core/grad_mode.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/kernels/base.hpp"
#include "tower/static/op.hpp"
#include "tower/static/dispatch.hpp"
#include "tower/static/values.hpp"
#include "tower/tensor/tensor.hpp"
#include "tower/core/transform_type.hpp"
#include "tower/transforms/grad.hpp"
#include "tower/core/transform_options.hpp"
#include "tower/transforms/vmap.hpp"
#include "tower/runtime/dyn_value.hpp"
#include "tower/runtime/dispatch.hpp"
#include "tower/transforms/runtime/transforms.hpp"
#include "tower/transforms/jvp.hpp"
#include "tower/transforms/jacobian.hpp"
#include "tower/static/pytree.hpp"
#include "dsl/random.hpp"
#include "tower/transforms/runtime/bridge.hpp"
#include "tower/eigen.hpp"
#ifdef TOWER_IGNORE_PASS_FAILED
#pragma clang diagnostic pop
#undef TOWER_IGNORE_PASS_FAILED
#endif
#endif  // TOWER_CXX20

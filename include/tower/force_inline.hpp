#pragma once
// Forced inlining for the code that runs once per element or per example (the forward-mode
// numbers, the ops' rules on them, the loop bodies of vmap's per-example forms).
//
// Speed there cannot depend on the compiler's inlining budget, which depends on how many call
// sites a user's file happens to have: g++ leaves a helper out of line when its early inliner
// has not reached it yet, and clang's `flatten` inlines direct calls only, not the lambdas under
// them. So every function and every lambda on that path says it must be inlined, as Eigen's
// EIGEN_ALWAYS_INLINE does; tests/user_tu/ checks the generated loop for calls.
//
//   template <class X> TOWER_ALWAYS_INLINE X twice(const X& x) { return x + x; }
//   auto f = [&](double x) TOWER_INLINE_LAMBDA { return twice(x); };

#if defined(__GNUC__) || defined(__clang__)
#define TOWER_ALWAYS_INLINE __attribute__((always_inline)) inline
#define TOWER_INLINE_LAMBDA __attribute__((always_inline))
#else
#define TOWER_ALWAYS_INLINE inline
#define TOWER_INLINE_LAMBDA
#endif

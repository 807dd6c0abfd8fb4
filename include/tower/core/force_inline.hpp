#pragma once
// Forced inlining for the code that runs once per element or per example (the forward-mode
// numbers, the ops' rules on them, the loop bodies of vmap's per-example forms).
//
// Speed there cannot depend on the compiler's inlining budget, which depends on how many call
// sites a user's file happens to have. Each compiler needs its own guarantee:
// - g++: the loop function is `[[gnu::flatten]]`, which inlines everything under it. always_inline
//   below it would hurt: g++'s early inliner skips the edges out of always_inline functions when it
//   orders the call graph, so flatten then finds f "not inlinable" and leaves it out of line.
// - clang: `flatten` inlines direct calls only, not the lambdas under them, so every function and
//   every lambda on the path is always_inline, as Eigen's EIGEN_ALWAYS_INLINE.
// tests/user_tu/ checks the generated code of a user's program for calls.
//
//   template <class X> TOWER_ALWAYS_INLINE X twice(const X& x) { return x + x; }
//   auto f = [&](double x) TOWER_INLINE_LAMBDA { return twice(x); };

//
// TOWER_LOOP_FUNCTION marks a function that holds a loop over examples with a vectorisation hint
// (TOWER_NO_ALIAS_LOOP). When clang cannot vectorise such a loop (f calls libm, say) it warns
// (-Wpass-failed), and without debug information it puts the warning on the function the loop
// was inlined into: the user's, where tower.hpp's `diagnostic ignored` does not reach, so a
// user's -Werror build would fail. Kept out of line (one call per vmap), the loop stays in
// tower's function and the warning stays silenced.
#if defined(__clang__)
#define TOWER_ALWAYS_INLINE __attribute__((always_inline)) inline
#define TOWER_INLINE_LAMBDA __attribute__((always_inline))
#define TOWER_LOOP_FUNCTION __attribute__((noinline))
#else
#define TOWER_ALWAYS_INLINE inline
#define TOWER_INLINE_LAMBDA
#define TOWER_LOOP_FUNCTION
#endif

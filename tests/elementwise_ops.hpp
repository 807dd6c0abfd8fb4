#pragma once
// The elementwise ops, as X-macro lists for the table-driven tests that run each of them.
//
//   #define UNARY(OP, POINT, LO, HI) check_unary(#OP, [](auto x) { return tw::OP(x); }, ...);
//   TOWER_TEST_UNARY_OPS(UNARY)
//
// POINT is one argument in the op's domain away from its kinks, [LO, HI] a range in its domain.

// X(op, point, lo, hi)
#define TOWER_TEST_UNARY_OPS(X)                                                                    \
  X(neg, 0.3, -2, 2) X(abs, -0.3, -2, 2) X(sign, -0.3, -2, 2) X(exp, 0.3, -2, 2) X(expm1, 0.3, -2, 2) \
  X(log, 0.3, 0.1, 2) X(log1p, 0.3, 0.1, 2) X(sqrt, 0.3, 0.1, 2) X(rsqrt, 0.3, 0.1, 2)               \
  X(square, 0.3, -2, 2) X(sin, 0.3, -2, 2) X(cos, 0.3, -2, 2) X(tan, 0.3, -1, 1) X(tanh, 0.3, -2, 2)  \
  X(sinh, 0.3, -2, 2) X(cosh, 0.3, -2, 2) X(asin, 0.3, -0.9, 0.9) X(acos, 0.3, -0.9, 0.9)            \
  X(atan, 0.3, -2, 2) X(sigmoid, 0.3, -2, 2) X(softplus, 0.3, -2, 2) X(relu, 0.3, -2, 2)             \
  X(erf, 0.3, -2, 2) X(reciprocal, 0.3, 0.1, 2)

// X(op, lo, hi): arithmetic on two operands.
#define TOWER_TEST_BINARY_OPS(X) \
  X(add, -2, 2) X(sub, -2, 2) X(mul, -2, 2) X(div, 0.5, 2) X(pow, 0.5, 2) X(maximum, -2, 2) X(minimum, -2, 2) X(atan2, -2, 2)

// X(op): comparisons (their result times an operand, so that there is something to differentiate).
#define TOWER_TEST_COMPARE_OPS(X) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)

#pragma once
// Eigen's headers, included so that their warnings do not fail users' -Werror builds. Eigen
// 3.4 has unused variables in its packet code (-Wunused-variable under -march=native when its
// directory is on the path with -I rather than -isystem), and GCC 12 reports false
// -Wmaybe-uninitialized positives in its AVX-512 packet code (predux, GEMV) at -O2
// -march=native; clang's -Wpedantic flags a compound literal in its Half.h. A diagnostic pragma
// covers the lines between push and pop, so these cover Eigen's code wherever it is
// instantiated, as long as tower includes Eigen first.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wc99-extensions"  // Half.h's compound literal (-Wpedantic, AVX-512)
#else
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/LU>
#pragma GCC diagnostic pop

// Catch2's main for tests that run under mpirun: MPI_Init, the tests, MPI_Finalize. Every rank
// runs every test in the same order; the exit code is the rank's (mpirun fails if one fails).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#define OMPI_SKIP_MPICXX 1  // the C API only
#include <mpi.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

int main(int argc, char** argv) {
#if defined(__SANITIZE_ADDRESS__)
  // What Open MPI allocates in MPI_Init and keeps (some of it in components it unloads again,
  // which no suppression can name) is not tower's.
  __lsan_disable();
#endif
  MPI_Init(&argc, &argv);
#if defined(__SANITIZE_ADDRESS__)
  __lsan_enable();
#endif
  const int failed = Catch::Session().run(argc, argv);
#if defined(__SANITIZE_ADDRESS__)
  // LeakSanitizer's check now, while Open MPI's components are loaded (their allocations are
  // still reachable); after MPI_Finalize unloads them it would report them as leaks of
  // unknown modules. This call also turns off the check at exit.
  __lsan_do_leak_check();
#endif
  MPI_Finalize();
  return failed;
}

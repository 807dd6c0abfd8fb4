#pragma once
// Included first by tower's public headers (tower.hpp, eigen.hpp): one clear error
// instead of thousands when the compiler is not in C++20 mode. TOWER_CXX20 says whether the
// rest of a public header should be read at all.
#if defined(_MSVC_LANG)
#define TOWER_CPLUSPLUS _MSVC_LANG
#else
#define TOWER_CPLUSPLUS __cplusplus
#endif

// > C++17 rather than >= 202002L: g++ 10 reports 201709L in -std=c++20 mode.
#if TOWER_CPLUSPLUS > 201703L
#define TOWER_CXX20 1
#else
#define TOWER_CXX20 0
#error \
    "tower requires C++20: compile with -std=c++20 (g++, clang++) or /std:c++20 (MSVC). CMake's tower::tower target and `pkg-config --cflags tower` add it; with Bazel put `build --cxxopt=-std=c++20` in your .bazelrc."
#endif

#pragma once
// tower's version: MAJOR.MINOR.PATCH (CHANGELOG.md). CMakeLists.txt takes its project
// VERSION, which it reads from here.
#define TOWER_VERSION_MAJOR 0
#define TOWER_VERSION_MINOR 1
#define TOWER_VERSION_PATCH 0
/// One number for comparisons: MAJOR * 10000 + MINOR * 100 + PATCH (0.1.0 is 100).
/// \code
/// static_assert(TOWER_VERSION == TOWER_VERSION_MAJOR * 10000 + TOWER_VERSION_MINOR * 100 + TOWER_VERSION_PATCH);
/// if (TOWER_VERSION < 100) throw std::runtime_error("tower 0.1.0 or later");
/// \endcode
#define TOWER_VERSION (TOWER_VERSION_MAJOR * 10000 + TOWER_VERSION_MINOR * 100 + TOWER_VERSION_PATCH)

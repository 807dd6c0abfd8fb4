#pragma once
// What tw::vmap(f, tw::parallel) returns: the serial vmap and the parallel option. Running it
// needs <tower/parallel.hpp> (oneTBB), which defines detail::parallel_engine; this header holds
// no threading code, so users of <tower/tower.hpp> without oneTBB are unaffected.
#include <type_traits>

#include "tower/core/transform_options.hpp"
#include "tower/core/runtime_function.hpp"

namespace tower {

namespace detail {
/// Defined by <tower/parallel.hpp>: static auto run(const V& serial_vmap, parallel_t, args...).
template <class V>
struct parallel_engine;
template <class...>
inline constexpr bool parallel_dependent_false = false;
}  // namespace detail

template <class V>
struct parallel_vmap_transform {
  V serial;  // the same vmap without tw::parallel: what every grain runs
  parallel_t parallel;
  using wrapped_function = typename V::wrapped_function;  // (detail::may_capture_values)

  template <class... A>
  auto operator()(const A&... a) const {
    if constexpr (requires { detail::parallel_engine<V>::available; }) {
      return detail::parallel_engine<V>::run(serial, parallel, a...);
    } else {
      static_assert(detail::parallel_dependent_false<A...>,
                    "tw::parallel needs #include <tower/parallel.hpp> and oneTBB (link -ltbb; Bazel //:tower_parallel; "
                    "CMake TBB::tbb)");
      return serial(a...);
    }
  }
};

template <class V>
struct is_runtime_function<parallel_vmap_transform<V>> : is_runtime_function<V> {};

}  // namespace tower

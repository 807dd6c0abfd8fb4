#pragma once
// Which functions go through the runtime path: type-erased functions of dyn::value, and
// transforms of them. A generic lambda goes through the static path.
#include <functional>
#include <tuple>
#include <type_traits>

namespace tower {

namespace dyn {
class value;
}

/// Whether F takes the runtime path: a std::function whose arguments are all tw::dyn::value
/// (and, by specialisations elsewhere, tower's transforms of one).
/// \code
/// static_assert(tw::is_runtime_function_v<std::function<tw::dyn::value(tw::dyn::value)>>);
/// auto generic = [](auto x) { return x; };
/// static_assert(!tw::is_runtime_function_v<decltype(generic)>);
/// \endcode
template <class F>
struct is_runtime_function : std::false_type {};

template <class R, class... A>
struct is_runtime_function<std::function<R(A...)>>
    : std::bool_constant<(std::is_same_v<std::remove_cvref_t<A>, dyn::value> && ...)> {};

template <class F>
inline constexpr bool is_runtime_function_v = is_runtime_function<std::remove_cvref_t<F>>::value;

}  // namespace tower

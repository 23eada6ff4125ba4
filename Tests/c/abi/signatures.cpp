// signatures.cpp — compile-time comparison of every function declared in
// include/loadstate.h with the declaration the Swift compiler emits for the
// @_cdecl export of the same name (renamed swift_lds_* by check-header.sh).
//
// Two declarations are compatible when they have the same number of
// parameters and each parameter and the return type are the same type,
// except for what the Swift side cannot spell:
//   - lds_runtime * (opaque) appears as void *;
//   - size_t appears as Swift's Int (NSInteger in the emitted header);
// both also under pointers and inside function-pointer types.
// The file only compiles; a mismatch is a static_assert naming the function.
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "loadstate.h"

#if !defined(__clang__)
#define _Nullable
#define _Nonnull
#define _Null_unspecified
#endif
#define SWIFT_EXTERN extern
#define SWIFT_NOEXCEPT
#define SWIFT_WARN_UNUSED_RESULT
typedef std::ptrdiff_t NSInteger;
typedef std::size_t NSUInteger;

#include "swift_exports.h"

namespace {

template <class H, class S> struct compatible : std::is_same<H, S> {};
template <> struct compatible<lds_runtime *, void *> : std::true_type {};
template <> struct compatible<std::size_t, NSInteger> : std::true_type {};
template <class H, class S> struct compatible<H *, S *> : compatible<H, S> {};
template <class H, class S> struct compatible<const H, const S> : compatible<H, S> {};
template <class R1, class... A1, class R2, class... A2>
struct compatible<R1(A1...), R2(A2...)>
    : std::bool_constant<sizeof...(A1) == sizeof...(A2) && compatible<R1, R2>::value &&
                         (compatible<A1, A2>::value && ...)> {};

template <class F> struct function_traits;
template <class R, class... A> struct function_traits<R(A...)> {
  using result = R;
  using params = std::tuple<A...>;
  static constexpr std::size_t arity = sizeof...(A);
};

template <class H, class S, std::size_t I>
constexpr bool param_compatible() {
  return compatible<std::tuple_element_t<I, typename function_traits<H>::params>,
                    std::tuple_element_t<I, typename function_traits<S>::params>>::value;
}

template <class H, class S, std::size_t... I>
constexpr int first_bad_param(std::index_sequence<I...>) {
  int bad = -1;
  ((bad < 0 && !param_compatible<H, S, I>() ? (bad = static_cast<int>(I)) : 0), ...);
  return bad;
}

// -1 when every parameter matches, else the index of the first one that does not.
template <class H, class S>
constexpr int bad_param() {
  if constexpr (function_traits<H>::arity != function_traits<S>::arity) {
    return -2;
  } else {
    return first_bad_param<H, S>(std::make_index_sequence<function_traits<H>::arity>{});
  }
}

}  // namespace

#define LDS_CHECK_SIGNATURE(name)                                                          \
  static_assert(function_traits<decltype(name)>::arity ==                                  \
                    function_traits<decltype(swift_##name)>::arity,                        \
                #name ": the parameter count differs from the Swift export");              \
  static_assert(compatible<function_traits<decltype(name)>::result,                        \
                           function_traits<decltype(swift_##name)>::result>::value,        \
                #name ": the return type differs from the Swift export");                  \
  static_assert(bad_param<decltype(name), decltype(swift_##name)>() == -1,                 \
                #name ": a parameter type differs from the Swift export (index shown)");

#include "checks.inc"

int main() { return 0; }

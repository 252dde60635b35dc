// Compiled by expect_compile_error.cmake, once per CASE_*: a complete description compiles; one
// that leaves out a field, or an enum table that names a value or uses a name twice, or leaves out
// an enumerator, does not.
#include <string>

#include "base/reflect.h"

namespace nccl_triage {

struct Pair {
  int a = 0;
  std::string b;
};
enum class Colour { kRed, kGreen };
// The last enumerator of a table that stops early: what adding a value and forgetting its name
// looks like.
enum class Shade : unsigned char { kLight, kDark, kBlack };

#if defined(CASE_VALUE_UNNAMED)
constexpr auto NamesOf(Type<Shade>) {
  return std::array{Named(Shade::kLight, "light"), Named(Shade::kDark, "dark")};
}
#else
constexpr auto NamesOf(Type<Shade>) {
  return std::array{Named(Shade::kLight, "light"), Named(Shade::kDark, "dark"),
                    Named(Shade::kBlack, "black")};
}
#endif

#if defined(CASE_VALID) || defined(CASE_VALUE_UNNAMED)
constexpr auto FieldsOf(Type<Pair>) {
  return std::tuple{Field("a", &Pair::a), Field("b", &Pair::b)};
}
constexpr auto NamesOf(Type<Colour>) {
  return std::array{Named(Colour::kRed, "red"), Named(Colour::kGreen, "green")};
}
#elif defined(CASE_MISSING_FIELD)
constexpr auto FieldsOf(Type<Pair>) { return std::tuple{Field("a", &Pair::a)}; }
constexpr auto NamesOf(Type<Colour>) {
  return std::array{Named(Colour::kRed, "red"), Named(Colour::kGreen, "green")};
}
#elif defined(CASE_VALUE_TWICE)
constexpr auto FieldsOf(Type<Pair>) {
  return std::tuple{Field("a", &Pair::a), Field("b", &Pair::b)};
}
constexpr auto NamesOf(Type<Colour>) {
  return std::array{Named(Colour::kRed, "red"), Named(Colour::kRed, "green")};
}
#elif defined(CASE_NAME_TWICE)
constexpr auto FieldsOf(Type<Pair>) {
  return std::tuple{Field("a", &Pair::a), Field("b", &Pair::b)};
}
constexpr auto NamesOf(Type<Colour>) {
  return std::array{Named(Colour::kRed, "red"), Named(Colour::kGreen, "red")};
}
#else
#error "define one of CASE_VALID, CASE_MISSING_FIELD, CASE_VALUE_TWICE, CASE_NAME_TWICE, CASE_VALUE_UNNAMED"
#endif

int Use() {
  Pair p;
  int n = 0;
  ForEachField(p, [&](std::string_view, const auto&) { ++n; });
  const size_t names = ToString(Colour::kGreen).size() + ToString(Shade::kDark).size();
  return n + static_cast<int>(names);
}

}  // namespace nccl_triage

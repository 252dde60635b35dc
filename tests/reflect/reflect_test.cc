// The reflection layer on a small model of its own: fields visited in order, JSON written and read
// for every kind of field, and the reader's errors for a missing field, a wrong type and an unknown
// enum name (a clear message naming the place, never a crash).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/reflect.h"
#include "core/json_reflect.h"

namespace nccl_triage {
namespace {

using json = nlohmann::json;

enum class Shade { kLight, kDark };
constexpr auto NamesOf(Type<Shade>) {
  return std::array{Named(Shade::kLight, "light"), Named(Shade::kDark, "dark")};
}

struct Leaf {
  int n = 0;
  Shade shade = Shade::kLight;
  friend bool operator==(const Leaf&, const Leaf&) = default;
};
constexpr auto FieldsOf(Type<Leaf>) {
  return std::tuple{Field("n", &Leaf::n), Field("shade", &Leaf::shade)};
}

struct Tree {
  std::string name;
  bool flag = false;
  double ratio = 0;
  uint16_t small = 0;
  std::optional<Leaf> maybe;
  std::vector<Leaf> leaves;
  std::map<std::string, uint64_t> counts;
  friend bool operator==(const Tree&, const Tree&) = default;
};
constexpr auto FieldsOf(Type<Tree>) {
  return std::tuple{Field("name", &Tree::name),     Field("flag", &Tree::flag),
                    Field("ratio", &Tree::ratio),   Field("small", &Tree::small),
                    Field("maybe", &Tree::maybe),   Field("leaves", &Tree::leaves),
                    Field("counts", &Tree::counts)};
}

Tree Full() {
  return {"oak", true, 0.5, 65535, Leaf{3, Shade::kDark}, {{1, Shade::kLight}, {2, Shade::kDark}},
          {{"a", 18446744073709551615ull}}};
}

std::string Error(const json& j) {
  Tree t;
  Status st = FromJsonValue(j, "tree", t);
  EXPECT_FALSE(st.ok()) << j.dump();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  return st.message();
}

TEST(Reflect, VisitsTheDescribedFieldsInOrder) {
  Tree t = Full();
  std::vector<std::string> names;
  ForEachField(t, [&](std::string_view name, const auto&) { names.emplace_back(name); });
  EXPECT_EQ(names, (std::vector<std::string>{"name", "flag", "ratio", "small", "maybe", "leaves",
                                             "counts"}));
  const Tree& c = t;
  int n = 0;
  ForEachField(c, [&](std::string_view, const auto&) { ++n; });
  EXPECT_EQ(n, 7);
}

TEST(Reflect, EnumNamesBothWays) {
  EXPECT_EQ(ToString(Shade::kDark), "dark");
  EXPECT_EQ(FromString<Shade>("light"), Shade::kLight);
  EXPECT_EQ(FromString<Shade>("grey"), std::nullopt);
  EXPECT_EQ(AllValues<Shade>(), (std::array{Shade::kLight, Shade::kDark}));
  static_assert(ToString(Shade::kLight) == "light");  // usable in constant expressions
}

// The compiler names an enumerator and writes any other value as a cast: how an enumerator left
// out of its table is found (a table without Shade::kDark does not compile; see compile_fail).
enum class Wide : int16_t { kLow = -3, kHigh = 200 };
constexpr auto NamesOf(Type<Wide>) {
  return std::array{Named(Wide::kLow, "low"), Named(Wide::kHigh, "high")};
}

TEST(Reflect, EnumeratorsAreToldFromOtherValues) {
  static_assert(reflect_internal::IsEnumerator<Shade::kDark>());
  static_assert(!reflect_internal::IsEnumerator<static_cast<Shade>(2)>());
  static_assert(!reflect_internal::IsEnumerator<static_cast<Shade>(-1)>());
  static_assert(reflect_internal::IsEnumerator<Wide::kLow>());
  static_assert(reflect_internal::IsEnumerator<Wide::kHigh>());
  static_assert(!reflect_internal::IsEnumerator<static_cast<Wide>(0)>());
  // The window reaches 16 past both ends of the table, inside the underlying type.
  static_assert(reflect_internal::ScanWindow<int16_t>(-3, 200) ==
                std::pair<long long, long long>{-19, 216});
  static_assert(reflect_internal::ScanWindow<uint8_t>(0, 3) ==
                std::pair<long long, long long>{0, 19});
  static_assert(reflect_internal::ScanWindow<uint8_t>(250, 255) ==
                std::pair<long long, long long>{234, 255});
  EXPECT_EQ(ToString(Wide::kHigh), "high");
}

TEST(ReflectJson, WritesEveryKindOfField) {
  EXPECT_EQ(ToJsonValue(Full()).dump(),
            R"({"counts":{"a":18446744073709551615},"flag":true,"leaves":[{"n":1,"shade":"light"},)"
            R"({"n":2,"shade":"dark"}],"maybe":{"n":3,"shade":"dark"},"name":"oak","ratio":0.5,)"
            R"("small":65535})");
  EXPECT_TRUE(ToJsonValue(Tree{})["maybe"].is_null());
}

TEST(ReflectJson, RoundTripsThroughText) {
  Tree back;
  ASSERT_TRUE(FromJsonValue(json::parse(ToJsonValue(Full()).dump()), "tree", back).ok());
  EXPECT_EQ(back, Full());
}

TEST(ReflectJson, AbsentFieldsKeepTheirDefaultsAndNullEmptiesAnOptional) {
  Tree t;
  t.ratio = 7;
  ASSERT_TRUE(FromJsonValue(json{{"name", "elm"}, {"maybe", nullptr}}, "tree", t).ok());
  EXPECT_EQ(t.name, "elm");
  EXPECT_EQ(t.ratio, 7);
  EXPECT_FALSE(t.maybe.has_value());
  ASSERT_TRUE(FromJsonValue(json{{"leaves", json::array({json::object()})}}, "tree", t).ok());
  EXPECT_EQ(t.leaves, std::vector<Leaf>{Leaf{}});
}

TEST(ReflectJson, ErrorsNameThePlaceAndTheProblem) {
  EXPECT_EQ(Error(json::array()), "tree: expected an object");
  EXPECT_EQ(Error(json{{"name", 1}}), "tree.name: expected a string");
  EXPECT_EQ(Error(json{{"flag", "yes"}}), "tree.flag: expected true or false");
  EXPECT_EQ(Error(json{{"ratio", "half"}}), "tree.ratio: expected a number");
  EXPECT_EQ(Error(json{{"small", 65536}}), "tree.small: number out of range");
  EXPECT_EQ(Error(json{{"small", -1}}), "tree.small: number out of range");
  EXPECT_EQ(Error(json{{"small", 1.5}}), "tree.small: expected an integer");
  EXPECT_EQ(Error(json{{"maybe", 3}}), "tree.maybe: expected an object");
  EXPECT_EQ(Error(json{{"leaves", json::object()}}), "tree.leaves: expected an array");
  EXPECT_EQ(Error(json{{"leaves", {{{"n", 1}}, {{"n", "2"}}}}}),
            "tree.leaves[1].n: expected an integer");
  EXPECT_EQ(Error(json{{"leaves", {{{"shade", "grey"}}}}}),
            "tree.leaves[0].shade: unknown value 'grey'; expected one of light, dark");
  EXPECT_EQ(Error(json{{"maybe", {{"shade", 1}}}}), "tree.maybe.shade: expected a string");
  EXPECT_EQ(Error(json{{"counts", {{"x", -2}}}}), "tree.counts.x: number out of range");
  EXPECT_EQ(Error(json{{"counts", json::array()}}), "tree.counts: expected an object");
}

}  // namespace
}  // namespace nccl_triage

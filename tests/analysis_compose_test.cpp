// Suggestions applied together (analysis/compose.h): two compose only where, in every stream
// both change, the spans of instructions they touch do not overlap; a combined suggestion holds
// every part's moves and edits, and its estimate is the parts' sum capped at the run's headroom
// (no change can save more than the run's distance to its own lower bound). No SystemC.
#include <gtest/gtest.h>

#include "analysis/compose.h"

namespace xpu::analysis {
namespace {

Suggestion moving(std::uint32_t stream, std::uint64_t from, std::uint64_t before, Tick saving) {
    Suggestion s;
    s.kind = "reorder";
    s.where = "op" + std::to_string(from);
    s.estimated_saving = saving;
    s.moves.push_back({stream, from, before, 0});
    return s;
}

TEST(Compose, DisjointSpansInOneStreamCompose) {
    const Suggestion a = moving(0, 10, 5, 100), b = moving(0, 30, 20, 50);
    EXPECT_TRUE(composable(a, b));
    EXPECT_TRUE(composable(b, a));
}

TEST(Compose, OverlappingSpansDoNot) {
    // a touches [5, 10], b touches [8, 30]: a move of one could change what the other moved past.
    const Suggestion a = moving(0, 10, 5, 100), b = moving(0, 30, 8, 50);
    EXPECT_FALSE(composable(a, b));
    EXPECT_FALSE(composable(b, a));
    // A deletion touches only the deleted instruction: inside the other's span, it overlaps.
    Suggestion d;
    d.kind = "drop_wait";
    d.moves.push_back({0, 7, Move::kDelete, 0});
    EXPECT_FALSE(composable(a, d));
    d.moves[0].from = 11;
    EXPECT_TRUE(composable(a, d));
}

TEST(Compose, DifferentStreamsCompose) {
    EXPECT_TRUE(composable(moving(0, 10, 5, 1), moving(1, 10, 5, 1)));
}

TEST(Compose, AdviceWithoutAPatchNeverComposes) {
    Suggestion advice;
    advice.kind = "collective_algorithm";
    EXPECT_FALSE(composable(advice, moving(0, 10, 5, 1)));
    EXPECT_FALSE(composable(moving(0, 10, 5, 1), advice));
}

TEST(Compose, CombinedHoldsEveryChangeAndCapsTheEstimate) {
    const Suggestion a = moving(0, 10, 5, 100), b = moving(1, 30, 20, 50);
    const Suggestion c = compose({&a, &b}, 1000);
    EXPECT_EQ(c.kind, "combined");
    ASSERT_EQ(c.moves.size(), 2u);
    EXPECT_EQ(c.moves[0].stream, 0u);
    EXPECT_EQ(c.moves[1].stream, 1u);
    EXPECT_EQ(c.estimated_saving, 150);
    EXPECT_NE(c.where.find("reorder at op10"), std::string::npos);
    EXPECT_NE(c.where.find("reorder at op30"), std::string::npos);
    EXPECT_FALSE(c.estimate_capped);
    // The sum above the headroom: capped, and marked so.
    const Suggestion capped = compose({&a, &b}, 120);
    EXPECT_EQ(capped.estimated_saving, 120);
    EXPECT_TRUE(capped.estimate_capped);
}

}  // namespace
}  // namespace xpu::analysis

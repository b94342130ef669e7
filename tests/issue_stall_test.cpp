// The stall rule shared by the waveforms' stall signal and the stall analysis
// (traces/issue_stall.h): pieces in order, tiling [t0, max(issue, t0)), clamped, none empty.
#include <gtest/gtest.h>

#include <random>

#include "traces/issue_stall.h"

using namespace xpu;
using trace::IssueGap;
using trace::IssueWait;
using trace::split_issue_gap;

TEST(IssueStall, SupplyThenOperandsThenAcceptance) {
    IssueGap g[3];
    ASSERT_EQ(split_issue_gap(100, 130, 170, 200, g), 3);
    EXPECT_EQ(g[0].begin, 100u);
    EXPECT_EQ(g[0].end, 130u);
    EXPECT_EQ(g[0].why, IssueWait::Supply);
    EXPECT_EQ(g[1].begin, 130u);
    EXPECT_EQ(g[1].end, 170u);
    EXPECT_EQ(g[1].why, IssueWait::Operands);
    EXPECT_EQ(g[2].begin, 170u);
    EXPECT_EQ(g[2].end, 200u);
    EXPECT_EQ(g[2].why, IssueWait::Acceptance);
}

TEST(IssueStall, TimesBeforeTheGapOrPastTheIssueAreClamped) {
    IssueGap g[3];
    // Arrived and ready before t0: only acceptance.
    ASSERT_EQ(split_issue_gap(100, 10, 50, 200, g), 1);
    EXPECT_EQ(g[0].begin, 100u);
    EXPECT_EQ(g[0].end, 200u);
    EXPECT_EQ(g[0].why, IssueWait::Acceptance);
    // Issued when ready: supply and operands only.
    ASSERT_EQ(split_issue_gap(100, 120, 200, 200, g), 2);
    EXPECT_EQ(g[1].end, 200u);
    EXPECT_EQ(g[1].why, IssueWait::Operands);
    // Ready before arrival counts from arrival; a ready past the issue stops at the issue.
    ASSERT_EQ(split_issue_gap(0, 50, 20, 80, g), 2);
    EXPECT_EQ(g[0].why, IssueWait::Supply);
    EXPECT_EQ(g[1].why, IssueWait::Acceptance);
    EXPECT_EQ(g[1].begin, 50u);
    ASSERT_EQ(split_issue_gap(0, 0, 500, 80, g), 1);
    EXPECT_EQ(g[0].why, IssueWait::Operands);
    EXPECT_EQ(g[0].end, 80u);
    // No gap: t0 at or past the issue.
    EXPECT_EQ(split_issue_gap(200, 0, 0, 200, g), 0);
    EXPECT_EQ(split_issue_gap(300, 250, 260, 200, g), 0);
}

TEST(IssueStall, PiecesTileTheGapInOrder) {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<Tick> t(0, 1000);
    for (int i = 0; i < 10000; ++i) {
        const Tick t0 = t(rng), a = t(rng), r = t(rng), is = t(rng);
        IssueGap g[3];
        const int n = split_issue_gap(t0, a, r, is, g);
        Tick at = t0;
        for (int k = 0; k < n; ++k) {
            EXPECT_EQ(g[k].begin, at);
            EXPECT_GT(g[k].end, g[k].begin);
            if (k) {
                EXPECT_GT(static_cast<int>(g[k].why), static_cast<int>(g[k - 1].why));
            }
            at = g[k].end;
        }
        EXPECT_EQ(at, std::max(is, t0));
    }
}

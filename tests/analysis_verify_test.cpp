// The pieces of verification by replay that need no simulator: the run's lower bounds (closed
// forms from the bytes and busy times of a hand-built run), the cap of estimates at the headroom,
// the ranking by verdict and measured saving, and the verification file --apply reads back.
// The replays themselves are checked end to end in tests/e2e/verify.sh.
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "analysis/bounds.h"
#include "analysis/verify.h"
#include "analysis_sample.h"

using namespace xpu;
using namespace xpu::analysis;

namespace {

Suggestion sug(const char* kind, Tick est) {
    Suggestion s;
    s.kind = kind;
    s.estimated_saving = est;
    return s;
}

Suggestion measured(const char* kind, Tick est, std::int64_t saving, Verdict v) {
    Suggestion s = sug(kind, est);
    s.measured = true;
    s.measured_saving = saving;
    s.verdict = v;
    return s;
}

}  // namespace

// HBM bound = bytes moved on the chip's channels / its peak (1 GB/s = 1 byte/ns); link bound =
// bytes over the link / its bandwidth; compute bound = the summed streaming time of a matrix
// unit's matmuls (its weight pushes overlap streaming depending on the order: not counted).
TEST(RunBounds, ClosedFormsOfBytesAndBusyTime) {
    RunData run;
    run.units = {{"xpu.chip0.hbm", "HbmController", Role::Hbm, 0, 1000, 0},
                 {"xpu.links.chip0_xp", "IciLink", Role::Link, -1, 50, 0},
                 {"xpu.chip0.core0.mxu0", "MatrixUnit", Role::Matrix, 0, 0, 0},
                 {"xpu.chip0.dma0", "DmaEngine", Role::Dma, 0, 300, 0}};
    run.hbm_pieces = {{0, 0, 600'000, 0, 10}, {0, 1, 400'000, 0, 10}};  // 1 MB at 1000 GB/s: 1 us
    MemTxn link;
    link.target = 1;
    link.bytes = 25'000;  // at 50 GB/s: 500 ns
    run.mems = {link};
    UnitOp push, mm1, mm2;  // only the matmuls' streaming counts: 300 + 400 ns
    push = {2, kNone, 0, Opcode::MPush, 0, 0, 900'000, 900'000};
    mm1 = {2, kNone, 1, Opcode::MatMul, 0, 100'000, 400'000, 500'000};
    mm2 = {2, kNone, 2, Opcode::MatMul, 0, 400'000, 800'000, 900'000};
    run.unit_ops = {push, mm1, mm2};
    const RunBounds b = run_bounds(run, 1'250'000);
    ASSERT_EQ(b.bounds.size(), 3u);
    EXPECT_EQ(b.bounds[0].name, "HBM");
    EXPECT_EQ(b.bounds[0].time, 1'000'000u);
    EXPECT_EQ(b.bounds[1].name, "link");
    EXPECT_EQ(b.bounds[1].time, 500'000u);
    EXPECT_EQ(b.bounds[2].name, "compute");
    EXPECT_EQ(b.bounds[2].time, 700'000u);
    EXPECT_EQ(b.lower, 1'000'000u);
    EXPECT_EQ(b.headroom, 250'000u);
    EXPECT_NE(describe_headroom(b, 1'250'000).find("25.0% above its HBM bound"), std::string::npos)
        << describe_headroom(b, 1'250'000);
}

TEST(RunBounds, EstimatesCappedAtHeadroomAndNumbered) {
    RunBounds b;
    b.headroom = 1000;
    std::vector<Suggestion> s = {sug("a", 500), sug("b", 5000), sug("c", 0), sug("d", 1000)};
    cap_estimates(b, s);
    ASSERT_EQ(s.size(), 3u);  // nothing to gain: dropped
    for (const auto& x : s) EXPECT_LE(x.estimated_saving, 1000u) << x.kind;
    EXPECT_EQ(s[0].kind, "b");  // capped to 1000, ties keep their order
    EXPECT_EQ(s[1].kind, "d");
    EXPECT_EQ(s[2].kind, "a");
    EXPECT_EQ(s[0].candidate, 1u);
    EXPECT_EQ(s[2].candidate, 3u);
}

TEST(Verify, RankedVerifiedByMeasuredThenNotVerifiedThenNoGain) {
    std::vector<Suggestion> s = {measured("slower", 900, -5000, Verdict::NoGain), sug("unreplayed", 800),
                                 measured("small", 700, 100, Verdict::Verified), measured("big", 100, 4000, Verdict::Verified),
                                 measured("tiny", 50, 2, Verdict::NoGain)};
    rank_by_verdict(s);
    const char* want[] = {"big", "small", "unreplayed", "tiny", "slower"};
    for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(s[i].kind, want[i]) << i;
}

TEST(Verify, FloorIsAThousandthOfTheRunAndAtLeastOneNanosecond) {
    EXPECT_EQ(verify_floor(10'000'000), 10'000u);
    EXPECT_EQ(verify_floor(50'000), 1000u);
}

// xpu_analyze --apply N reads back the ranking the report showed.
TEST(Verify, FileRoundTripGivesTheSameRanking) {
    const RunData run = sample::run();
    Analysis a = sample::analysis(run);
    for (std::size_t i = 0; i < a.suggestions.size(); ++i) a.suggestions[i].candidate = static_cast<std::uint32_t>(i + 1);
    Analysis fresh = a;  // what a new analysis of the same run gives: estimate order
    a.suggestions[2].measured = true;
    a.suggestions[2].measured_saving = 123456;
    a.suggestions[2].verdict = Verdict::Verified;
    a.suggestions[2].patch_crc = 42;
    rank_by_verdict(a.suggestions);
    const std::string path = (std::filesystem::temp_directory_path() / ("verification_test_" + std::to_string(::getpid()) + ".txt")).string();
    write_verification(path, a);
    ASSERT_TRUE(read_verification(path, fresh));
    ASSERT_EQ(fresh.suggestions.size(), a.suggestions.size());
    for (std::size_t i = 0; i < a.suggestions.size(); ++i) {
        EXPECT_EQ(fresh.suggestions[i].kind, a.suggestions[i].kind) << i;
        EXPECT_EQ(fresh.suggestions[i].verdict, a.suggestions[i].verdict) << i;
        EXPECT_EQ(fresh.suggestions[i].measured_saving, a.suggestions[i].measured_saving) << i;
        EXPECT_EQ(fresh.suggestions[i].patch_crc, a.suggestions[i].patch_crc) << i;
    }
    EXPECT_EQ(fresh.suggestions[0].kind, "drop_wait");  // the verified one first
    Analysis other = sample::analysis(run);
    other.suggestions.pop_back();  // a different analysis: refused
    EXPECT_THROW(read_verification(path, other), std::runtime_error);
    std::remove(path.c_str());
    EXPECT_FALSE(read_verification(path, other));
}

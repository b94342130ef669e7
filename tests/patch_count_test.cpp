// What a suggestion changes, counted one way (analysis/patch.h: count_changes), for the finders'
// texts, report.html and xpu_analyze --apply alike: an instruction dropped; else moved if it
// changes place among the instructions that are not dropped; else rewritten if an edit changes
// it; and the instructions an edit puts after it, inserted. No SystemC.
#include <gtest/gtest.h>

#include "analysis/patch.h"

namespace xpu::analysis {
namespace {

RunData program(std::size_t n) {
    RunData r;
    r.streams.resize(1);
    r.streams[0].code.resize(n);
    return r;
}

TEST(PatchCount, AListScheduledWindowCountsOnlyWhatChangesPlace) {
    const RunData r = program(10);
    Suggestion s;
    // The window [3, 6) in the order 4, 3, 5: 5 stays where it was.
    s.moves = {{0, 4, 6, 1}, {0, 3, 6, 2}, {0, 5, 6, 3}};
    const PatchCount c = count_changes(r, s);
    EXPECT_EQ(c.moved, 2u);
    EXPECT_EQ(c.total(), 2u);
    EXPECT_EQ(changes_text(c), "2 instructions change place");
    // Two windows, the second after the first: positions after a permutation are unchanged.
    s.moves.push_back({0, 7, 9, 1});
    s.moves.push_back({0, 8, 9, 2});
    EXPECT_EQ(count_changes(r, s).moved, 2u);
    s.moves[3] = {0, 8, 9, 1};  // the second window swapped: 8, 7
    s.moves[4] = {0, 7, 9, 2};
    EXPECT_EQ(count_changes(r, s).moved, 4u);
    s.moves.push_back({0, 7, Move::kDelete, 0});  // an instruction moved twice: the first move counts
    EXPECT_EQ(count_changes(r, s).moved, 4u);
    EXPECT_EQ(count_changes(r, s).deleted, 0u);
}

// counted_changes uses the count kept by count_and_keep_changes only for the moves and edits it
// was counted on: here a kept count made false on purpose shows which one is returned.
TEST(PatchCount, AKeptCountServesOnlyTheMovesAndEditsItWasCountedOn) {
    const RunData r = program(10);
    Suggestion s;
    s.moves = {{0, 4, 6, 1}, {0, 3, 6, 2}, {0, 5, 6, 3}};  // the window [3, 6) as 4, 3, 5
    EXPECT_EQ(count_and_keep_changes(r, s).moved, 2u);
    ASSERT_TRUE(s.counted.has_value());
    s.counted->count.moved = 99;  // as if kept: returned while the moves are the same
    EXPECT_EQ(counted_changes(r, s).moved, 99u);
    Suggestion moved_away = std::move(s);  // a move keeps the buffers
    EXPECT_EQ(counted_changes(r, moved_away).moved, 99u);
    Suggestion copy = moved_away;  // a copy has buffers of its own: counted again
    EXPECT_EQ(counted_changes(r, copy).moved, 2u);
    moved_away.moves.reserve(16);  // another buffer
    EXPECT_EQ(counted_changes(r, moved_away).moved, 2u);
    Suggestion grown;
    grown.moves.reserve(8);
    grown.moves = {{0, 4, 6, 1}, {0, 3, 6, 2}, {0, 5, 6, 3}};
    count_and_keep_changes(r, grown);
    grown.counted->count.moved = 99;
    grown.moves.push_back({0, 7, Move::kDelete, 0});  // added in place (same buffer): counted again
    EXPECT_EQ(counted_changes(r, grown), count_changes(r, grown));
    EXPECT_EQ(counted_changes(r, grown).deleted, 1u);
}

TEST(PatchCount, HoistsDeletesAndEdits) {
    const RunData r = program(12);
    Suggestion s;
    s.moves = {{0, 10, 5, 0}};  // hoisted: changes place; the ones it passes do not count
    EXPECT_EQ(count_changes(r, s).moved, 1u);
    // 9 hoisted before 3, then 10 put before 9's old place: 10 ends where it was.
    s.moves = {{0, 9, 3, 0}, {0, 10, 9, 0}};
    EXPECT_EQ(count_changes(r, s).moved, 1u);
    // A deletion shifts what follows; that is not a change of place.
    s.moves = {{0, 1, Move::kDelete, 0}, {0, 6, 8, 1}, {0, 7, 8, 2}};
    PatchCount c = count_changes(r, s);
    EXPECT_EQ(c.deleted, 1u);
    EXPECT_EQ(c.moved, 0u);
    // Edits: rewritten unless dropped or moved (counted once).
    Instruction in;
    in.op = Opcode::VAlu;  // not the program's (default) instructions
    s.moves = {{0, 1, Move::kDelete, 0}, {0, 10, 5, 0}};
    s.edits = {{0, 1, in, {}}, {0, 10, in, {}}, {0, 2, in, {}}, {0, 2, in, {}}};
    c = count_changes(r, s);
    EXPECT_EQ(c.deleted, 1u);
    EXPECT_EQ(c.moved, 1u);
    EXPECT_EQ(c.rewritten, 1u);
    EXPECT_EQ(changes_text(c), "1 instruction changes place, 1 dropped, 1 rewritten");
    EXPECT_EQ(changes_text({}), "no instruction changes");
}

// An edit that leaves its instruction as it was and only puts new ones after it (pipeline_store's
// pieces, behind the last write of their bytes) rewrites nothing: they count as inserted.
TEST(PatchCount, InstructionsPutAfterAnUnchangedOneAreInsertedNotRewritten) {
    const RunData r = program(6);
    Instruction piece;
    piece.op = Opcode::Dma;
    Suggestion s;
    s.moves = {{0, 5, Move::kDelete, 0}};
    s.edits = {{0, 2, r.streams[0].code[2], {piece, piece}}, {0, 4, r.streams[0].code[4], {piece}}};
    const PatchCount c = count_changes(r, s);
    EXPECT_EQ(c.rewritten, 0u);
    EXPECT_EQ(c.inserted, 3u);
    EXPECT_EQ(c.deleted, 1u);
    EXPECT_EQ(c.total(), 4u);
    EXPECT_EQ(changes_text(c), "1 instruction dropped, 3 inserted");
    s.edits[1].in = piece;  // now it changes too
    EXPECT_EQ(changes_text(count_changes(r, s)), "1 instruction dropped, 1 rewritten, 3 inserted");
}

}  // namespace
}  // namespace xpu::analysis

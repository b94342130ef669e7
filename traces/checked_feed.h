// CheckedFeed: the instructions of a trace, checked once, on the check's thread, handed to the
// run's readers. sim_main checks a long trace on a second thread while the run goes; the check
// reads the file, verifies its CRCs and decodes every instruction anyway, so the run takes the
// checked instructions from it instead of reading the trace a second time. Only checked
// instructions enter the feed: the run never executes one the check has not passed.
//
// A piece carries its instructions encoded (the trace format's bytes, ~13 an instruction on a
// GEMM), not decoded (96 bytes each): every byte of a piece is written on the check's core and
// read on the run's, and moving the decoded records between the cores cost more than decoding
// them (10.3 M-instruction GEMM: the check's decode took ~58 ns an instruction writing into
// pieces the run's core had just read, ~11 ns into a buffer of its own). The run's reader
// decodes the bytes again (StreamReader::read_in_place), into a buffer that stays on its core.
//
// Per stream, a queue of at most `depth` pieces of up to `piece` instructions: memory is bounded
// whatever the trace's length, and the check fills the streams in turn (one piece to each with
// room), so a run waiting on any stream is never waiting behind a full queue of another.
//
// A StreamReader of a TraceFile with a feed (TraceFile::with_feed) takes from it once the check
// has started (start()); made before, it reads the file itself (a run whose trace was checked
// first, tests).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace xpu::trace {

// `count` checked instructions, encoded back to back in `bytes` as in the trace file
// (traces/trace_format.h), then kDecodePadding zero bytes: the decoder may read that far past
// an instruction's start.
struct FeedPiece {
    std::vector<std::uint8_t> bytes;
    std::size_t count = 0;
};

class CheckedFeed {
public:
    // `streams`: the trace's streams; `piece`: instructions per piece; `depth`: pieces queued per
    // stream at most (both at least 1).
    CheckedFeed(std::size_t streams, std::size_t piece, std::size_t depth);

    std::size_t piece() const { return piece_; }

    // ---- The checking side (one thread).
    void start();  // from now on readers take from the feed
    bool started() const;
    // True while a piece pushed to stream s would be taken by a reader: the run still wants
    // instructions (no fail(), no detach()) and s's queue has room.
    bool wants(std::size_t s) const;
    // True once nobody will take what is pushed (fail() or detach()): the check goes on alone.
    bool closed() const;
    // A piece to fill (recycled: its contents stale).
    FeedPiece blank();
    // Appends a piece of checked instructions to stream s's queue (it must have room).
    void push(std::size_t s, FeedPiece&& piece);
    // Stream s gets no more pieces (all pushed, or not checked further): no room is waited for.
    void ended(std::size_t s);
    // Waits until a stream not ended has room again, something closed the feed, or `timeout_ms`
    // passed (readers wake it once a queue is half empty: it may find room before that).
    void wait_for_room(int timeout_ms);
    // The check found a problem, or was stopped: readers that need more fail from now on.
    void fail();
    // The check passed every instruction (readers may still drain their queues).
    void passed_all();

    // ---- The running side.
    // Swaps the front piece of stream s into `held`, waiting until there is one, and returns
    // how many instructions `held` now holds, or 0 if the check ended without passing them
    // (fail(): the caller stops; the check's own result says why). `held`'s previous contents
    // go back to the pieces blank() hands out. One lock per piece.
    std::size_t take_piece(std::size_t s, FeedPiece& held);
    // Nobody takes any more (the run is over): a check blocked on full queues goes on alone.
    void detach();

private:
    struct Queue {
        std::deque<FeedPiece> pieces;
        bool ended = false;
    };
    const std::size_t piece_, depth_;
    mutable std::mutex m_;
    std::condition_variable room_, data_;
    std::vector<Queue> queues_;
    std::vector<FeedPiece> spare_;  // consumed pieces, for blank()
    bool started_ = false, failed_ = false, detached_ = false, passed_ = false;
};

}  // namespace xpu::trace

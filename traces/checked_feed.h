// CheckedFeed: the instructions of a trace, decoded and checked once, on the check's thread,
// handed to the run's readers. sim_main checks a long trace on a second thread while the run
// goes; the check reads and decodes every instruction anyway, so the run takes the decoded
// instructions from it instead of decoding the trace a second time (on a 10 M-instruction GEMM
// that decode was a tenth of the run's thread). Only checked instructions enter the feed: the
// run never executes one the check has not passed.
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

#include "traces/instruction.h"

namespace xpu::trace {

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
    // A piece to fill (recycled: any size, its contents stale), with capacity for piece().
    std::vector<Instruction> blank();
    // Appends a piece of checked instructions to stream s's queue (it must have room).
    void push(std::size_t s, std::vector<Instruction>&& piece);
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
    // Copies up to `max` (> 0) instructions of stream s into out, waiting until there are some;
    // returns how many, or 0 if the check ended without passing them (fail(): the caller stops;
    // the check's own result says why).
    std::size_t take(std::size_t s, Instruction* out, std::size_t max);
    // The same without the copy: swaps the front piece of stream s (what take() has not taken
    // of it) into `held` and returns how many instructions `held` now holds, or 0 as take()
    // does. `held`'s previous contents go back to the pieces blank() hands out. The reader then
    // reads `held` in place: one lock per piece instead of per batch, and no instruction is
    // copied again on the run's core (it was 96 bytes written and read back per instruction).
    std::size_t take_piece(std::size_t s, std::vector<Instruction>& held);
    // Nobody takes any more (the run is over): a check blocked on full queues goes on alone.
    void detach();

private:
    struct Queue {
        std::deque<std::vector<Instruction>> pieces;
        std::size_t head = 0;  // instructions of pieces.front() already taken
        bool ended = false;
    };
    const std::size_t piece_, depth_;
    mutable std::mutex m_;
    std::condition_variable room_, data_;
    std::vector<Queue> queues_;
    std::vector<std::vector<Instruction>> spare_;  // consumed pieces, for blank()
    bool started_ = false, failed_ = false, detached_ = false, passed_ = false;
};

}  // namespace xpu::trace

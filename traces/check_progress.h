// CheckProgress: how far a check of a trace running on another thread has got, stream by
// stream, so that a run which starts before the check ends never executes an instruction the
// check has not passed. sim_main checks the trace on a second thread while the run goes (the
// check reads and decodes the whole trace: up to a third of a run's time when it came first);
// a StreamReader of a TraceFile gated by it (TraceFile::with_gate) waits in read() until the
// instructions it returns have passed.
//
// Until start() nothing is gated: wait_for() returns true at once (a run whose trace was
// checked before, or never: tests).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace xpu::trace {

class CheckProgress {
public:
    explicit CheckProgress(std::size_t streams);

    // The checking side (one thread).
    void start();                                          // from now on readers wait
    void passed(std::size_t stream, std::uint64_t count);  // stream's instructions [0, count) are fine
    void finish(bool all_passed);                          // false: a problem found, or stopped

    // The reading side: blocks until instructions [0, count) of `stream` have passed (true), or
    // the check ended without passing every instruction (false: stop, the check's own result
    // says why).
    bool wait_for(std::size_t stream, std::uint64_t count) const;

private:
    enum State : int { kOpen, kChecking, kPassed, kFailed };
    std::atomic<int> state_{kOpen};
    std::size_t streams_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> passed_;
    mutable std::mutex m_;
    mutable std::condition_variable cv_;
};

}  // namespace xpu::trace

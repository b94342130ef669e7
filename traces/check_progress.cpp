#include "traces/check_progress.h"

namespace xpu::trace {

CheckProgress::CheckProgress(std::size_t streams)
    : streams_(streams), passed_(std::make_unique<std::atomic<std::uint64_t>[]>(streams == 0 ? 1 : streams)) {
    for (std::size_t s = 0; s < streams_; ++s) passed_[s].store(0, std::memory_order_relaxed);
}

void CheckProgress::start() { state_.store(kChecking, std::memory_order_release); }

void CheckProgress::passed(std::size_t stream, std::uint64_t count) {
    if (stream >= streams_) return;
    {
        // Under the lock: a reader between its test and its wait would miss the notification.
        std::lock_guard<std::mutex> lk(m_);
        passed_[stream].store(count, std::memory_order_release);
    }
    cv_.notify_all();
}

void CheckProgress::finish(bool all_passed) {
    {
        std::lock_guard<std::mutex> lk(m_);
        state_.store(all_passed ? kPassed : kFailed, std::memory_order_release);
    }
    cv_.notify_all();
}

bool CheckProgress::wait_for(std::size_t stream, std::uint64_t count) const {
    const int st = state_.load(std::memory_order_acquire);
    if (st == kOpen || st == kPassed) return true;
    if (st == kFailed || stream >= streams_) return false;
    if (passed_[stream].load(std::memory_order_acquire) >= count) return true;
    std::unique_lock<std::mutex> lk(m_);
    cv_.wait(lk, [&] {
        return state_.load(std::memory_order_acquire) != kChecking || passed_[stream].load(std::memory_order_acquire) >= count;
    });
    const int now = state_.load(std::memory_order_acquire);
    return now == kPassed || (now == kChecking && passed_[stream].load(std::memory_order_acquire) >= count);
}

}  // namespace xpu::trace

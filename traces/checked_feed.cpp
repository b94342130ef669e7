#include "traces/checked_feed.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace xpu::trace {

CheckedFeed::CheckedFeed(std::size_t streams, std::size_t piece, std::size_t depth)
    : piece_(std::max<std::size_t>(piece, 1)), depth_(std::max<std::size_t>(depth, 1)), queues_(streams) {}

void CheckedFeed::start() {
    std::lock_guard<std::mutex> lk(m_);
    started_ = true;
}

bool CheckedFeed::started() const {
    std::lock_guard<std::mutex> lk(m_);
    return started_;
}

bool CheckedFeed::wants(std::size_t s) const {
    std::lock_guard<std::mutex> lk(m_);
    return !failed_ && !detached_ && s < queues_.size() && queues_[s].pieces.size() < depth_;
}

bool CheckedFeed::closed() const {
    std::lock_guard<std::mutex> lk(m_);
    return failed_ || detached_;
}

std::vector<Instruction> CheckedFeed::blank() {
    std::vector<Instruction> v;
    {
        std::lock_guard<std::mutex> lk(m_);
        if (!spare_.empty()) {
            v = std::move(spare_.back());
            spare_.pop_back();
        }
    }
    v.reserve(piece_);  // not cleared: the producer resizes it, and equal sizes cost nothing
    return v;
}

void CheckedFeed::push(std::size_t s, std::vector<Instruction>&& piece) {
    if (piece.empty() || s >= queues_.size()) return;
    {
        std::lock_guard<std::mutex> lk(m_);
        queues_[s].pieces.push_back(std::move(piece));
    }
    data_.notify_all();
}

void CheckedFeed::ended(std::size_t s) {
    std::lock_guard<std::mutex> lk(m_);
    if (s < queues_.size()) queues_[s].ended = true;
}

void CheckedFeed::wait_for_room(int timeout_ms) {
    std::unique_lock<std::mutex> lk(m_);
    auto room = [&] {
        if (failed_ || detached_) return true;
        for (const auto& q : queues_)
            if (!q.ended && q.pieces.size() < depth_) return true;
        return false;
    };
    room_.wait_for(lk, std::chrono::milliseconds(timeout_ms), room);
}

void CheckedFeed::fail() {
    {
        std::lock_guard<std::mutex> lk(m_);
        failed_ = true;
    }
    data_.notify_all();
    room_.notify_all();
}

void CheckedFeed::passed_all() {
    {
        std::lock_guard<std::mutex> lk(m_);
        passed_ = true;
    }
    data_.notify_all();
}

void CheckedFeed::detach() {
    {
        std::lock_guard<std::mutex> lk(m_);
        detached_ = true;
        for (auto& q : queues_) {  // what is queued will not be taken: its memory goes now
            q.pieces.clear();
            q.head = 0;
        }
    }
    room_.notify_all();
}

std::size_t CheckedFeed::take(std::size_t s, Instruction* out, std::size_t max) {
    if (s >= queues_.size() || max == 0) return 0;
    std::unique_lock<std::mutex> lk(m_);
    Queue& q = queues_[s];
    data_.wait(lk, [&] { return failed_ || passed_ || detached_ || !q.pieces.empty(); });
    // After a failure nothing more runs, as when the check came first (the run stops at once).
    if (failed_) return 0;
    std::size_t n = 0;
    bool freed = false;
    while (n < max && !q.pieces.empty()) {
        std::vector<Instruction>& front = q.pieces.front();
        const std::size_t k = std::min(max - n, front.size() - q.head);
        std::memcpy(static_cast<void*>(out + n), front.data() + q.head, k * sizeof(Instruction));
        n += k;
        q.head += k;
        if (q.head == front.size()) {
            spare_.push_back(std::move(front));
            q.pieces.pop_front();
            q.head = 0;
            // The check is woken once half the queue is free, not for every piece: it then
            // fills several at a time instead of one per wake-up (a futex call on each side).
            freed = q.pieces.size() <= depth_ / 2;
        }
    }
    lk.unlock();
    if (freed) room_.notify_one();
    return n;
}

std::size_t CheckedFeed::take_piece(std::size_t s, std::vector<Instruction>& held) {
    if (s >= queues_.size()) return 0;
    std::unique_lock<std::mutex> lk(m_);
    Queue& q = queues_[s];
    data_.wait(lk, [&] { return failed_ || passed_ || detached_ || !q.pieces.empty(); });
    if (failed_ || q.pieces.empty()) return 0;  // as take(): nothing more runs after a failure
    std::vector<Instruction>& front = q.pieces.front();
    // A piece take() has begun (never when a reader uses one call only): its rest moves down.
    if (q.head) front.erase(front.begin(), front.begin() + static_cast<std::ptrdiff_t>(q.head));
    q.head = 0;
    held.swap(front);
    if (front.capacity()) spare_.push_back(std::move(front));
    q.pieces.pop_front();
    const bool freed = q.pieces.size() <= depth_ / 2;  // as take(): wake the check at half empty
    lk.unlock();
    if (freed) room_.notify_one();
    return held.size();
}

}  // namespace xpu::trace

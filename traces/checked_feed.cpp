#include "traces/checked_feed.h"

#include <algorithm>
#include <chrono>

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

FeedPiece CheckedFeed::blank() {
    FeedPiece v;
    std::lock_guard<std::mutex> lk(m_);
    if (!spare_.empty()) {
        v = std::move(spare_.back());
        spare_.pop_back();
    }
    return v;
}

void CheckedFeed::push(std::size_t s, FeedPiece&& piece) {
    if (piece.count == 0 || s >= queues_.size()) return;
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
        for (auto& q : queues_) q.pieces.clear();  // what is queued will not be taken: its memory goes now
    }
    room_.notify_all();
}

std::size_t CheckedFeed::take_piece(std::size_t s, FeedPiece& held) {
    if (s >= queues_.size()) return 0;
    std::unique_lock<std::mutex> lk(m_);
    Queue& q = queues_[s];
    data_.wait(lk, [&] { return failed_ || passed_ || detached_ || !q.pieces.empty(); });
    // After a failure nothing more runs, as when the check came first (the run stops at once).
    if (failed_ || q.pieces.empty()) return 0;
    FeedPiece& front = q.pieces.front();
    std::swap(held, front);
    if (front.bytes.capacity()) spare_.push_back(std::move(front));
    q.pieces.pop_front();
    // The check is woken once half the queue is free, not for every piece: it then fills
    // several at a time instead of one per wake-up (a futex call on each side).
    const bool freed = q.pieces.size() <= depth_ / 2;
    lk.unlock();
    if (freed) room_.notify_one();
    return held.count;
}

}  // namespace xpu::trace

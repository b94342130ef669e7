#include "analysis/wait_index.h"

#include <algorithm>

namespace xpu::analysis {

std::uint64_t WaitBlockIndex::key(const Access& a, bool write) {
    return (std::uint64_t(a.space) << 40) | (std::uint64_t(a.chip) << 24) | (std::uint64_t(a.vmem) << 8) | (write ? 1 : 0);
}

WaitBlockIndex::WaitBlockIndex(const Planner& plan, std::uint32_t s, std::uint64_t begin, const std::vector<std::uint32_t>& waits) {
    for (std::uint32_t w : waits) {
        bool opaque = false;
        for (const Raiser& r : plan.covered(s, begin + w)) {
            Access ra[2];
            int n = 0;
            if (!plan.raiser_accesses(r, ra, n)) {
                opaque = true;
                continue;
            }
            for (int x = 0; x < n; ++x) groups_[key(ra[x], ra[x].write)].entries.push_back({ra[x].lo, ra[x].hi, w});
        }
        if (opaque) opaque_.push_back(w);
    }
    for (auto& [k, g] : groups_) g.build();
}

void WaitBlockIndex::Group::build() {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.lo != b.lo ? a.lo < b.lo : a.hi != b.hi ? a.hi < b.hi : a.wait < b.wait;
    });
    leaves = 1;
    while (leaves < entries.size()) leaves *= 2;
    max_hi.assign(2 * leaves, 0);
    for (std::size_t i = 0; i < entries.size(); ++i) max_hi[leaves + i] = entries[i].hi;
    for (std::size_t i = leaves; i-- > 1;) max_hi[i] = std::max(max_hi[2 * i], max_hi[2 * i + 1]);
}

// The entries e with e.lo < hi and lo < e.hi (conflict()'s overlap test, which also counts an
// empty range inside another) of waits before `before`.
void WaitBlockIndex::Group::overlapping(std::uint64_t lo, std::uint64_t hi, std::uint32_t before, std::vector<std::uint32_t>& out) const {
    // entries [0, end) start before hi
    const std::size_t end = static_cast<std::size_t>(
        std::lower_bound(entries.begin(), entries.end(), hi, [](const Entry& e, std::uint64_t v) { return e.lo < v; }) - entries.begin());
    if (end == 0) return;
    // Depth-first over the nodes that hold an entry below `end` ending past lo.
    struct Node {
        std::size_t id, first, size;
    };
    Node stack[64];
    int top = 0;
    stack[top++] = {1, 0, leaves};
    while (top > 0) {
        const Node n = stack[--top];
        if (n.first >= end || max_hi[n.id] <= lo) continue;
        if (n.size == 1) {
            const Entry& e = entries[n.first];
            if (e.wait < before) out.push_back(e.wait);
            continue;
        }
        const std::size_t half = n.size / 2;
        stack[top++] = {2 * n.id + 1, n.first + half, half};
        stack[top++] = {2 * n.id, n.first, half};
    }
}

void WaitBlockIndex::blocking(const Access* acc, int na, std::uint32_t before, std::vector<std::uint32_t>& out) const {
    if (na <= 0) return;
    for (std::uint32_t w : opaque_) {
        if (w >= before) break;
        out.push_back(w);
    }
    for (int x = 0; x < na; ++x) {
        // a raiser's write conflicts with any access; its read only with a write
        for (bool write : {true, false}) {
            if (!write && !acc[x].write) continue;
            auto it = groups_.find(key(acc[x], write));
            if (it != groups_.end()) it->second.overlapping(acc[x].lo, acc[x].hi, before, out);
        }
    }
}

}  // namespace xpu::analysis

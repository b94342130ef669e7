// A stable sort for sequences that are mostly in order already (a run's events listed nearly
// in time order, liveness intervals nearly by writer): the elements in order stay where they
// are, the few others are sorted and merged in. O(n) plus the sort of the few, where a general
// sort would take n log n.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace xpu {

// Stable as a whole: a kept element precedes every set-aside one that compares equal to it in
// the input too (the kept ones never decrease: an equal one after them would have been kept),
// std::stable_sort keeps the order of the others, and std::inplace_merge puts the first range
// first on ties (its buffer is the size of the set-aside part).
template <class T, class Less>
void sort_mostly_sorted(std::vector<T>& v, Less less) {
    std::vector<T> aside;
    std::size_t kept = 0;
    for (std::size_t k = 0; k < v.size(); ++k) {
        if (kept == 0 || !less(v[k], v[kept - 1])) {
            if (kept != k) v[kept] = v[k];
            ++kept;
        } else {
            aside.push_back(v[k]);
        }
    }
    if (aside.empty()) return;
    std::stable_sort(aside.begin(), aside.end(), less);
    std::copy(aside.begin(), aside.end(), v.begin() + static_cast<std::ptrdiff_t>(kept));
    std::inplace_merge(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(kept), v.end(), less);
}

}  // namespace xpu

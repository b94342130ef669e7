// Why an in-order core issued nothing: the one rule shared by the waveforms' `stall` signal
// (platform/vcd_writer.cpp) and the stall analysis (analysis/attribution.cpp).
//
// The gap of an instruction runs from t0, the moment it could have issued (the end of its
// predecessor's issue slot), to its issue. In order, it was waiting for
//   [t0, arrival)     the instruction itself: fetch bandwidth or issue-queue room (supply),
//   [arrival, ready)  its operands: a producer's result (RAW) or readers of its destination (WAR),
//   [ready, issue)    acceptance: its unit's queue, an issue slot, or the condition of a sync
//                     operation (each user refines this last piece as it can).
// Times outside [t0, max(issue, t0)] are clamped into it; empty pieces are left out.
#pragma once

#include <algorithm>

#include "traces/instruction.h"

namespace xpu::trace {

enum class IssueWait : std::uint8_t { Supply, Operands, Acceptance };

struct IssueGap {
    Tick begin = 0, end = 0;
    IssueWait why = IssueWait::Supply;
};

// Writes the non-empty pieces of the gap, in time order (they tile [t0, max(issue, t0)));
// returns how many (0 to 3).
inline int split_issue_gap(Tick t0, Tick arrival, Tick ready, Tick issue, IssueGap out[3]) {
    const Tick end = std::max(issue, t0);
    const Tick a = std::clamp(arrival, t0, end);
    const Tick r = std::clamp(ready, a, end);
    int n = 0;
    if (a > t0) out[n++] = {t0, a, IssueWait::Supply};
    if (r > a) out[n++] = {a, r, IssueWait::Operands};
    if (end > r) out[n++] = {r, end, IssueWait::Acceptance};
    return n;
}

}  // namespace xpu::trace

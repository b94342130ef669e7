// ChannelGroups: the bandwidth calendars of a memory's channels (HbmController), where channels
// whose calendars are the same share one.
//
// Why: a DMA chunk of 4 KiB on 1 KiB interleave is four pieces on four neighbouring channels,
// reserved alike (same arrival, same bytes). A calendar per channel made it four reservations:
// on a DMA-heavy run (the 32-layer llama2-7b decode) the HBM's reservations were a third of the
// simulation thread. Channels that have received the same reservations so far have the same
// calendar, so one reservation answers for all of them. The answer is the very one the separate
// calendars give: nothing is approximated.
//
// A group is a run of neighbouring channels [head, end) with one calendar. A request that covers
// part of a group splits it (each part a copy of the calendar). Parts that a later request covers
// together are joined again when their calendars answer alike from the kernel's time on
// (BandwidthCalendar::same_ahead): in practice once the channels' reservations ahead have
// drained alike, so that a run keeps few groups even after unaligned requests.
#pragma once

#include <cstdint>
#include <vector>

#include "models/bandwidth_calendar.h"

namespace xpu {

class ChannelGroups {
public:
    ChannelGroups(unsigned channels, double bytes_per_tick, Tick bucket);
    unsigned channels() const { return static_cast<unsigned>(head_of_.size()); }
    // Reserves `bytes` on each of the channels [lo, lo + n) (lo + n <= channels()), none before
    // t; `now` is the kernel's time. Calls done(first, end, moved) for each group of them, in
    // channel order: channels [first, end) have moved their bytes by `moved`.
    template <class Done>
    void reserve(unsigned lo, unsigned n, Tick t, std::uint64_t bytes, Tick now, Done&& done) {
        const unsigned hi = lo + n;
        split_at(lo);
        split_at(hi);
        for (unsigned g = lo; g < hi; g = end_[g]) {
            while (end_[g] < hi && cal_[g].same_ahead(cal_[end_[g]], now)) join(g);
            done(g, end_[g], cal_[g].reserve(t, bytes, now));
            group_bytes_[g] += bytes;
        }
    }
    // A channel's transfer time so far (BandwidthCalendar::busy()).
    Tick busy(unsigned ch) const;

private:
    // Makes `ch` the first channel of a group (no-op at channels()); usually it is one already.
    void split_at(unsigned ch) {
        if (ch < head_of_.size() && head_of_[ch] != ch) split(ch);
    }
    void split(unsigned ch);
    // Joins group g with the group after it (their calendars answer alike).
    void join(unsigned g);
    // Moves what group g's calendar carried since the group was formed into its channels' totals.
    void settle_bytes(unsigned g);

    // Per channel; cal_, end_ and group_bytes_ are meaningful at a group's first channel only.
    std::vector<unsigned> head_of_;           // first channel of the channel's group
    std::vector<unsigned> end_;               // one past the group's last channel
    std::vector<BandwidthCalendar> cal_;      // the group's calendar
    std::vector<std::uint64_t> group_bytes_;  // bytes each channel of the group moved since it was formed
    std::vector<std::uint64_t> bytes_;        // bytes the channel moved before its group was formed
};

}  // namespace xpu

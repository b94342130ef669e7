#include "models/channel_groups.h"

namespace xpu {

ChannelGroups::ChannelGroups(unsigned channels, double bytes_per_tick, Tick bucket)
    : head_of_(channels ? channels : 1, 0),
      end_(head_of_.size(), 0),
      cal_(head_of_.size(), BandwidthCalendar(bytes_per_tick, bucket)),
      group_bytes_(head_of_.size(), 0),
      bytes_(head_of_.size(), 0) {
    end_[0] = this->channels();  // one group: every channel's calendar is empty alike
}

void ChannelGroups::split(unsigned ch) {
    const unsigned g = head_of_[ch];
    settle_bytes(g);
    cal_[ch] = cal_[g];  // the same reservations so far
    end_[ch] = end_[g];
    end_[g] = ch;
    for (unsigned c = ch; c < end_[ch]; ++c) head_of_[c] = ch;
}

void ChannelGroups::join(unsigned g) {
    const unsigned next = end_[g];
    settle_bytes(g);
    settle_bytes(next);
    end_[g] = end_[next];
    for (unsigned c = next; c < end_[g]; ++c) head_of_[c] = g;
}

void ChannelGroups::settle_bytes(unsigned g) {
    if (!group_bytes_[g]) return;
    for (unsigned c = g; c < end_[g]; ++c) bytes_[c] += group_bytes_[g];
    group_bytes_[g] = 0;
}

Tick ChannelGroups::busy(unsigned ch) const {
    const unsigned g = head_of_[ch];
    return cal_[g].busy_for(bytes_[ch] + group_bytes_[g]);
}

}  // namespace xpu

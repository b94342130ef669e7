#include "models/dram.h"

#include <algorithm>
#include <stdexcept>

namespace xpu {

namespace {

// The presets, in command-clock cycles. Sources:
//  HBM2:  JESD235-style timings at 2 Gbps/pin (tCK 1 ns) as Ramulator 2 ships them (its HBM2
//         preset "HBM2_2Gbps", org "HBM2_8Gb": 2 pseudo-channels of 4 bank groups x 4 banks,
//         32768 rows), 64 B per column access per pseudo-channel (Ramulator's transaction size:
//         64-bit pseudo-channel, BL4, 2n prefetch) every 4 cycles: 16 GB/s per pseudo-channel,
//         256 GB/s for 8 channels. Row (page) 1 KiB per pseudo-channel (JESD235 pseudo-channel
//         mode).
//  HBM2E: the same nanosecond timings at 3.2 Gbps/pin (tCK 0.625 ns, rounded up to whole
//         cycles): 409.6 GB/s per 8-channel stack (SK hynix / Samsung HBM2E data sheets' pin
//         rate). An estimate: no public JEDEC table for every timing at this rate was used.
//  HBM3:  JESD238-style organisation (16 channels of 2 x 32-bit pseudo-channels per stack, BL8:
//         32 B per access) at 6.4 Gbps/pin (tCK 0.3125 ns for the 3.2 GHz data clock... the
//         command clock here is the access clock, 0.625 ns: 32 B every 2 cycles per
//         pseudo-channel = 25.6 GB/s, 819.2 GB/s per 16-channel stack), nanosecond timings as
//         HBM2E, tCCD_S / tCCD_L 1 / 2 (as HBM2's, relative to the burst). An estimate, labelled
//         so in docs/validation.md.
const DramTiming kPresets[] = {
    //  name   tCK   acc  pc bg ba rows   cols BL CL CWL RCD RP RAS WR RTP CCDS CCDL RRDS RRDL WTRS WTRL RTW FAW RFC  REFI
    {"HBM2", 1.0, 64, 2, 4, 4, 32768, 16, 4, 7, 2, 7, 7, 17, 8, 3, 1, 2, 2, 3, 3, 4, 3, 15, 160, 3900},
    {"HBM2E", 0.625, 64, 2, 4, 4, 32768, 16, 4, 12, 4, 12, 12, 28, 13, 5, 2, 4, 4, 5, 5, 7, 5, 24, 256, 6240},
    {"HBM3", 0.625, 32, 2, 4, 4, 32768, 32, 2, 12, 4, 12, 12, 28, 13, 5, 1, 2, 4, 5, 5, 7, 5, 24, 256, 6240},
};

unsigned log2_floor(std::uint64_t x) {
    unsigned b = 0;
    while ((std::uint64_t(1) << (b + 1)) <= x) ++b;
    return b;
}

}  // namespace

const DramTiming& dram_timing(const std::string& standard) {
    for (const auto& t : kPresets)
        if (standard == t.name) return t;
    throw std::invalid_argument("unknown DRAM standard '" + standard + "'");
}

DramModel::DramModel(const DramParams& p, unsigned channels)
    : p_(p), tm_(dram_timing(p.standard)), tck_(static_cast<Tick>(tm_.tck_ns * 1000.0 + 0.5)) {
    const unsigned n = std::max(1u, channels) * tm_.pseudo_channels;
    pcs_.resize(n);
    for (unsigned i = 0; i < n; ++i) {
        Pc& pc = pcs_[i];
        pc.banks.resize(tm_.bank_groups * tm_.banks_per_group);
        pc.group_col.assign(tm_.bank_groups, 0);
        pc.group_act.assign(tm_.bank_groups, 0);
        pc.offset = c(tm_.REFI) * i / n;  // refreshes staggered over the pseudo-channels
    }
    ch_bits_ = log2_floor(n);
}

double DramModel::peak_gbps() const {
    return static_cast<double>(pcs_.size()) * tm_.access_bytes / (tm_.BL * tm_.tck_ns);
}

// All-bank refresh k of a pseudo-channel occupies [offset + k tREFI, + tRFC): before a command
// at t, apply every window that started by t (its banks close, nothing issues inside it).
void DramModel::apply_refresh(Pc& p, Tick t) {
    if (!p_.refresh) return;
    const Tick refi = c(tm_.REFI), rfc = c(tm_.RFC);
    while (p.offset + (p.refreshed + 1) * refi <= t) {
        const Tick at = p.offset + (p.refreshed + 1) * refi;
        ++p.refreshed;
        ++stats_.refreshes;
        // Precharge everything first (once each bank may close), then refresh.
        Tick start = at;
        for (const Bank& b : p.banks)
            if (b.open_row >= 0) start = std::max(start, b.pre_ready);
        const Tick end = start + (start > at ? c(tm_.RP) : 0) + rfc;
        for (Bank& b : p.banks) {
            b.open_row = -1;
            b.act_ready = std::max(b.act_ready, end);
        }
    }
}

Tick DramModel::access(std::uint64_t off, bool write, Tick t, unsigned* pc_out, Tick* data_start) {
    // Address -> (pseudo-)channel, column, bank, row by the mapping; the low bits inside one
    // access are the burst's bytes.
    std::uint64_t a = off / tm_.access_bytes;
    const std::uint64_t npc = pcs_.size(), nbank = tm_.bank_groups * tm_.banks_per_group;
    std::uint64_t ch = 0, col = 0, bank = 0, row = 0;
    if (p_.mapping == "RoCoBaRaCh") {
        ch = a % npc;
        a /= npc;
        bank = a % nbank;
        a /= nbank;
        col = a % tm_.columns;
        a /= tm_.columns;
        row = a % tm_.rows;
    } else {  // RoBaRaCoCh (and its -xor variant)
        ch = a % npc;
        a /= npc;
        col = a % tm_.columns;
        a /= tm_.columns;
        bank = a % nbank;
        a /= nbank;
        row = a % tm_.rows;
        if (p_.mapping == "RoBaRaCoCh-xor") ch = (ch ^ row) % npc;
    }
    (void)col;
    Pc& p = pcs_[ch];
    Bank& b = p.banks[bank];
    const unsigned group = static_cast<unsigned>(bank / tm_.banks_per_group);
    ++stats_.accesses;

    // Earliest command time: the request's arrival, and after everything already scheduled in
    // this pseudo-channel's command order (in order per pseudo-channel).
    Tick cmd = t;
    apply_refresh(p, cmd);
    auto in_refresh = [&](Tick x) {
        if (!p_.refresh) return x;
        const Tick refi = c(tm_.REFI), rfc = c(tm_.RFC);
        if (x < p.offset) return x;
        const Tick k = (x - p.offset) / refi;
        const Tick w = p.offset + k * refi;
        return (k > 0 && x < w + rfc) ? w + rfc : x;
    };
    if (b.open_row == static_cast<std::int64_t>(row)) {
        ++stats_.hits;
    } else {
        if (b.open_row >= 0) {  // conflict: precharge first
            ++stats_.conflicts;
            const Tick pre = in_refresh(std::max(cmd, b.pre_ready));
            b.act_ready = std::max(b.act_ready, pre + c(tm_.RP));
        } else {
            ++stats_.misses;
        }
        Tick act = std::max(cmd, b.act_ready);
        if (p.any_act) act = std::max(act, p.act_last + c(tm_.RRD_S));
        if (p.group_act[group]) act = std::max(act, p.group_act[group] + c(tm_.RRD_L));
        if (p.faw.size() >= 4) act = std::max(act, p.faw.front() + c(tm_.FAW));
        act = in_refresh(act);
        apply_refresh(p, act);
        b.open_row = static_cast<std::int64_t>(row);
        b.act = act;
        b.col_ready = act + c(tm_.RCD);
        b.pre_ready = act + c(tm_.RAS);
        p.act_last = act;
        p.any_act = true;
        p.group_act[group] = act;
        p.faw.push_back(act);
        if (p.faw.size() > 4) p.faw.pop_front();
    }
    // The column command.
    Tick col_t = std::max(cmd, b.col_ready);
    if (p.any_col) col_t = std::max(col_t, p.col + c(tm_.CCD_S));
    if (p.group_col[group]) col_t = std::max(col_t, p.group_col[group] + c(tm_.CCD_L));
    if (!write && p.any_write) col_t = std::max(col_t, p.write_end + c(tm_.WTR_L));
    if (write && p.any_read) col_t = std::max(col_t, p.read_cmd + c(tm_.RTW));
    // The data bus: one burst at a time, tCL (tCWL) after its command.
    const Tick lat = c(write ? tm_.CWL : tm_.CL), burst = c(tm_.BL);
    col_t = std::max(col_t, p.bus_free > lat ? p.bus_free - lat : 0);
    col_t = in_refresh(col_t);
    const Tick data = col_t + lat, end = data + burst;
    p.bus_free = end;
    p.col = col_t;
    p.any_col = true;
    p.group_col[group] = col_t;
    if (write) {
        p.write_end = end;
        p.any_write = true;
        b.pre_ready = std::max(b.pre_ready, end + c(tm_.WR));
    } else {
        p.read_cmd = col_t;
        p.any_read = true;
        b.pre_ready = std::max(b.pre_ready, col_t + c(tm_.RTP));
    }
    if (p_.page_policy == "closed") {  // auto-precharge
        b.open_row = -1;
        b.act_ready = std::max(b.act_ready, b.pre_ready + c(tm_.RP));
    }
    if (pc_out) *pc_out = static_cast<unsigned>(ch);
    if (data_start) *data_start = data;
    return end;
}

}  // namespace xpu

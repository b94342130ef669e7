// DramModel: an HBM channel set timed by DRAM protocol rules instead of a bandwidth calendar
// (HbmController `model: dram`), with the controller behaviour of Ramulator 2's Generic
// controller and FR-FCFS scheduler (docs/validation.md compares the two side by side).
//
// Organisation: `channels` channels, each with the standard's pseudo-channels (its own data bus
// and bank groups x banks) behind the channel's command interface: with `command_bus: split`
// (JESD235 / JESD238: HBM has row command pins R[] for ACT, PRE, REF and column command pins C[]
// for RD, WR) a channel's controller issues at most one row and one column command per
// command-clock cycle; with `shared` (Ramulator 2's HBM2) at most one command of either kind.
// A request moves `access_bytes` (one column command); its address picks channel,
// pseudo-channel, bank group, bank, row and column by `mapping`.
//
// Controller, per channel, every cycle (what Ramulator 2's Generic controller does):
//   1. a read queue and a write queue of `queue_depth` requests each; a request that finds its
//      queue full waits outside (back-pressure);
//   2. write draining by watermarks: the controller serves writes once the write queue holds
//      more than write_high x depth (or there is no read), back to reads once it holds fewer
//      than write_low x depth (and a read waits);
//   3. FR-FCFS: of the served queue, the request whose next command (ACT for a closed bank, PRE
//      for another row open, RD/WR for its open row) can issue now wins, the oldest first; a
//      request whose ACT issued moves to an active set that is served before the queues (its
//      row is not closed by another request's PRE meanwhile);
//   4. refresh (when on): every tREFI the channel precharges all banks and refreshes for tRFC,
//      before any queued request.
// Timing rules (per pseudo-channel unless said): ACT-ACT tRRD_S, tRRD_L in a bank group, four
// ACTs per tFAW, tRC per bank, ACT-to-column tRCD, ACT-to-PRE tRAS, PRE-to-ACT tRP, RD-to-PRE
// tRTP, WR-to-PRE tCWL+tBL+tWR; column commands tCCD_S apart (tCCD_L in a bank group) and tBL
// apart on the data bus; WR-to-RD tCWL+tBL+tWTR_S (_L in a bank group), RD-to-WR tCL+tBL+2-tCWL;
// an ACT occupies the channel's (row) command bus for 2 cycles. Read data is back tCL+tBL after RD.
// With a split bus the column bus is served first in a cycle (the request whose row is open,
// FR-FCFS), then the row bus (ACT / PRE of the oldest ready request, or the refresh), so a row
// command never closes a row whose column command issues in the same cycle.
//
// Page policy: open (rows stay open) or closed (every access auto-precharges: RDA/WRA).
//
// Use: the request-level interface (offer / tick / completions) is the controller itself, for
// a driver that offers requests cycle by cycle (the side-by-side runs); serve() times one
// transaction through it for HbmController's b_transport. A transaction is served to its end
// before the call returns (its completion time is the answer), so requests of different
// transactions are reordered only when they are in the queues together, i.e. within one
// transaction; one that arrives before a channel's clock (temporal decoupling) queues at that
// clock: this model does not fill gaps in the past as the bandwidth calendar does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/params.h"

namespace xpu {

// Keys of HbmController that apply with `model: dram` (declared by HbmParams::declare; the
// queue depth is HbmParams::queue_depth).
struct DramParams {
    std::string standard = "HBM2";       // HBM2 | HBM2E | HBM3: timings, rate, organisation
    std::string mapping = "RoBaRaCoCh";  // RoBaRaCoCh | RoCoBaRaCh | RoBaRaCoCh-xor
    std::string page_policy = "open";    // open | closed
    std::string command_bus = "standard";  // standard | shared | split
    bool refresh = true;
    double write_high = 0.8, write_low = 0.2;  // write-drain watermarks, fractions of the queue

    void declare(ParamVisitor& v) {
        v.choice("standard", standard, {"HBM2", "HBM2E", "HBM3"},
                 "model dram: the JEDEC-style preset (data rate, timings, banks, pseudo-channels; models/dram.cpp)");
        v.choice("mapping", mapping, {"RoBaRaCoCh", "RoCoBaRaCh", "RoBaRaCoCh-xor"},
                 "model dram: address fields from the top (Ro row, Ba bank group + bank, Ra pseudo-channel, Co "
                 "column, Ch channel); -xor: the channel bits XORed with the low row bits");
        v.choice("page_policy", page_policy, {"open", "closed"},
                 "model dram: open keeps a row open after an access, closed precharges after each");
        v.choice("command_bus", command_bus, {"standard", "shared", "split"},
                 "model dram: split: a row command bus (ACT for 2 cycles, PRE, REF) and a column command bus (RD, "
                 "WR), one command each per cycle (JESD235 / JESD238 HBM); shared: one command per cycle for both "
                 "(Ramulator 2's HBM2); standard: the preset's (split for HBM2, HBM2E, HBM3)");
        v.boolean("refresh", refresh, "model dram: all-bank refresh of each channel every tREFI for tRFC");
        v.real("write_drain_high", write_high, 0.0, 1.0, "fraction of queue_depth",
               "model dram: the controller turns to writes when more writes than this wait");
        v.real("write_drain_low", write_low, 0.0, 1.0, "fraction of queue_depth",
               "model dram: the controller turns back to reads when fewer writes than this wait");
    }
};

// One standard's figures (cycles of tck_ns unless said).
struct DramTiming {
    const char* name;
    double tck_ns;          // command clock period
    unsigned access_bytes;  // bytes per column command (one request)
    unsigned pseudo_channels, bank_groups, banks_per_group;
    std::uint64_t rows, columns;  // per bank; columns in accesses (a row is columns x access_bytes)
    unsigned BL, CL, CWL, RCDRD, RCDWR, RP, RAS, RC, WR, RTPS, RTPL, CCD_S, CCD_L, RRD_S, RRD_L, WTR_S, WTR_L, FAW,
        RFC, REFI;
    bool split_command_bus;  // separate row and column command buses (command_bus: standard)
};

const DramTiming& dram_timing(const std::string& standard);

struct DramStats {
    std::uint64_t accesses = 0, hits = 0, misses = 0, conflicts = 0, refreshes = 0;
};

// A request's place in the device.
struct DramAddr {
    unsigned ch = 0, pc = 0, bg = 0, bank = 0;  // bank within its group
    std::uint32_t row = 0, col = 0;
};

// What a finished request reports (ticks in ps, cycles of the channel's clock).
struct DramDone {
    std::uint64_t tag;
    bool write;
    unsigned channel, pseudo_channel;
    std::int64_t arrive, issue;  // cycles: queued, column command issued
    Tick data_start, end;         // data on the bus, data moved (read: back; write: written)
};

// One command as issued (DramModel::log_commands): name ACT, PRE, PREA, RD, WR, RDA, WRA, REF.
struct DramCommand {
    std::int64_t cycle;
    unsigned channel, pc, bg, bank;  // PREA / REF: the whole channel (pc, bg, bank 0)
    const char* name;
};

class DramModel {
public:
    // channels: the controller's channel count; queue_depth: requests per read / write queue.
    DramModel(const DramParams& p, unsigned channels, unsigned queue_depth);
    ~DramModel();
    DramModel(const DramModel&) = delete;
    DramModel& operator=(const DramModel&) = delete;

    const DramTiming& timing() const { return tm_; }
    unsigned access_bytes() const { return tm_.access_bytes; }
    unsigned channels() const { return static_cast<unsigned>(chs_.size()); }
    unsigned pseudo_channels() const { return channels() * tm_.pseudo_channels; }
    // Whether row and column commands issue on separate buses (command_bus, or the standard's).
    bool split_command_bus() const { return split_; }
    double peak_gbps() const;  // every pseudo-channel's data bus busy
    Tick tck() const { return tck_; }
    const DramStats& stats() const { return stats_; }
    DramAddr decode(std::uint64_t off) const;

    // Request level. The channel's clock, in cycles (the cycle whose tick comes next).
    std::int64_t clock(unsigned ch) const;
    // Queue one request at the channel's current clock if its queue has room (else false).
    bool offer(std::uint64_t off, bool write, std::uint64_t tag);
    // One cycle of a channel: the cycle advances, then at most one command issues.
    void tick(unsigned ch);
    // Nothing queued, active or refreshing.
    bool idle(unsigned ch) const;
    // An idle channel's clock jumps to cycle `to` (refreshes due meanwhile take place).
    void skip_to(unsigned ch, std::int64_t to);
    // Requests whose column command has issued since the last call (in issue order).
    std::vector<DramDone>& completions() { return done_; }
    // Every command issued from now on appended to *log (nullptr: none); for checks of the rules.
    void log_commands(std::vector<DramCommand>* log) { log_ = log; }

    // Transaction level (HbmController): `len` bytes at `off`, arriving at `arrival` (ps); every
    // request through its channel's queue until issued. Returns when the data has moved; *accept:
    // when the last request entered its queue (back-pressure); each request's record appended to
    // *records if given.
    Tick serve(std::uint64_t off, std::uint64_t len, bool write, Tick arrival, Tick* accept,
               std::vector<DramDone>* records = nullptr);

private:
    struct Channel;
    DramParams p_;
    const DramTiming& tm_;
    Tick tck_;
    unsigned depth_;
    unsigned map_;  // 0 RoBaRaCoCh, 1 RoCoBaRaCh, 2 RoBaRaCoCh-xor
    bool split_;    // row and column command buses apart
    std::vector<Channel*> chs_;
    DramStats stats_;
    std::vector<DramDone> done_;
    std::vector<DramCommand>* log_ = nullptr;
    std::vector<std::vector<std::uint64_t>> fifo_;  // serve(): requests waiting for queue room
};

}  // namespace xpu

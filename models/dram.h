// DramModel: an HBM channel set timed by DRAM protocol rules instead of a bandwidth calendar
// (HbmController `model: dram`). Each of `channels` channels has `pseudo_channels` pseudo-
// channels, each with its own command and data bus and bank groups x banks; every access of
// `access_bytes` (one column command, a burst) is mapped to (pseudo-)channel, bank group, bank,
// row and column by `mapping`, and timed against the state of its bank and bus:
//
//   row closed:   ACT at max(tRP after PRE, tRRD_S / tRRD_L after the last ACT in the pseudo-
//                 channel / bank group, the tFAW window of the last four ACTs), then RD/WR tRCD
//                 later;
//   row conflict: PRE first (no earlier than tRAS after ACT, tRTP after a read, write recovery
//                 tCWL + tBL + tWR after a write), then as closed;
//   row hit:      RD/WR at once;
//   column commands: tCCD_S apart in a pseudo-channel, tCCD_L in a bank group; a read tWTR_S/L
//                 after the end of write data, a write tRTW after a read; data on the bus tCL
//                 (tCWL) after the command for tBL; the bus carries one burst at a time.
//   refresh:      all-bank, every tREFI per pseudo-channel (staggered), tRFC long: no command
//                 in the window, every row closed after it.
//   page policy:  open (rows stay open: hits are cheap, conflicts pay PRE) or closed (auto-
//                 precharge after every access: every access pays ACT, none a conflict).
//
// Scheduling: requests are served in arrival order per pseudo-channel, bank-parallel (an access
// to another bank does not wait for this bank's activation, only for the shared buses and the
// ACT rules): FR-FCFS for the request streams the models issue (a DMA's bursts arrive in order
// and their row hits are served back to back). A request that arrives out of time order (a
// temporal-decoupling artefact) is served after what was already scheduled: unlike the
// bandwidth calendar, this model does not fill gaps in the past (docs/validation.md).
//
// Every timing is a preset of the JEDEC-style `standard` (values and sources in dram.cpp);
// organisation, mapping and policy are keys.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "models/params.h"

namespace xpu {

// Keys of HbmController that apply with `model: dram` (declared by HbmParams::declare).
struct DramParams {
    std::string standard = "HBM2";       // HBM2 | HBM2E | HBM3: timings, rate, organisation
    std::string mapping = "RoBaRaCoCh";  // RoBaRaCoCh | RoCoBaRaCh | RoBaRaCoCh-xor
    std::string page_policy = "open";    // open | closed
    bool refresh = true;

    void declare(ParamVisitor& v) {
        v.choice("standard", standard, {"HBM2", "HBM2E", "HBM3"},
                 "model dram: the JEDEC-style preset (data rate, timings, banks, pseudo-channels; models/dram.cpp)");
        v.choice("mapping", mapping, {"RoBaRaCoCh", "RoCoBaRaCh", "RoBaRaCoCh-xor"},
                 "model dram: address bits from the top (Ro row, Ba bank + bank group, Ra rank, Co column, Ch "
                 "(pseudo-)channel); -xor: the channel bits XORed with the low row bits");
        v.choice("page_policy", page_policy, {"open", "closed"},
                 "model dram: open keeps a row open after an access, closed precharges after each");
        v.boolean("refresh", refresh, "model dram: all-bank refresh every tREFI for tRFC");
    }
};

// One standard's figures (cycles of tck unless said).
struct DramTiming {
    const char* name;
    double tck_ns;        // command clock period
    unsigned access_bytes;  // bytes per column command (burst) per pseudo-channel
    unsigned pseudo_channels, bank_groups, banks_per_group;
    std::uint64_t rows, columns;  // per bank; columns in accesses
    unsigned BL, CL, CWL, RCD, RP, RAS, WR, RTP, CCD_S, CCD_L, RRD_S, RRD_L, WTR_S, WTR_L, RTW, FAW, RFC, REFI;
};

const DramTiming& dram_timing(const std::string& standard);

struct DramStats {
    std::uint64_t accesses = 0, hits = 0, misses = 0, conflicts = 0, refreshes = 0;
};

class DramModel {
public:
    // channels: the controller's channel count (each with the standard's pseudo-channels).
    DramModel(const DramParams& p, unsigned channels);
    // One access-sized burst at byte offset `off` (from the controller's base), ready at `t`:
    // returns when its data has moved (read: arrived at the controller; write: written), and
    // its pseudo-channel index and data start in *pc, *data_start.
    Tick access(std::uint64_t off, bool write, Tick t, unsigned* pc, Tick* data_start);
    unsigned access_bytes() const { return tm_.access_bytes; }
    unsigned pseudo_channels() const { return static_cast<unsigned>(pcs_.size()); }
    // Peak data rate of all pseudo-channels, GB/s.
    double peak_gbps() const;
    const DramStats& stats() const { return stats_; }
    Tick tck() const { return tck_; }

private:
    struct Bank {
        std::int64_t open_row = -1;
        Tick act = 0;              // last ACT
        Tick act_ready = 0;        // earliest next ACT (tRP after PRE)
        Tick col_ready = 0;        // earliest column command (tRCD after ACT)
        Tick pre_ready = 0;        // earliest PRE (tRAS, tRTP, write recovery)
    };
    struct Pc {
        std::vector<Bank> banks;
        std::vector<Tick> group_col, group_act;  // last column command / ACT per bank group
        Tick col = 0;                            // last column command
        bool any_col = false;
        Tick act_last = 0;
        bool any_act = false;
        std::deque<Tick> faw;                    // the last four ACTs
        Tick bus_free = 0;                       // data bus
        Tick write_end = 0, read_cmd = 0;        // for tWTR / tRTW
        bool any_write = false, any_read = false;
        std::uint64_t refreshed = 0;             // refresh windows applied
        Tick offset = 0;                         // refresh stagger
    };
    Tick c(unsigned cycles) const { return Tick(cycles) * tck_; }
    void apply_refresh(Pc& p, Tick t);

    DramParams p_;
    const DramTiming& tm_;
    Tick tck_;
    std::vector<Pc> pcs_;
    unsigned ch_bits_ = 0;
    DramStats stats_;
};

}  // namespace xpu

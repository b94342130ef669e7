#include "models/dram.h"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>

namespace xpu {

namespace {

// The presets, in command-clock cycles. Sources:
//  HBM2:  Ramulator 2's HBM2 preset (src/dram/impl/HBM2.cpp, v2.0a: timing "HBM2_2Gbps", org
//         "HBM2_8Gb": 2 pseudo-channels of 4 bank groups x 4 banks, 32768 rows of 32 accesses of
//         32 B, tRFC 350 ns for 8 Gb), which follows JESD235, with one change: tBL 2 cycles, not
//         its 4: 32 B per pseudo-channel per 2 ns is the JESD235 pin rate (2 Gb/s x 64 bits), so
//         8 channels give 256 GB/s (Ramulator's nBL 4 gives half). The side-by-side runs
//         Ramulator with nBL 2 (docs/validation.md).
//  HBM2E: the same nanosecond timings at 3.2 Gb/s per pin (tCK 0.625 ns, rounded up to whole
//         cycles): 409.6 GB/s per 8 channels. An estimate (no public JEDEC table at this rate).
//  HBM3:  16 channels per stack of 2 pseudo-channels, 32 B per access at 6.4 Gb/s per pin
//         (25.6 GB/s per pseudo-channel, 819.2 GB/s per 16 channels), the HBM2E nanosecond
//         timings. An estimate, labelled so in docs/validation.md.
// Command buses: all three split (JESD235 HBM2 / HBM2E: row pins R[5:0] for ACT, PRE, REF over
// 2 cycles for ACT, column pins C[7:0] for RD, WR; JESD238 HBM3 keeps the separate row and
// column interfaces). Ramulator 2's HBM2 issues both kinds on one bus (command_bus: shared).
const DramTiming kPresets[] = {
    // name    tCK   acc pc bg ba  rows  cols BL CL CWL RCDRD RCDWR RP RAS RC WR RTPS RTPL CCDS CCDL RRDS RRDL WTRS WTRL FAW RFC REFI split
    {"HBM2", 1.0, 32, 2, 4, 4, 32768, 32, 2, 7, 2, 7, 7, 7, 17, 19, 8, 2, 3, 1, 2, 2, 3, 3, 4, 15, 350, 3900, true},
    {"HBM2E", 0.625, 32, 2, 4, 4, 32768, 32, 2, 12, 4, 12, 12, 12, 28, 31, 13, 4, 5, 1, 2, 4, 5, 5, 7, 24, 560, 6240, true},
    {"HBM3", 0.625, 32, 2, 4, 4, 32768, 32, 2, 12, 4, 12, 12, 12, 28, 31, 13, 4, 5, 1, 2, 4, 5, 5, 7, 24, 560, 6240, true},
};

enum Cmd : unsigned { ACT, PRE, PREA, RD, WR, RDA, WRA, REF, NCMD };
enum Level : unsigned { LCH, LPC, LBG, LBANK, NLEVEL };

constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

bool is_read(unsigned c) { return c == RD || c == RDA; }
bool is_write(unsigned c) { return c == WR || c == WRA; }
bool is_column(unsigned c) { return is_read(c) || is_write(c); }
bool is_closing(unsigned c) { return c == PRE || c == PREA || c == RDA || c == WRA; }

// The command buses a cycle is offered to: shared (any command), or split into the column bus
// (RD, WR and their auto-precharge forms) and the row bus (ACT, PRE, PREA, REF).
enum Bus : unsigned { ANY, COLUMN, ROW };
bool on_bus(unsigned cmd, Bus bus) { return bus == ANY || (bus == COLUMN) == is_column(cmd); }

// One timing rule: after `prev` at a level's node, `next` at that node waits `lat` cycles (for
// the four-activation window, after the fourth last ACT).
struct Rule {
    unsigned level, prev, next;
    std::int64_t lat;
    bool faw;
};

std::vector<Rule> rules(const DramTiming& t) {
    std::vector<Rule> r;
    auto add = [&](unsigned level, std::initializer_list<unsigned> prev, std::initializer_list<unsigned> next,
                   std::int64_t lat, bool faw = false) {
        for (unsigned p : prev)
            for (unsigned n : next) r.push_back({level, p, n, lat, faw});
    };
    const std::int64_t BL = t.BL, CL = t.CL, CWL = t.CWL, WR_REC = CWL + BL + t.WR;
    // Channel: an ACT takes the command bus for two cycles.
    add(LCH, {ACT}, {ACT, PRE, PREA, REF}, 2);
    // Pseudo-channel.
    add(LPC, {ACT}, {ACT}, t.RRD_S);
    add(LPC, {ACT}, {ACT}, t.FAW, true);
    add(LPC, {RD, RDA}, {RD, RDA}, std::max<std::int64_t>(BL, t.CCD_S));  // data bus and tCCD_S
    add(LPC, {WR, WRA}, {WR, WRA}, std::max<std::int64_t>(BL, t.CCD_S));
    add(LPC, {RD, RDA}, {WR, WRA}, CL + BL + 2 - CWL);  // read to write turnaround (tWPRE 1)
    add(LPC, {WR, WRA}, {RD, RDA}, CWL + BL + t.WTR_S);
    add(LPC, {RD}, {PREA}, t.RTPS);
    add(LPC, {WR}, {PREA}, WR_REC);
    add(LPC, {ACT}, {PREA}, t.RAS);
    add(LPC, {PREA}, {ACT}, t.RP);
    add(LPC, {ACT}, {REF}, t.RC);
    add(LPC, {PRE, PREA}, {REF}, t.RP);
    add(LPC, {RDA}, {REF}, t.RP + t.RTPS);
    add(LPC, {WRA}, {REF}, WR_REC + t.RP);
    add(LPC, {REF}, {ACT}, t.RFC);
    // Bank group.
    add(LBG, {RD, RDA}, {RD, RDA}, t.CCD_L);
    add(LBG, {WR, WRA}, {WR, WRA}, t.CCD_L);
    add(LBG, {WR, WRA}, {RD, RDA}, CWL + BL + t.WTR_L);
    add(LBG, {ACT}, {ACT}, t.RRD_L);
    // Bank.
    add(LBANK, {ACT}, {ACT}, t.RC);
    add(LBANK, {ACT}, {RD, RDA}, t.RCDRD);
    add(LBANK, {ACT}, {WR, WRA}, t.RCDWR);
    add(LBANK, {ACT}, {PRE}, t.RAS);
    add(LBANK, {PRE}, {ACT}, t.RP);
    add(LBANK, {RD}, {PRE}, t.RTPL);
    add(LBANK, {WR}, {PRE}, WR_REC);
    add(LBANK, {RDA}, {ACT}, t.RTPL + t.RP);
    add(LBANK, {WRA}, {ACT}, WR_REC + t.RP);
    return r;
}

}  // namespace

const DramTiming& dram_timing(const std::string& standard) {
    for (const auto& t : kPresets)
        if (standard == t.name) return t;
    throw std::invalid_argument("unknown DRAM standard '" + standard + "'");
}

// One channel's controller and device state.
struct DramModel::Channel {
    struct Req {
        std::uint64_t tag;
        DramAddr a;
        bool write;
        bool counted = false;  // row hit / miss / conflict recorded at its first command
        std::int64_t arrive;
        unsigned cmd = ACT;  // the next command it needs
    };
    using Ready = std::array<std::int64_t, NCMD>;

    const DramTiming& t;
    const DramParams& p;
    unsigned id, depth;
    std::int64_t clk = 0;
    std::vector<Req> reads, writes, active;
    bool write_mode = false;
    unsigned refresh_due = 0;
    std::int64_t next_refresh;
    // Earliest cycle of each command per node, and each level's rules by preceding command.
    Ready chan{};
    std::vector<Ready> pcs, bgs, banks;
    std::vector<std::int64_t> open_row;             // per bank; -1 closed
    std::vector<std::array<std::int64_t, 4>> acts;  // per pseudo-channel: the last four ACTs
    std::vector<unsigned> acts_n;
    std::array<std::array<std::vector<const Rule*>, NCMD>, NLEVEL> by_prev;
    std::vector<Rule> all_rules;
    std::int64_t wake = 0;  // after a cycle without a command: the earliest cycle one may issue
    bool closed;            // page policy closed: auto-precharge
    bool split;             // separate row and column command buses

    Channel(const DramTiming& tm, const DramParams& pp, unsigned i, unsigned d, bool split_bus)
        : t(tm),
          p(pp),
          id(i),
          depth(d),
          next_refresh(tm.REFI),
          all_rules(rules(tm)),
          closed(pp.page_policy == "closed"),
          split(split_bus) {
        const unsigned nb = t.pseudo_channels * t.bank_groups * t.banks_per_group;
        pcs.assign(t.pseudo_channels, Ready{});
        bgs.assign(t.pseudo_channels * t.bank_groups, Ready{});
        banks.assign(nb, Ready{});
        open_row.assign(nb, -1);
        acts.assign(t.pseudo_channels, {});
        acts_n.assign(t.pseudo_channels, 0);
        for (const Rule& r : all_rules) by_prev[r.level][r.prev].push_back(&r);
    }
    unsigned bg_index(const DramAddr& a) const { return a.pc * t.bank_groups + a.bg; }
    unsigned bank_index(const DramAddr& a) const { return bg_index(a) * t.banks_per_group + a.bank; }

    // The command a request needs next: ACT (bank closed), PRE (another row open), its column
    // command (its row open).
    unsigned next_command(const Req& r) const {
        const std::int64_t open = open_row[bank_index(r.a)];
        if (open < 0) return ACT;
        if (open != r.a.row) return PRE;
        return r.write ? (closed ? WRA : WR) : (closed ? RDA : RD);
    }
    std::int64_t ready_at(unsigned cmd, const DramAddr& a) const {
        return std::max({chan[cmd], pcs[a.pc][cmd], bgs[bg_index(a)][cmd], banks[bank_index(a)][cmd]});
    }
    bool any_open() const {
        return std::any_of(open_row.begin(), open_row.end(), [](std::int64_t r) { return r >= 0; });
    }
    // Refresh: PREA while a bank is open, then REF; channel-wide commands wait for every node.
    unsigned refresh_command() const { return any_open() ? PREA : REF; }
    std::int64_t refresh_ready_at(unsigned cmd) const {
        std::int64_t r = chan[cmd];
        for (const Ready& x : pcs) r = std::max(r, x[cmd]);
        if (cmd == PREA)
            for (std::size_t b = 0; b < banks.size(); ++b)
                if (open_row[b] >= 0) r = std::max(r, banks[b][PRE]);
        return r;
    }

    void apply(unsigned level, Ready& node, unsigned cmd, unsigned pc) {
        for (const Rule* r : by_prev[level][cmd]) {
            std::int64_t from = clk;
            if (r->faw) {
                if (acts_n[pc] < 4) continue;
                from = acts[pc][3];
            }
            node[r->next] = std::max(node[r->next], from + r->lat);
        }
    }
    void issue(DramModel& m, unsigned cmd, const DramAddr& a) {
        static const char* const names[NCMD] = {"ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REF"};
        if (m.log_) m.log_->push_back({clk, id, a.pc, a.bg, a.bank, names[cmd]});
        if (cmd == PREA || cmd == REF) {  // channel-wide
            apply(LCH, chan, cmd, 0);
            for (unsigned i = 0; i < pcs.size(); ++i) apply(LPC, pcs[i], cmd, i);
            if (cmd == PREA) std::fill(open_row.begin(), open_row.end(), -1);
            return;
        }
        if (cmd == ACT) {
            auto& h = acts[a.pc];
            for (unsigned k = 3; k > 0; --k) h[k] = h[k - 1];
            h[0] = clk;
            acts_n[a.pc] = std::min(4u, acts_n[a.pc] + 1);
        }
        apply(LCH, chan, cmd, a.pc);
        apply(LPC, pcs[a.pc], cmd, a.pc);
        apply(LBG, bgs[bg_index(a)], cmd, a.pc);
        apply(LBANK, banks[bank_index(a)], cmd, a.pc);
        const unsigned b = bank_index(a);
        if (cmd == ACT) open_row[b] = a.row;
        if (is_closing(cmd)) open_row[b] = -1;
    }

    // FR-FCFS over a buffer: of the requests whose next command goes on `bus` and can issue now,
    // the oldest; returns its index, or -1 (and lowers `soonest` to the earliest cycle one could
    // issue).
    int best(std::vector<Req>& buf, std::int64_t& soonest, Bus bus) {
        int pick = -1;
        for (std::size_t i = 0; i < buf.size(); ++i) {
            Req& r = buf[i];
            r.cmd = next_command(r);
            if (!on_bus(r.cmd, bus)) continue;
            const std::int64_t at = ready_at(r.cmd, r.a);
            if (at <= clk) {
                if (pick < 0 || r.arrive < buf[pick].arrive) pick = static_cast<int>(i);
            } else {
                soonest = std::min(soonest, at);
            }
        }
        return pick;
    }
    void update_write_mode() {
        if (!write_mode) {
            if (writes.size() > p.write_high * depth || reads.empty()) write_mode = true;
        } else if (writes.size() < p.write_low * depth && !reads.empty()) {
            write_mode = false;
        }
    }
    // A closing command waits while a request that activated that bank is still to be served.
    bool closes_an_active_row(unsigned cmd, const Req* who, const DramAddr& a) const {
        if (!is_closing(cmd)) return false;
        for (const Req& r : active) {
            if (&r == who) continue;
            if (cmd == PREA || (r.a.pc == a.pc && r.a.bg == a.bg && r.a.bank == a.bank)) return true;
        }
        return false;
    }

    // One cycle. Returns whether a command issued.
    bool tick(DramModel& m) {
        ++clk;
        if (p.refresh && clk == next_refresh) {
            next_refresh += t.REFI;
            ++refresh_due;
        }
        if (reads.empty() && writes.empty() && active.empty() && !refresh_due) {
            wake = p.refresh ? next_refresh : kNever;
            return false;
        }
        if (!split) return step(m, ANY);
        // Column bus first, then the row bus (which sees the column command's timing effects).
        const bool column = step(m, COLUMN);
        const std::int64_t column_wake = wake;
        const bool row = step(m, ROW);
        if (!column && !row) wake = std::min(column_wake, wake);
        return column || row;
    }

    // At most one command on `bus` this cycle. Returns whether one issued; if none did, `wake`
    // is the earliest cycle one may.
    bool step(DramModel& m, Bus bus) {
        std::int64_t soonest = kNever;
        std::vector<Req>* buf = nullptr;
        int i = best(active, soonest, bus);
        if (i >= 0) {
            buf = &active;
        } else if (refresh_due && bus == COLUMN) {  // the queues wait for the refresh
            wake = soonest;
            return false;
        } else if (refresh_due) {
            const unsigned cmd = refresh_command();
            const std::int64_t at = refresh_ready_at(cmd);
            if (at > clk || closes_an_active_row(cmd, nullptr, DramAddr{})) {
                wake = at > clk ? std::min(soonest, at) : clk + 1;
                return false;
            }
            issue(m, cmd, DramAddr{});
            if (cmd == REF) {
                --refresh_due;
                ++m.stats_.refreshes;
            }
            return true;
        } else {
            update_write_mode();
            buf = write_mode ? &writes : &reads;
            i = best(*buf, soonest, bus);
        }
        if (i < 0) {
            wake = std::min(soonest, p.refresh ? next_refresh : kNever);
            return false;
        }
        Req& r = (*buf)[i];
        if (closes_an_active_row(r.cmd, &r, r.a)) {
            wake = clk + 1;
            return false;
        }
        if (!r.counted) {
            r.counted = true;
            ++m.stats_.accesses;
            if (r.cmd == ACT)
                ++m.stats_.misses;
            else if (r.cmd == PRE)
                ++m.stats_.conflicts;
            else
                ++m.stats_.hits;
        }
        issue(m, r.cmd, r.a);
        if (is_column(r.cmd)) {
            const Tick ck = m.tck_, at = Tick(clk) * ck;
            const Tick lat = Tick(r.write ? t.CWL : t.CL) * ck;
            m.done_.push_back({r.tag, r.write, id, r.a.pc, r.arrive, clk, at + lat, at + lat + Tick(t.BL) * ck});
            buf->erase(buf->begin() + i);
        } else if (r.cmd == ACT && buf != &active && active.size() < depth) {
            active.push_back(r);
            buf->erase(buf->begin() + i);
        }
        return true;
    }
    bool idle() const { return reads.empty() && writes.empty() && active.empty() && !refresh_due; }
};

DramModel::DramModel(const DramParams& p, unsigned channels, unsigned queue_depth)
    : p_(p),
      tm_(dram_timing(p.standard)),
      tck_(static_cast<Tick>(tm_.tck_ns * 1000.0 + 0.5)),
      depth_(std::max(1u, queue_depth)),
      map_(p.mapping == "RoCoBaRaCh" ? 1 : p.mapping == "RoBaRaCoCh-xor" ? 2 : 0),
      split_(p.command_bus == "split" || (p.command_bus == "standard" && tm_.split_command_bus)) {
    if (p.command_bus != "standard" && p.command_bus != "shared" && p.command_bus != "split")
        throw std::invalid_argument("command_bus '" + p.command_bus + "': expected standard, shared or split");
    const unsigned n = std::max(1u, channels);
    for (unsigned i = 0; i < n; ++i) chs_.push_back(new Channel(tm_, p_, i, depth_, split_));
    fifo_.resize(n);
}

DramModel::~DramModel() {
    for (Channel* c : chs_) delete c;
}

double DramModel::peak_gbps() const {
    return static_cast<double>(pseudo_channels()) * tm_.access_bytes / (tm_.BL * tm_.tck_ns);
}

// Address -> device by the mapping, fields from the lowest bits up (after the bytes of one
// access): RoBaRaCoCh: channel, column, pseudo-channel, bank group, bank, row (Ramulator 2's
// RoBaRaCoCh, the pseudo-channel in the rank's place); RoCoBaRaCh: channel, pseudo-channel,
// bank group, bank, column, row; -xor: the channel XORed with the row's low bits.
DramAddr DramModel::decode(std::uint64_t off) const {
    std::uint64_t a = off / tm_.access_bytes;
    const std::uint64_t nch = chs_.size();
    auto take = [&a](std::uint64_t n) {
        const std::uint64_t v = a % n;
        a /= n;
        return v;
    };
    DramAddr d;
    d.ch = static_cast<unsigned>(take(nch));
    if (map_ == 1) {
        d.pc = static_cast<unsigned>(take(tm_.pseudo_channels));
        d.bank = static_cast<unsigned>(take(tm_.banks_per_group));
        d.bg = static_cast<unsigned>(take(tm_.bank_groups));
        d.col = static_cast<std::uint32_t>(take(tm_.columns));
    } else {
        d.col = static_cast<std::uint32_t>(take(tm_.columns));
        d.pc = static_cast<unsigned>(take(tm_.pseudo_channels));
        d.bank = static_cast<unsigned>(take(tm_.banks_per_group));
        d.bg = static_cast<unsigned>(take(tm_.bank_groups));
    }
    d.row = static_cast<std::uint32_t>(take(tm_.rows));
    if (map_ == 2) d.ch = static_cast<unsigned>((d.ch ^ d.row) % nch);
    return d;
}

std::int64_t DramModel::clock(unsigned ch) const { return chs_[ch]->clk; }

bool DramModel::offer(std::uint64_t off, bool write, std::uint64_t tag) {
    const DramAddr a = decode(off);
    Channel& c = *chs_[a.ch];
    auto& q = write ? c.writes : c.reads;
    if (q.size() >= depth_) return false;
    q.push_back({tag, a, write, false, c.clk});
    return true;
}

void DramModel::tick(unsigned ch) { chs_[ch]->tick(*this); }

bool DramModel::idle(unsigned ch) const { return chs_[ch]->idle(); }

void DramModel::skip_to(unsigned ch, std::int64_t to) {
    Channel& c = *chs_[ch];
    while (c.clk < to) {
        if (c.idle() && (!p_.refresh || c.next_refresh > to)) {
            c.clk = to;
            break;
        }
        if (c.tick(*this)) continue;
        if (c.wake > to)  // nothing issues before `to`
            c.clk = to;
        else if (c.wake - 1 > c.clk)
            c.clk = c.wake - 1;
    }
}

Tick DramModel::serve(std::uint64_t off, std::uint64_t len, bool write, Tick arrival, Tick* accept,
                      std::vector<DramDone>* records) {
    const std::uint64_t acc = tm_.access_bytes;
    for (std::uint64_t o = off / acc * acc; o < off + len; o += acc) fifo_[decode(o).ch].push_back(o);
    const std::int64_t start = static_cast<std::int64_t>((arrival + tck_ - 1) / tck_);
    Tick done = arrival, accepted = arrival;
    done_.clear();
    for (unsigned ch = 0; ch < chs_.size(); ++ch) {
        auto& f = fifo_[ch];
        if (f.empty()) continue;
        Channel& c = *chs_[ch];
        skip_to(ch, start);  // an earlier arrival than the clock queues at the clock
        std::size_t offered = 0, finished = 0;
        while (finished < f.size()) {
            bool queued = false;
            while (offered < f.size() && offer(f[offered], write, offered)) {
                ++offered;
                queued = true;
            }
            if (queued) accepted = std::max(accepted, Tick(c.clk) * tck_);
            const bool issued = c.tick(*this);
            for (const DramDone& d : done_) {
                done = std::max(done, d.end);
                if (records) records->push_back(d);
            }
            finished += done_.size();
            done_.clear();
            if (!issued && c.wake != kNever && c.wake - 1 > c.clk) c.clk = c.wake - 1;
        }
        f.clear();
    }
    if (accept) *accept = accepted;
    return done;
}

}  // namespace xpu


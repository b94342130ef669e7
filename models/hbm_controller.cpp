#include "models/hbm_controller.h"

#include <algorithm>
#include <map>

#include "models/sim_time.h"

namespace xpu {

HbmController::HbmController(const sc_core::sc_module_name& n, const HbmConfig& cfg)
    : XpuModule(n),
      port("port"),
      cfg_(cfg),
      channels_(cfg.channels, cfg.channel_bandwidth_gbps / 1000.0, cfg.bucket) {
    port.register_b_transport(this, &HbmController::b_transport);
    port.register_get_direct_mem_ptr(this, &HbmController::get_direct_mem_ptr);
    granule_service_ = transfer_ticks(cfg.interleave_bytes, cfg.channel_bandwidth_gbps);
    auto pow2 = [](std::uint64_t x) { return x && (x & (x - 1)) == 0; };
    if (pow2(cfg.interleave_bytes))
        for (gran_shift_ = 0; (1ull << gran_shift_) < cfg.interleave_bytes;) ++gran_shift_;
    if (pow2(channels_.channels()) && channels_.channels() > 1) nch_mask_ = channels_.channels() - 1;
    if (cfg.model == "dram") dram_ = std::make_unique<DramModel>(cfg.dram, cfg.channels, cfg.queue_depth);
    expose_target("port", port, true, false);
}

// model dram: the transaction's requests through the DRAM controller model (models/dram.h);
// its data is back when its last request's data has moved. Back-pressure: accepted when its
// last request entered its channel's queue.
void HbmController::dram_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const Tick now = now_ticks(), arrival = now + delay.value();
    const std::uint64_t addr = gp.get_address(), len = gp.get_data_length();
    const bool write = gp.is_write();
    const unsigned passes = write && gp.get_extension<ReduceWrite>() ? 2 : 1;
    const Tick burst = static_cast<Tick>(dram_->timing().BL) * dram_->tck();
    const std::uint64_t acc = dram_->access_bytes();
    Tick accept = arrival, done = arrival;
    std::vector<DramDone>* records = recorder_ ? &records_ : nullptr;
    for (unsigned pass = 0; pass < passes; ++pass) {
        const bool w = passes == 2 ? pass == 1 : write;  // a reducing write reads, then writes
        Tick acc_t = 0;
        records_.clear();
        done = dram_->serve(addr - cfg_.base, len, w, pass == 1 ? done : arrival, &acc_t, records);
        if (pass == 0) accept = acc_t;
        dram_busy_ += burst * ((addr - cfg_.base + len + acc - 1) / acc - (addr - cfg_.base) / acc);
        // One waveform event per pseudo-channel the pass touched (per request would be 32 B each):
        // its bytes, first data start and last data end.
        std::map<unsigned, HbmChannelEvent> per_pc;
        for (const DramDone& d : records_) {
            const unsigned pc = d.channel * dram_->timing().pseudo_channels + d.pseudo_channel;
            auto it = per_pc.find(pc);
            if (it == per_pc.end())
                per_pc.emplace(pc, HbmChannelEvent{name(), static_cast<std::uint16_t>(pc), std::min<std::uint64_t>(acc, len), arrival, d.data_start, d.end});
            else {
                it->second.bytes += std::min<std::uint64_t>(acc, len);
                it->second.start = std::min(it->second.start, d.data_start);
                it->second.done = std::max(it->second.done, d.end);
            }
        }
        for (const auto& e : per_pc) recorder_->on_hbm_channel(e.second);
    }
    records_.clear();
    backpressure_ += accept - arrival;
    (write ? bytes_written_ : bytes_read_) += len;
    if (passes == 2) bytes_read_ += len;
    ++requests_;
    if (recorder_) recorder_->on_mem(mem_event(gp, name(), write, addr, len, arrival, done));
    if (auto* a = gp.get_extension<MemAccept>()) a->stall = std::max(a->stall, accept - arrival);
    delay = to_sc(done - now);
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

void HbmController::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    MemAccess a;
    a.addr = gp.get_address();
    a.len = gp.get_data_length();
    if (!in_range(a.addr, a.len)) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    if (dram_) return dram_transport(gp, delay);
    a.now = now_ticks();
    a.arrival = a.now + delay.value();
    a.write = gp.is_write();
    a.reduce = a.write && gp.get_extension<ReduceWrite>();
    a.origin = gp.get_extension<TxnOrigin>();
    const MemTiming t = access(a);
    if (auto* acc = gp.get_extension<MemAccept>()) acc->stall = std::max(acc->stall, t.stall);
    delay = to_sc(t.done - a.now);
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

// The timing probe (models/timed_memory.h): this controller serves the whole range.
bool HbmController::get_direct_mem_ptr(int, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) {
    dmi.allow_none();  // no data access: timing only
    auto* path = gp.get_extension<TimedPath>();
    if (path && !dram_ && in_range(gp.get_address(), gp.get_data_length())) path->target = this;
    return false;
}

MemTiming HbmController::access(const MemAccess& a) {
    const Tick arrival = a.arrival;
    const std::uint64_t gran = cfg_.interleave_bytes;
    const unsigned nch = channels_.channels();
    const Tick now = a.now;
    Tick accept = arrival, done = arrival;
    std::uint64_t off = a.addr - cfg_.base;
    const std::uint64_t end = off + a.len;
    const bool write = a.write;
    // A reducing write reads and writes every byte: twice the channel time.
    const unsigned passes = a.reduce ? 2 : 1;
    // The interleave rule: byte x is on channel (x / gran) % channels. The pieces are the
    // request cut at granule boundaries, in address order: a partial first and last piece, whole
    // granules between. Each piece is reserved on its own channel's calendar, exactly as the rule
    // says; a run of whole granules on neighbouring channels (up to the last channel) is one call,
    // which reserves once per group of channels with the same calendar (channel_groups.h). A
    // channel's pieces are reserved in address order, as piece by piece.
    // (Shifts and masks when the granule and the channel count are powers of two, as they
    // usually are: two 64-bit divisions per request were a measurable share of a DMA chunk.)
    const std::uint64_t granule = gran_shift_ >= 0 ? off >> gran_shift_ : off / gran;
    std::uint64_t granule_end = (granule + 1) * gran;
    unsigned ch = static_cast<unsigned>(nch_mask_ ? granule & nch_mask_ : granule % nch);
    while (off < end) {
        const std::uint64_t piece = std::min<std::uint64_t>(end, granule_end) - off;
        const bool whole = piece == gran;
        // Whole granules: as many as the request has, up to the last channel; a partial piece alone.
        const unsigned n = whole ? static_cast<unsigned>(std::min<std::uint64_t>((end - off) / gran, nch - ch)) : 1;
        const Tick service = whole ? granule_service_ * passes : transfer_ticks(piece, cfg_.channel_bandwidth_gbps) * passes;
        // Queue full: more than queue_depth pieces ahead; the piece waits outside for room. The
        // channel knows the work ahead, not the pieces: it counts them as whole granules (the usual
        // traffic, every piece of a request but its edges), whatever this piece's size. Counted
        // in this piece's own transfer time instead, a request's partial edge piece saw room for
        // 64 pieces of its own size: a 128-byte edge behind 8 whole granules was refused. Every
        // chunk of an unaligned DMA has such an edge, so it was held back while aligned ones
        // streamed (a 1000^3 GEMM on xpu-2vpu: its unaligned B tiles loaded at half the rate of
        // its A tiles, the first wait 1.86 us instead of 1.01; tests/models_alone_test.cpp).
        const Tick room = cfg_.queue_depth * granule_service_ * passes;
        channels_.reserve(ch, n, arrival, piece * passes, now, [&](unsigned first, unsigned last, Tick moved) {
            if (moved > arrival + room + service) accept = std::max(accept, moved - room - service);
            done = std::max(done, moved + cfg_.latency);
            if (recorder_) {  // per piece: the channel's queue and bytes (waveforms)
                const Tick began = moved > arrival + service ? moved - service : arrival;
                for (unsigned c = first; c < last; ++c)
                    recorder_->on_hbm_channel({name(), static_cast<std::uint16_t>(c), piece * passes, arrival, began,
                                               moved + cfg_.latency});
            }
        });
        off += piece * n;
        granule_end += gran * n;
        ch += n;
        if (ch == nch) ch = 0;
    }
    backpressure_ += accept - arrival;
    (write ? bytes_written_ : bytes_read_) += a.len;
    if (passes == 2) bytes_read_ += a.len;
    ++requests_;
    if (recorder_) recorder_->on_mem(mem_event(a.origin, name(), write, a.addr, a.len, arrival, done));
    return {done, accept - arrival};
}

std::optional<Tick> HbmController::busy_time() const {
    if (dram_) return dram_busy_ / dram_->pseudo_channels();  // average data-bus occupancy
    Tick total = 0;
    for (unsigned c = 0; c < channels_.channels(); ++c) total += channels_.busy(c);
    return total / channels_.channels();  // average channel occupancy
}

std::vector<Stat> HbmController::stats() const {
    auto d = [](auto v) { return static_cast<double>(v); };
    Tick max_ch = 0;
    for (unsigned c = 0; c < channels_.channels(); ++c) max_ch = std::max(max_ch, channels_.busy(c));
    std::vector<Stat> v = {
        {"bytes_read", d(bytes_read_), true, "bytes read from HBM", "bytes"},
        {"bytes_written", d(bytes_written_), true, "bytes written to HBM", "bytes"},
        {"requests", d(requests_), true, "transactions served", "transactions"},
        {"peak_gbps", peak_gbps(), false, "channels x channel bandwidth", "GB/s"},
        {"busiest_channel_busy_ns", ticks_to_ns(max_ch), false, "transfer time of the busiest channel", "ns"},
        {"backpressure_ns", ticks_to_ns(backpressure_), false, "total time requests waited for channel queue room", "ns"},
    };
    if (dram_) {
        const DramStats& s = dram_->stats();
        v.push_back({"row_hits", d(s.hits), true, "model dram: accesses to an open row", "accesses"});
        v.push_back({"row_misses", d(s.misses), true, "model dram: accesses to a closed bank (ACT)", "accesses"});
        v.push_back({"row_conflicts", d(s.conflicts), true, "model dram: accesses to another row than the open one (PRE + ACT)",
                     "accesses"});
        v.push_back({"refreshes", d(s.refreshes), true, "model dram: all-bank refreshes applied", "refreshes"});
    }
    return v;
}

}  // namespace xpu

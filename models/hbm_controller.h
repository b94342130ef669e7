// HbmController: high-bandwidth memory behind `channels` independent channels. Addresses are
// interleaved across channels every `interleave_bytes`. Each channel is a BandwidthCalendar
// at `channel_bandwidth_gbps` (channels with the same calendar share one: channel_groups.h): a piece takes the earliest free transfer capacity at or after
// its arrival, and its data is back `latency` after it has moved. A channel holds at most
// `queue_depth` pieces (counted as whole granules of transfer time): a request arriving at a
// fuller channel is accepted only when room frees (back-pressure, reported via MemAccept). By construction no channel ever moves data
// faster than its configured bandwidth.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>

#include "models/channel_groups.h"
#include "models/dram.h"
#include "models/params.h"
#include "models/timed_memory.h"
#include "models/unit_command.h"
#include "models/xpu_module.h"

namespace xpu {

// What a platform description sets: the module type's keys (declare(), docs/platform.md).
struct HbmParams {
    std::uint64_t capacity = 32ull << 30;
    unsigned channels = 32;
    double channel_bandwidth_gbps = 37.5;  // GB/s = bytes per ns
    Tick latency = 100'000;                // ps
    unsigned interleave_bytes = 1024;
    unsigned queue_depth = 64;             // pieces per channel
    Tick bucket = 64'000;                  // ps
    std::string model = "bandwidth";       // bandwidth | dram
    DramParams dram;                       // model dram: models/dram.h

    void declare(ParamVisitor& v) {
        v.choice("model", model, {"bandwidth", "dram"},
                 "bandwidth: channels x channel_bandwidth_gbps calendars + latency_ns; dram: the DRAM protocol "
                 "model of `standard` (banks, rows, timings, refresh; models/dram.h), channels x its pseudo-channels");
        v.bytes("capacity", capacity, 1024, 1ull << 50, "bytes of HBM");
        v.u32("channels", channels, 1, 4096, "channels", "independent channels");
        v.real("channel_bandwidth_gbps", channel_bandwidth_gbps, 0.001, 1e6, "GB/s", "GB/s per channel (1 GB/s = 1 byte/ns)");
        v.ticks_ns("latency_ns", latency, 0, 1e6, "data returns this long after its transfer slot");
        v.u32("interleave_bytes", interleave_bytes, 1, 1u << 20, "bytes", "address interleave granule across channels");
        v.u32("queue_depth", queue_depth, 1, 1u << 20, "requests",
              "requests a channel queues before back-pressure (model dram: in its read queue and in its write "
              "queue each; Ramulator 2's Generic controller holds 33)");
        // A knob of the simulator, not of the hardware: the dump shows it only when set.
        v.ticks_ns("calendar_bucket_ns", bucket, 1, 1e6,
                   "resolution of a channel's bandwidth calendar (rounded down to a power of two ps): "
                   "no bucket carries more than bandwidth x bucket; finer is more exact and slower",
                   Dump::WhenSet);
        dram.declare(v);
    }
};

// The parameters and what the builder derives.
struct HbmConfig : HbmParams {
    std::uint64_t base = 0;  // where the address map put it
};

class HbmController : public XpuModule, public TimedMemory {
public:
    tlm_utils::multi_passthrough_target_socket<HbmController, 32, tlm::tlm_base_protocol_types, 0,
                                               sc_core::SC_ZERO_OR_MORE_BOUND>
        port;

    HbmController(const sc_core::sc_module_name& n, const HbmConfig& cfg);
    const char* kind() const override { return "HbmController"; }
    Role role() const override { return Role::Hbm; }
    ModuleFacts facts() const override {
        ModuleFacts f;
        f.peak_gbps = peak_gbps();
        f.capacity = cfg_.capacity;
        f.channels = cfg_.channels;
        f.bytes_read = bytes_read_;
        f.bytes_written = bytes_written_;
        return f;
    }
    std::optional<Tick> busy_time() const override;
    std::vector<Stat> stats() const override;
    std::uint64_t bytes_read() const { return bytes_read_; }
    std::uint64_t bytes_written() const { return bytes_written_; }
    double peak_gbps() const { return dram_ ? dram_->peak_gbps() : cfg_.channels * cfg_.channel_bandwidth_gbps; }
    const HbmConfig& config() const { return cfg_; }
    // The timing of one request (b_transport's, without the payload): models/timed_memory.h.
    MemTiming access(const MemAccess& a) override;

private:
    void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    bool get_direct_mem_ptr(int id, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);
    bool in_range(std::uint64_t addr, std::uint64_t len) const {
        return !(addr < cfg_.base || addr - cfg_.base > cfg_.capacity || len > cfg_.capacity - (addr - cfg_.base));
    }
    void dram_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    HbmConfig cfg_;
    std::unique_ptr<DramModel> dram_;  // model dram
    Tick dram_busy_ = 0;               // data-bus time of every burst (model dram)
    std::vector<DramDone> records_;    // model dram: the requests of the transaction in service
    ChannelGroups channels_;          // a calendar per channel, shared by channels alike (channel_groups.h)
    Tick granule_service_ = 0;       // transfer time of one full interleave granule
    int gran_shift_ = -1;            // log2(interleave_bytes) when a power of two, else -1
    std::uint64_t nch_mask_ = 0;     // channels - 1 when a power of two (> 1), else 0 (divide)
    std::uint64_t bytes_read_ = 0, bytes_written_ = 0, requests_ = 0;
    Tick backpressure_ = 0;          // total time requests waited for queue room
};

}  // namespace xpu

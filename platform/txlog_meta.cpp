#include "platform/txlog_meta.h"

#include <set>

#include "models/hbm_controller.h"

namespace xpu {

// One unit line per module, from what the module says of itself (role, chip, facts); one
// issue_slot_ps line per core; one hbm line per HBM controller that spreads requests by its
// interleave rule (model bandwidth: the DRAM model places bursts by its own address mapping).
txlog::Header txlog_header(const platform::Platform& p, const std::string& trace_file, const std::string& platform_file) {
    txlog::Header h;
    auto& kv = h.meta;
    kv["trace"] = trace_file;
    kv["platform"] = platform_file;
    for (XpuModule* m : p.modules()) {
        const ModuleFacts f = m->facts();
        txlog::Unit u;
        u.path = m->name();
        u.kind = m->kind();
        u.role = m->role();
        u.chip = m->chip();
        u.peak_gbps = f.peak_gbps;
        u.capacity = f.capacity;
        u.packet_bytes = f.packet_bytes;
        u.packet_overhead_bytes = f.packet_overhead_bytes;
        u.hop_latency_ps = f.hop_latency;
        if (f.core >= 0)  // a core
            kv["issue_slot_ps." + std::to_string(u.chip) + "." + std::to_string(f.core)] = std::to_string(f.issue_slot);
        h.units.push_back(u);
        if (const auto* hbm = dynamic_cast<const HbmController*>(m); hbm && hbm->config().model == "bandwidth") {
            const HbmConfig& c = hbm->config();
            txlog::HbmLayout l;
            l.path = u.path;
            l.base = c.base;
            l.interleave = c.interleave_bytes;
            l.channels = c.channels ? c.channels : 1;
            l.latency_ps = c.latency;
            l.channel_gbps = c.channel_bandwidth_gbps;
            h.hbm.push_back(l);
        }
    }
    // Which VMEM each core's vmem: operands address, when the cores address more than one (the
    // analysis tells their VMEM accesses apart by it; absent: one VMEM, every core's).
    std::set<std::string> vmems;
    for (const auto& [core, v] : p.spaces().vmem_of_core)
        if (!v.target.empty()) vmems.insert(v.target);
    if (vmems.size() > 1)
        for (const auto& [core, v] : p.spaces().vmem_of_core) kv["vmem_of_core." + std::to_string(core)] = v.target;
    return h;
}

std::string txlog_meta(const platform::Platform& p, const std::string& trace_file, const std::string& platform_file) {
    return txlog::format_header(txlog_header(p, trace_file, platform_file));
}

}  // namespace xpu

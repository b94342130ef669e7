#include "platform/txlog_meta.h"

#include <map>

#include "traces/txlog_header.h"
#include "models/dma_engine.h"
#include "models/hbm_controller.h"
#include "models/ici.h"
#include "models/scalar_core.h"
#include "models/sync_flags.h"
#include "models/vmem.h"

namespace xpu {

namespace {
// The chip a module belongs to, from its hierarchical name (xpu.chip3.core0...); -1 for the
// links between chips.
int chip_of(const std::string& path) {
    const auto p = path.find(".chip");
    if (p == std::string::npos || path.find(".links.") != std::string::npos) return -1;
    int v = 0;
    std::size_t i = p + 5;
    if (i >= path.size() || !std::isdigit(static_cast<unsigned char>(path[i]))) return -1;
    while (i < path.size() && std::isdigit(static_cast<unsigned char>(path[i]))) v = v * 10 + (path[i++] - '0');
    return v;
}
}  // namespace

std::string txlog_meta(const platform::Platform& p, const std::string& trace_file, const std::string& platform_file) {
    txlog::Header h;
    auto& kv = h.meta;
    kv["trace"] = trace_file;
    kv["platform"] = platform_file;
        for (XpuModule* m : p.modules()) {
        txlog::Unit u;
        u.path = m->name();
        u.kind = m->kind();
        u.role = m->role();
        u.chip = chip_of(u.path);
        if (auto* h = dynamic_cast<HbmController*>(m)) {
            u.peak_gbps = h->peak_gbps();
            u.capacity = h->config().capacity;
        } else if (auto* v = dynamic_cast<Vmem*>(m)) {
            u.capacity = v->config().capacity;
        } else if (auto* f = dynamic_cast<SyncFlags*>(m)) {
            u.capacity = f->config().flags;  // flags, for the analysis's transformations
        } else if (auto* d = dynamic_cast<DmaEngine*>(m)) {
            u.peak_gbps = d->config().bandwidth_gbps;

        } else if (auto* l = dynamic_cast<IciLink*>(m)) {
            u.peak_gbps = l->config().bandwidth_gbps;
        } else if (auto* c = dynamic_cast<ScalarCore*>(m)) {
            const auto& cfg = c->config();
            kv["issue_slot_ps." + std::to_string(cfg.chip) + "." + std::to_string(cfg.core)] =
                std::to_string(cfg.cycle / (cfg.issue_width ? cfg.issue_width : 1));
        }
        h.units.push_back(u);
    }
    return txlog::format_header(h);
}

}  // namespace xpu

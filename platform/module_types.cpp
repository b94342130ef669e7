#include "platform/module_types.h"

#include <sstream>
#include <stdexcept>

#include "models/dma_engine.h"
#include "models/hbm_controller.h"
#include "models/address.h"
#include "models/ici.h"
#include "models/matrix_unit.h"
#include "models/scalar_core.h"
#include "models/sim_time.h"
#include "models/sync_flags.h"
#include "models/trace_injector.h"
#include "models/vector_unit.h"
#include "models/vmem.h"
#include "traces/trace_reader.h"

namespace xpu::platform {

namespace {

constexpr unsigned kBig = 1u << 20;

// Latencies given in ns in the YAML, kept in ps in the configs.
void latency_ns(ParamReader& p, const char* key, Tick& v, const char* doc) {
    double ns = ticks_to_ns(v);
    p.real(key, ns, 0.0, 1e6, doc);
    v = ns_to_ticks(ns);
}

struct TraceInjectorSpec : ModuleSpec {
    void params(ParamReader&) override {}
    std::unique_ptr<XpuModule> build(const std::string& n, const BuildContext& ctx) const override {
        TraceInjectorConfig c;
        c.trace = ctx.stream ? ctx.trace : nullptr;
        c.stream = ctx.stream.value_or(0);
        return std::make_unique<TraceInjector>(n.c_str(), c);
    }
};

struct ScalarCoreSpec : ModuleSpec {
    ScalarCoreConfig c;
    void params(ParamReader& p) override {
        p.u16("core", c.core, 0, 255, "core id: runs the trace stream (this chip, core)");
        p.u32("fetch_width", c.fetch_width, 1, 64, "instructions the front end delivers per cycle");
        p.u32("issue_width", c.issue_width, 1, 64, "instructions issued per cycle (VLIW slots)");
        p.u32("iqueue_depth", c.iqueue_depth, 1, 4096, "fetched but not yet issued instructions");
        p.u32("salu_latency", c.salu_latency, 1, 1000, "scalar ALU latency, cycles");
        p.u32("branch_latency", c.branch_latency, 1, 1000, "branch latency, cycles");
        p.u32("sync_latency", c.sync_latency, 1, 1000, "cycles for a flag operation to take effect");
        p.u32("batch", c.batch, 1, 65536, "instructions per fetch from the trace (host-side batching, no timing effect)");
    }
    std::optional<std::uint16_t> core_id() const override { return c.core; }
    std::unique_ptr<XpuModule> build(const std::string& n, const BuildContext& ctx) const override {
        ScalarCoreConfig k = c;
        k.chip = ctx.chip;
        k.annotations = ctx.trace ? ctx.trace->strings().size() : 0;
        k.cycle = ctx.cycle;
        k.quantum = ctx.quantum;
        return std::make_unique<ScalarCore>(n.c_str(), k);
    }
};

struct VectorUnitSpec : ModuleSpec {
    VectorUnitConfig c;
    void params(ParamReader& p) override {
        p.u32("lanes", c.lanes, 1, 4096, "lanes per vector register");
        p.u32("sublanes", c.sublanes, 1, 256, "sublanes per vector register");
        p.u32("queue_depth", c.queue_depth, 1, 4096, "instructions waiting in the unit");
        p.u32("alu_latency", c.alu_latency, 1, 1000, "elementwise op latency, cycles");
        p.u32("trans_cycles_per_vreg", c.trans_cycles_per_vreg, 1, 1000, "transcendental throughput, cycles per vector register");
        p.u32("trans_latency", c.trans_latency, 1, 1000, "transcendental latency, cycles");
        p.u32("xlu_cycles_per_vreg", c.xlu_cycles_per_vreg, 1, 1000, "reduce/permute throughput, cycles per vector register");
        p.u32("xlu_latency", c.xlu_latency, 1, 1000, "reduce/permute latency, cycles");
        p.u32("ldst_bytes_per_cycle", c.ldst_bytes_per_cycle, 1, kBig, "load/store path width, bytes per cycle");
    }
    std::unique_ptr<XpuModule> build(const std::string& n, const BuildContext& ctx) const override {
        VectorUnitConfig k = c;
        k.cycle = ctx.cycle;
        k.vmem_base = ctx.space_base[static_cast<unsigned>(Space::Vmem)];
        return std::make_unique<VectorUnit>(n.c_str(), k);
    }
};

struct MatrixUnitSpec : ModuleSpec {
    MatrixUnitConfig c;
    void params(ParamReader& p) override {
        p.u32("rows", c.rows, 1, 4096, "systolic array rows (weight rows, the K of a tile)");
        p.u32("cols", c.cols, 1, 4096, "systolic array columns (the N of a tile)");
        p.boolean("double_buffer", c.double_buffer, "shadow weight buffer: load the next tile while streaming");
        p.u32("queue_depth", c.queue_depth, 1, 4096, "instructions waiting in the unit");
        p.u32("pop_rows_per_cycle", c.pop_rows_per_cycle, 1, 4096, "result rows popped per cycle");
        p.u32("pop_latency", c.pop_latency, 0, 1000, "pop latency, cycles");
    }
    std::unique_ptr<XpuModule> build(const std::string& n, const BuildContext& ctx) const override {
        MatrixUnitConfig k = c;
        k.cycle = ctx.cycle;
        return std::make_unique<MatrixUnit>(n.c_str(), k);
    }
};

struct VmemSpec : ModuleSpec {
    VmemConfig c;
    void params(ParamReader& p) override {
        p.bytes("capacity", c.capacity, 1024, 1ull << 40, "bytes of on-chip vector memory");
        p.u32("ports", c.ports, 1, 256, "independent access ports");
        p.u32("port_bytes_per_cycle", c.port_bytes_per_cycle, 1, kBig, "bytes per cycle per port");
        p.u32("latency", c.latency, 0, 1000, "access latency after the transfer, cycles");
    }
    std::optional<std::uint64_t> capacity() const override { return c.capacity; }
    std::unique_ptr<XpuModule> build(const std::string& n, const BuildContext& ctx) const override {
        VmemConfig k = c;
        k.cycle = ctx.cycle;
        k.base = ctx.base.value_or(0);
        return std::make_unique<Vmem>(n.c_str(), k);
    }
};

struct HbmSpec : ModuleSpec {
    HbmConfig c;
    void params(ParamReader& p) override {
        p.bytes("capacity", c.capacity, 1024, 1ull << 50, "bytes of HBM");
        p.u32("channels", c.channels, 1, 4096, "independent channels");
        p.real("channel_bandwidth_gbps", c.channel_bandwidth_gbps, 0.001, 1e6, "GB/s per channel (1 GB/s = 1 byte/ns)");
        latency_ns(p, "latency_ns", c.latency, "data returns this long after its transfer slot");
        p.u32("interleave_bytes", c.interleave_bytes, 1, kBig, "address interleave granule across channels");
        p.u32("queue_depth", c.queue_depth, 1, kBig, "requests a channel queues before back-pressure");
    }
    std::optional<std::uint64_t> capacity() const override { return c.capacity; }
    std::unique_ptr<XpuModule> build(const std::string& n, const BuildContext& ctx) const override {
        HbmConfig k = c;
        k.base = ctx.base.value_or(0);
        return std::make_unique<HbmController>(n.c_str(), k);
    }
};

struct DmaEngineSpec : ModuleSpec {
    DmaEngineConfig c;
    void params(ParamReader& p) override {
        p.u32("queue_depth", c.queue_depth, 1, 4096, "descriptors waiting to start");
        p.u32("chunk_bytes", c.chunk_bytes, 1, 1u << 24, "bytes per memory transaction");
        p.u32("max_outstanding", c.max_outstanding, 1, kBig, "chunks in flight");
        p.real("bandwidth_gbps", c.bandwidth_gbps, 0.001, 1e7, "chunk issue rate, GB/s");
        p.u32("setup_latency", c.setup_latency, 0, 100000, "cycles from dequeue to the first chunk");
    }
    std::unique_ptr<XpuModule> build(const std::string& n, const BuildContext& ctx) const override {
        DmaEngineConfig k = c;
        k.chip = ctx.chip;
        k.cycle = ctx.cycle;
        k.quantum = ctx.quantum;
        k.space_base = ctx.space_base;
        k.flags_mapped = ctx.flags_base.has_value();
        k.flags_base = ctx.flags_base.value_or(0);
        return std::make_unique<DmaEngine>(n.c_str(), k);
    }
};

struct SyncFlagsSpec : ModuleSpec {
    SyncFlagsConfig c;
    void params(ParamReader& p) override {
        p.u32("flags", c.flags, 1, 65536, "number of sync flags");
    }
    // Mapped (for flag writes from other chips) as 8 bytes per flag.
    std::optional<std::uint64_t> capacity() const override { return std::uint64_t(c.flags) * 8; }
    std::unique_ptr<XpuModule> build(const std::string& n, const BuildContext& ctx) const override {
        SyncFlagsConfig k = c;
        k.barrier_participants = ctx.cores;
        return std::make_unique<SyncFlags>(n.c_str(), k);
    }
};

struct InterconnectSpec : ModuleSpec {
    InterconnectConfig c;
    void params(ParamReader& p) override {
        latency_ns(p, "latency_ns", c.latency, "traversal latency per transaction");
    }
    std::unique_ptr<XpuModule> build(const std::string& n, const BuildContext& ctx) const override {
        InterconnectConfig k = c;
        k.routes = ctx.routes;
        return std::make_unique<Interconnect>(n.c_str(), k);
    }
};

struct IciPortSpec : ModuleSpec {
    IciPortConfig c;
    void params(ParamReader& p) override {
        latency_ns(p, "latency_ns", c.latency, "latency through the port");
    }
    // It serves the whole remote window of the address map (bit 63 set).
    std::optional<std::uint64_t> capacity() const override { return kRemoteBit; }
    std::unique_ptr<XpuModule> build(const std::string& n, const BuildContext& ctx) const override {
        IciPortConfig k = c;
        k.chip = ctx.chip;
        k.dims = ctx.dims.empty() ? std::vector<unsigned>{1} : ctx.dims;
        k.links_per_neighbour = ctx.links_per_neighbour;
        return std::make_unique<IciPort>(n.c_str(), k);
    }
};

template <class S>
ModuleType type(const char* name, const char* doc) {
    return {name, doc, [] { return std::make_unique<S>(); }};
}

}  // namespace

namespace {
std::vector<ModuleType>& registry() {
    static std::vector<ModuleType> types = {
        type<TraceInjectorSpec>("TraceInjector", "replays one trace stream as the instruction memory of a core (socket: port)"),
        type<ScalarCoreSpec>("ScalarCore", "in-order issue, register scoreboard, dispatch, sync (sockets: imem, vpu[i], mxu[i], dma[i], flags)"),
        type<VectorUnitSpec>("VectorUnit", "SIMD unit: ALU, transcendental, cross-lane, load/store pipelines (sockets: cmd, mem)"),
        type<MatrixUnitSpec>("MatrixUnit", "weight-stationary systolic array (socket: cmd)"),
        type<VmemSpec>("Vmem", "on-chip vector memory (socket: port)"),
        type<HbmSpec>("HbmController", "HBM channels with bandwidth, latency, queueing (socket: port)"),
        type<DmaEngineSpec>("DmaEngine", "DMA descriptors chunked into TLM transactions (sockets: cmd, mem, flags)"),
        type<SyncFlagsSpec>("SyncFlags", "sync flags and barriers (socket: port)"),
        type<InterconnectSpec>("Interconnect", "address-mapped router (sockets: in, out[i])"),
        type<IciPortSpec>("IciPort", "inter-chip port, dimension-order routing over the topology's links (sockets: in, local, links[i])"),
    };
    return types;
}
}  // namespace

const std::vector<ModuleType>& module_types() { return registry(); }

void register_module_type(ModuleType t) {
    if (find_module_type(t.name)) throw std::invalid_argument("module type '" + t.name + "' is already registered");
    registry().push_back(std::move(t));
}

const ModuleType* find_module_type(const std::string& name) {
    for (const auto& t : module_types())
        if (t.name == name) return &t;
    return nullptr;
}

std::string describe_module_types() {
    std::ostringstream os;
    for (const auto& t : module_types()) {
        os << t.name << ": " << t.doc << "\n";
        auto spec = t.make();
        ParamReader p(nullptr, YAML::Node(YAML::NodeType::Undefined), t.name);
        spec->params(p);
        for (const auto& d : p.docs())
            os << "  " << d.key << " (" << d.type << (d.range.empty() ? "" : ", " + d.range)
               << ", default " << d.def << "): " << d.doc << "\n";
    }
    return os.str();
}

}  // namespace xpu::platform

#include "platform/module_types.h"

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

// What the builder fills into each model's config (the parameters come from the description).

void fill_injector(TraceInjectorConfig& k, const BuildContext& ctx) {
    k.trace = ctx.stream ? ctx.trace : nullptr;
    k.stream = ctx.stream.value_or(0);
}

void fill_core(ScalarCoreConfig& k, const BuildContext& ctx) {
    k.chip = ctx.chip;
    k.annotations = ctx.trace ? ctx.trace->strings().size() : 0;
    k.stream_instructions = ctx.trace && ctx.stream ? ctx.trace->streams()[*ctx.stream].instructions : 0;
    k.cycle = ctx.cycle;
}

std::optional<std::uint16_t> core_of(const ScalarCoreConfig& k) { return k.core; }

void fill_vector_unit(VectorUnitConfig& k, const BuildContext& ctx) {
    k.cycle = ctx.cycle;
    k.vmem_base = ctx.vmem_base;
}

void fill_matrix_unit(MatrixUnitConfig& k, const BuildContext& ctx) { k.cycle = ctx.cycle; }

void fill_vmem(VmemConfig& k, const BuildContext& ctx) {
    k.cycle = ctx.cycle;
    k.base = ctx.base.value_or(0);
}

std::optional<std::uint64_t> vmem_capacity(const VmemConfig& k) { return k.capacity; }

void fill_hbm(HbmConfig& k, const BuildContext& ctx) { k.base = ctx.base.value_or(0); }

std::optional<std::uint64_t> hbm_capacity(const HbmConfig& k) { return k.capacity; }

void fill_dma(DmaEngineConfig& k, const BuildContext& ctx) {
    k.chip = ctx.chip;
    k.cycle = ctx.cycle;
    k.space_base = ctx.space_base;
    k.core_vmem_base = ctx.core_vmem_base;
    k.flags_mapped = ctx.flags_base.has_value();
    k.flags_base = ctx.flags_base.value_or(0);
}

void fill_flags(SyncFlagsConfig& k, const BuildContext& ctx) { k.barrier_participants = ctx.cores; }

// Mapped (for flag writes from other chips) as 8 bytes per flag.
std::optional<std::uint64_t> flags_capacity(const SyncFlagsConfig& k) { return std::uint64_t(k.flags) * 8; }

void fill_interconnect(InterconnectConfig& k, const BuildContext& ctx) { k.routes = ctx.routes; }

void fill_ici_port(IciPortConfig& k, const BuildContext& ctx) {
    k.chip = ctx.chip;
    k.dims = ctx.dims.empty() ? std::vector<unsigned>{1} : ctx.dims;
    k.links_per_neighbour = ctx.links_per_neighbour;
    k.switched = ctx.switched;
}

// It serves the whole remote window of the address map (bit 63 set).
std::optional<std::uint64_t> ici_capacity(const IciPortConfig&) { return kRemoteBit; }

std::vector<ModuleType> shipped_types() {
    return {
        model_type<TraceInjector, TraceInjectorConfig>(
            "TraceInjector", "replays one trace stream as the instruction memory of a core (socket: port)", {fill_injector}),
        model_type<ScalarCore, ScalarCoreConfig>(
            "ScalarCore", "in-order issue, register scoreboard, dispatch, sync (sockets: imem, vpu[i], mxu[i], dma[i], flags)",
            {fill_core, nullptr, core_of}),
        model_type<VectorUnit, VectorUnitConfig>(
            "VectorUnit", "SIMD unit: ALU, transcendental, cross-lane, load/store pipelines (sockets: cmd, mem)",
            {fill_vector_unit}),
        model_type<MatrixUnit, MatrixUnitConfig>("MatrixUnit", "systolic array: weight-, output- or input-stationary (socket: cmd)",
                                                 {fill_matrix_unit}),
        model_type<Vmem, VmemConfig>("Vmem", "on-chip vector memory (socket: port)", {fill_vmem, vmem_capacity}),
        model_type<HbmController, HbmConfig>("HbmController", "HBM channels with bandwidth, latency, queueing (socket: port)",
                                             {fill_hbm, hbm_capacity}),
        model_type<DmaEngine, DmaEngineConfig>(
            "DmaEngine", "DMA descriptors chunked into TLM transactions (sockets: cmd, mem, flags)", {fill_dma}),
        model_type<SyncFlags, SyncFlagsConfig>("SyncFlags", "sync flags and barriers (socket: port)",
                                               {fill_flags, flags_capacity}),
        model_type<Interconnect, InterconnectConfig>("Interconnect", "address-mapped router (sockets: in, out[i])",
                                                     {fill_interconnect}),
        model_type<IciPort, IciPortConfig>(
            "IciPort", "inter-chip port, dimension-order routing over the topology's links (sockets: in, local, links[i])",
            {fill_ici_port, ici_capacity}),
    };
}

// Function-local, so that a registrar running at static initialisation finds it built.
std::vector<ModuleType>& registry() {
    static std::vector<ModuleType> types = shipped_types();
    return types;
}

}  // namespace

const std::vector<ModuleType>& module_types() { return registry(); }

const ModuleType* find_module_type(const std::string& name) {
    for (const auto& t : module_types())
        if (t.name == name) return &t;
    return nullptr;
}

void register_module_type(ModuleType type) {
    if (find_module_type(type.name)) throw std::logic_error("module type '" + type.name + "' is already registered");
    registry().push_back(std::move(type));
}

}  // namespace xpu::platform

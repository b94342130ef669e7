// The role a module plays on the chip, as the models describe themselves and as the transaction
// log's header records it: what the analysis, the waveform writer and the run's accounting ask
// of a module ("is it a link?", "is it an HBM?"), in place of comparing type names. A new module
// type picks the role it plays (or Other) and is then treated like the others of that role.
#pragma once

#include <cstdint>
#include <string_view>

namespace xpu {

enum class Role : std::uint8_t {
    Other,     // a module none of the questions below concern
    Injector,  // replays a trace stream as a core's instruction memory
    Core,      // issues one trace stream's instructions
    Vector,    // vector unit: a pipeline that executes instructions
    Matrix,    // matrix unit: likewise
    Dma,       // DMA engine: moves descriptors' bytes, raises completion flags
    Vmem,      // on-chip vector memory
    Hbm,       // off-chip memory with a bandwidth ceiling
    Flags,     // sync flags of a chip
    Router,    // on-chip interconnect
    IciPort,   // a chip's port onto the inter-chip links
    Link,      // an inter-chip link (not on a chip)
};

inline constexpr Role kAllRoles[] = {Role::Other, Role::Injector, Role::Core, Role::Vector, Role::Matrix, Role::Dma,
                                     Role::Vmem,  Role::Hbm,      Role::Flags, Role::Router, Role::IciPort, Role::Link};

// Lower-case names, as the log header writes them.
inline const char* role_name(Role r) {
    switch (r) {
        case Role::Other: return "other";
        case Role::Injector: return "injector";
        case Role::Core: return "core";
        case Role::Vector: return "vector";
        case Role::Matrix: return "matrix";
        case Role::Dma: return "dma";
        case Role::Vmem: return "vmem";
        case Role::Hbm: return "hbm";
        case Role::Flags: return "flags";
        case Role::Router: return "router";
        case Role::IciPort: return "ici_port";
        case Role::Link: return "link";
    }
    return "other";
}

inline bool parse_role(std::string_view s, Role& out) {
    for (Role r : kAllRoles)
        if (s == role_name(r)) {
            out = r;
            return true;
        }
    return false;
}

// Units whose busy time is a pipeline's occupancy (utilisation, stall accounting).
inline bool is_execution_unit(Role r) { return r == Role::Vector || r == Role::Matrix || r == Role::Dma; }

}  // namespace xpu

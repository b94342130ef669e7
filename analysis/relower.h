// Lowering a collective again: what makes `collective_algorithm` (analysis/collective_choice.h) a
// change that can be replayed and applied, where the run's trace is a collective that
// xpu_tracegen wrote.
//
// The algorithm is the lowering's choice, not an order of this trace's instructions, so no patch
// expresses it. But where the program is exactly what `xpu_tracegen collective` writes for some
// parameters, the same collective lowered another way is `xpu_tracegen collective` with the
// other algorithm: a trace of the same tensor, the same chips and the same pieces, which the
// verification replays like any patched trace and `xpu_analyze --apply` writes.
//
// Recognition is by writing the program again, never by guessing: the operation and the
// algorithm are the first two components of every annotation ("all-gather/torus3d/..."), the
// chips are the streams (chip i, core 0, in order), and the bytes and pieces follow from chip 0's
// DMAs (their count and bytes grow in proportion with the pieces and the tensor: measured on two
// small probes of the same lowering); the rest (torus dimensions, element size, DMA engines, the
// planted serial steps) is tried, and a set of parameters is taken only if the generator writes,
// for it, the very program and string table the run had. Anything else (an edited trace, another
// generator's, a collective inside a model) is not recognised and keeps the advice.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/run_data.h"
#include "traces/gen/collective.h"

namespace xpu::analysis {

// A suggestion's trace written again: the collective as xpu_tracegen lowers it with `params`.
struct Relowering {
    gen::CollectiveParams params;
    std::uint64_t instructions = 0;  // of the trace it writes
    std::string command;             // tracegen_command(params, ...)
    double simulated_ns = 0;         // what the search's replay of it took (0: not simulated): the
                                     // verification takes it instead of replaying the same trace again
};

// The parameters xpu_tracegen writes exactly this program for, if there are any (the first found).
// Where several DMA engine counts write it (a collective of few DMAs uses only the first engines),
// `engines` (the platform's: what `--platform` tiles for) is taken first, then the fewest.
std::optional<gen::CollectiveParams> recognise_collective(const std::vector<Stream>& streams,
                                                           const std::vector<std::string>& strings, unsigned engines = 0);

// The command line that writes `p` ("xpu_tracegen collective --op ..."), for the reports; where
// the DMA engines are not the generator's default, `--platform PLATFORM` (the run's: its engines).
std::string tracegen_command(const gen::CollectiveParams& p, const std::string& platform);

// The collective lowered as `target` (a recognised one with another algorithm, and the torus's
// dimensions where it had none), or null where the generator refuses it (a tensor that does not
// split into that algorithm's pieces).
std::shared_ptr<const Relowering> relower(const gen::CollectiveParams& target, const std::string& platform);

// The other lowerings xpu_tracegen has for the recognised collective `mine`, to be measured:
// ring, bidir-ring and direct, and, on a torus platform (`torus_dims`, the platform's: empty if
// none), the four torus algorithms of its dimension count on those dimensions; each with the
// pieces per shard of `mine` and with four times as many (pipelined steps); the planted serial
// steps dropped (no compiler's choice). Not `mine` itself. The generator refuses some (a tensor
// that does not split into their pieces): the search leaves those out.
std::vector<gen::CollectiveParams> relowering_alternatives(const gen::CollectiveParams& mine, const std::vector<unsigned>& torus_dims);

// The search's result: the fastest lowering measured, if one beat the run.
struct RelowerSearch {
    bool ran = false;                         // false: nothing measured (no sim_main, no scratch folder, no alternative replayed)
    std::shared_ptr<const Relowering> best;   // null: none ended more than the floor before the run
    Tick best_end = 0;                        // its replay's simulated end
    std::size_t measured = 0;                 // the alternatives simulated
    std::size_t left_out = 0;                 // not simulated: the generator refuses them, or over the search's budget
};

// Measures `alternatives` (relowering_alternatives) by simulating each, as the verification
// replays a patch (analysis/replay.h: sim_main --no-txlog --deterministic, in parallel), on
// `platform_file`: the fastest (the first listed of equals) if it ends more than verify_floor()
// before the run did (`run_end`, of a run of `run_instructions`: the run's own end, which the
// verification checks its replay of the original reproduces, rather than a second replay of
// it). Bounded by instruction counts (each at most 4x the run's, all at most 6x, the smallest
// first; small collectives try all), so that the search of a large collective costs a few
// replays, not dozens. `shown_platform` names the platform in the command it gives
// (--platform, for the DMA engines).
RelowerSearch fastest_relowering(const std::vector<gen::CollectiveParams>& alternatives, Tick run_end, std::uint64_t run_instructions,
                                 const std::string& platform_file, const std::string& shown_platform);

// Writes the collective `p` to `path` (xpu_tracegen's trace, byte for byte); returns its instructions.
std::uint64_t write_collective(const gen::CollectiveParams& p, const std::string& path);

}  // namespace xpu::analysis

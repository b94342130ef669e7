// Waveforms for GTKWave: the machine's state as VCD signals named after the SystemC hierarchy
// (xpu.chip0.core0.mxu0.busy), fed by the models' Recorder interface (docs/waveforms.md).
//
// The models report events in host order, not time order (temporal decoupling; a DMA reports
// when its completion flag is raised, long after it started), so the writer turns each event
// into value changes of the signals it touches, keeps them (compact 16-byte records, only for
// selected signals and only inside the window: everything else is filtered when the event
// arrives), and sorts them when finish() writes the file. Beyond `memory_limit` bytes of
// records it sorts what it holds and spills it to a temporary run file beside the output; finish
// merges the runs. Memory is min(16 B x changes, memory_limit); disk, 16 B per spilled change.
//
//   VcdWriter vcd(sim.platform(), opts);   // throws std::invalid_argument (bad glob or window)
//   vcd.attach(sim.platform());            // or sim.platform().set_recorder(&vcd)
//   auto r = sim.run();
//   vcd.finish(ns_to_ticks(r.simulated_ns));   // throws std::runtime_error if it cannot write
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/recorder.h"

namespace xpu {
class XpuModule;
namespace trace {
struct VmemLive;
}
}  // namespace xpu

namespace xpu::platform {

class Platform;
class VcdOut;

struct VcdOptions {
    std::string path;  // OUT.vcd; OUT.gtkw, OUT.opcodes.txt and OUT.stalls.txt go beside it
    // Where the files will be once the run is complete, if not at `path` (sim_main writes into
    // a staging folder that becomes --out): what the save file names. Empty = `path`.
    std::string shown_path;
    // Comma-separated globs (`*` any run of characters, `?` one) on full signal names such as
    // xpu.chip0.core0.mxu0.busy; a signal is written if any glob matches it. Empty = all.
    std::string signals;
    // Window [start, end) in ps: changes outside it are dropped when the event arrives; the
    // state at `start` is the file's initial values.
    Tick start = 0;
    Tick end = std::numeric_limits<Tick>::max();
    // Bytes of change records (16 B each) kept in memory before a sorted run is spilled to
    // disk; reserved as address space up front, backed only as records fill it.
    std::size_t memory_limit = std::size_t(256) << 20;

    // "A:B" in ns (either side may be empty: ":B", "A:"; decimals allowed) -> start/end in ps.
    // Throws std::invalid_argument with a message naming the text.
    void set_window_ns(const std::string& text);
};

class VcdWriter : public Recorder {
public:
    // Declares the signals every module of `platform` offers (XpuModule::waveforms: by default
    // those of its role: a core's, a vector or matrix unit's, a DMA engine's, an HBM's with each
    // of its channels (xpu.chip0.hbm.ch07.requests), a VMEM's with its bytes_allocated, by
    // liveness (traces/vmem_liveness.h), a link's) and selects them by `opts.signals`. Throws
    // std::invalid_argument if a glob matches no signal or the window is empty, and
    // std::runtime_error if PATH cannot be written (checked now, not after the run). Writes
    // nothing else until finish().
    VcdWriter(const Platform& platform, VcdOptions opts);
    ~VcdWriter() override;
    VcdWriter(const VcdWriter&) = delete;
    VcdWriter& operator=(const VcdWriter&) = delete;

    // Sets this writer as the recorder of the modules that have a selected signal only (the
    // others keep a null recorder: unselected blocks then cost nothing at all), plus, for a
    // selected bytes_allocated, the cores whose streams use that VMEM and their chips' DMA
    // engines (whose instructions and DMAs it follows). Replaces any recorder those modules
    // had; use Platform::set_recorder(&writer) (or a tee) otherwise.
    void attach(Platform& platform);

    void on_instruction(const InstrEvent& e) override;
    void on_dma(const DmaEvent& e) override;
    void on_mem(const MemEvent& e) override;
    void on_unit_op(const UnitOpEvent& e) override;
    void on_hbm_channel(const HbmChannelEvent& e) override;

    // Writes the VCD (to PATH.tmp, then renamed to PATH), the GTKWave save file and the two
    // translate filter files. `end` (ps, e.g. the simulated time of the run) is the last
    // timestamp of the file (clipped to the window). Call once, after the run; events reported
    // afterwards are ignored. Throws std::runtime_error naming the file it could not write.
    void finish(Tick end);

    // Full names (without bit range) of the selected signals, in file order.
    std::vector<std::string> selected_signals() const;
    std::size_t declared_signals() const;
    // Value-change records kept (in memory or spilled) so far; unchanged by finish().
    std::uint64_t changes() const;
    std::size_t spilled_runs() const;
    const std::string& path() const { return opts_.path; }
    std::string shown(const std::string& written) const;  // its name once the run is complete
    std::string gtkw_path() const;
    std::string opcodes_filter_path() const;
    std::string stalls_filter_path() const;

    // Stall causes (the `stall` signal of a ScalarCore).
    enum Stall : std::uint8_t { kNoStall = 0, kSupply = 1, kDependency = 2, kUnitBusy = 3, kSyncWait = 4 };

    struct Record;
    struct Channel;
    struct Signal;
    struct Block;

private:
    struct CoreState;
    struct LiveStream;
    // Construction, step by step.
    void check_output() const;
    void declare_blocks(const Platform& platform);
    void declare_signals(std::size_t block);
    void declare_memory_channels(std::size_t block);
    void select_signals();
    void follow_cores();
    void follow_liveness();
    // finish(), step by step.
    void close_pending();
    std::string vcd_header() const;
    void write_vcd(Tick end);
    void write_values(VcdOut& out, Tick end);
    void write_filters() const;
    void write_gtkw(Tick end) const;
    std::string gtkw_group(const Block& b) const;
    void live_instruction(const InstrEvent& e);
    bool live_interval(LiveStream& ls, const trace::VmemLive& l, bool final);
    void finish_liveness();
    void add(std::uint32_t ch, Tick t, std::uint8_t kind, std::int64_t v);
    void interval(std::uint32_t ch, Tick a, Tick b, std::int64_t v);   // counter += v on [a, b)
    void level(std::uint32_t ch, Tick t, std::int64_t v);               // monotone per channel
    void flush_level(std::uint32_t ch);
    void advance_iq(CoreState& cs, Tick until, bool all);
    void unit_op(Block& b, Tick start, Tick end, std::uint8_t op);
    void spill();
    Block* block_of(const char* name);

    VcdOptions opts_;
    std::vector<Signal> signals_;
    std::vector<Channel> channels_;
    std::vector<Block> blocks_;
    std::unordered_map<const char*, Block*> by_ptr_;  // module name() pointer -> block (null: unselected)
    std::unordered_map<std::string, Block*> by_name_;
    std::unordered_map<std::uint32_t, std::unique_ptr<CoreState>> cores_;  // chip << 16 | core
    // VMEM liveness of the streams behind selected bytes_allocated signals (chip << 16 | core),
    // and the modules that report what it needs (their cores, their chips' DMA engines).
    std::unordered_map<std::uint32_t, std::unique_ptr<LiveStream>> live_;
    std::vector<const XpuModule*> live_sources_;
    std::vector<Record> buf_;
    std::size_t buf_cap_ = 0;
    std::vector<std::string> runs_;  // spilled sorted runs (temporary files)
    std::size_t spilled_ = 0;  // runs written
    std::uint64_t records_ = 0;
    bool finished_ = false;
};

}  // namespace xpu::platform

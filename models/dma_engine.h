// DmaEngine: takes DMA descriptors from a core (target socket `cmd`), queues up to
// `queue_depth` of them (a full queue blocks the core: back-pressure), and moves each one as
// a stream of `chunk_bytes` TLM transactions on `mem`: a read at the source, then a write at
// the destination when the read data is back, with at most `max_outstanding` chunks in flight
// and chunks issued no faster than `bandwidth_gbps`. When the last byte is written the
// descriptor's completion flag is raised on `flags` (flag += val, default 1).
// A DMA with a dtype reduces (dst += src): its writes carry ReduceWrite.
// A destination on another chip (remote DMA) is written through the same `mem` socket at its
// remote global address (address.h), over the inter-chip links; its completion flag is then
// raised on the destination chip by a posted flag write sent right behind the last data write
// on the same path, effective once the data has landed (one traversal, not a second one).
//
// The chunks are issued by the chip's DmaArbiter (dma_arbiter.h), which runs every engine of the
// chip in one thread, in the time order of their chunks, with temporal decoupling: its local
// time may lead the kernel by one quantum (the TLM global quantum, models/quantum.h). A
// descriptor whose chunks are TLM transactions (a side that does not answer the timing probe)
// is moved on the engine's own thread instead, which may wait inside a chunk.
#pragma once

#include <array>
#include <deque>
#include <list>
#include <vector>

#include <tlm_utils/peq_with_get.h>
#include <tlm_utils/simple_initiator_socket.h>

#include "models/lt_target_socket.h"
#include "models/busy_tracker.h"
#include "models/dma_arbiter.h"
#include "models/params.h"
#include "models/quantum.h"
#include "models/timed_memory.h"
#include "models/unit_command.h"
#include "models/xpu_module.h"

namespace xpu {

// What a platform description sets: the module type's keys (declare(), docs/platform.md).
struct DmaEngineParams {
    unsigned queue_depth = 16;
    unsigned chunk_bytes = 4096;
    unsigned max_outstanding = 64;
    double bandwidth_gbps = 1200;
    unsigned setup_latency = 16;

    void declare(ParamVisitor& v) {
        v.u32("queue_depth", queue_depth, 1, 4096, "descriptors", "descriptors waiting to start");
        v.u32("chunk_bytes", chunk_bytes, 1, 1u << 24, "bytes", "bytes per memory transaction");
        v.u32("max_outstanding", max_outstanding, 1, 1u << 20, "chunks", "chunks in flight");
        v.real("bandwidth_gbps", bandwidth_gbps, 0.001, 1e7, "GB/s", "chunk issue rate, GB/s");
        v.u32("setup_latency", setup_latency, 0, 100000, "cycles", "cycles from dequeue to the first chunk");
    }
};

// The parameters and what the builder derives.
struct DmaEngineConfig : DmaEngineParams {
    std::uint16_t chip = 0;
    Tick cycle = 1000;
    std::array<std::uint64_t, 2> space_base{};  // global address of Space::Vmem, Space::Hbm
    // Global address of each core's own VMEM, by core id: a DMA's vmem: operands are offsets into
    // the VMEM of the core that issued it (vmem@C: into that core's VMEM on chip C: chips are
    // identical). Empty: space_base[Vmem] for every core (one VMEM).
    std::vector<std::uint64_t> core_vmem_base;
    std::uint64_t flags_base = 0;    // global address of the chips' SyncFlags (remote completion flags)
    bool flags_mapped = false;       // ... when the address map has one
    // Move chunks to memories that answer the timing probe by calling them directly (the same
    // timing, without a TLM transaction per chunk: models/timed_memory.h). Off: every chunk is
    // a TLM transaction (tests compare the two).
    bool timed_path = true;
};

class DmaEngine : public XpuModule, private DmaArbiter::Engine {
public:
    LtTargetSocket<DmaEngine> cmd;
    tlm_utils::simple_initiator_socket<DmaEngine> mem;            // -> Interconnect
    tlm_utils::simple_initiator_socket_optional<DmaEngine> flags;  // -> SyncFlags

    DmaEngine(const sc_core::sc_module_name& n, const DmaEngineConfig& cfg);
    const char* kind() const override { return "DmaEngine"; }
    Role role() const override { return Role::Dma; }
    ModuleFacts facts() const override {
        ModuleFacts f;
        f.peak_gbps = cfg_.bandwidth_gbps;
        return f;
    }
    std::optional<Tick> busy_time() const override { return busy_.total(); }
    std::vector<Stat> stats() const override;
    std::uint64_t bytes_moved() const { return bytes_; }
    const DmaEngineConfig& config() const { return cfg_; }

private:
    struct Descriptor {
        Instruction in;
        std::uint16_t core = 0;
        std::uint64_t index = 0;
        Tick issue = 0, accept = 0, start = 0, done = 0;
    };
    // A descriptor being moved, chunk by chunk.
    struct Moving {
        Descriptor d;
        std::uint64_t src = 0, dst = 0, off = 0;  // global addresses, bytes moved so far
        const TimedPath* src_path = nullptr;       // the sides' timing paths (null: TLM)
        const TimedPath* dst_path = nullptr;
        bool remote = false, reduce = false;
        Tick t = 0;           // issue time of the next chunk
        Tick last = 0;        // when the last chunk so far is written
        Tick last_write = 0;  // when the last chunk so far issued its write
    };
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    // DmaArbiter::Engine: chunks of descriptors with both sides direct.
    bool next_chunk(Tick& t) override;
    bool issue_chunk(Tick now, Tick& t) override;
    void report_routed() override;
    // Takes the queue's front descriptor (its slot frees): the arbiter moves it, or this engine's
    // thread when a side needs TLM transactions.
    void begin();
    // A chunk of `len` was issued: its read done at read_done, its write at write_done; the next
    // one waits `stall` at least (back-pressure).
    void issued(std::uint64_t len, Tick read_done, Tick write_done, Tick stall);
    void finish();      // the moving descriptor's last chunk is issued
    void engine();      // the engine's own thread: descriptors with a TLM side
    void move_alone();  // ... one of them
    void completer();  // an SC_METHOD on done_peq_: raises the flags and records the DMAs now due
    void post_remote_flag(const Descriptor& d, Tick behind, Tick landed);
    // The global address of a DMA operand: its space's base (the issuing core's VMEM) + offset.
    std::uint64_t global_address(const MemRef& r, const Descriptor& d);
    Tick transfer(tlm::tlm_command cmd, std::uint64_t addr, std::uint64_t len, Tick at,
                  Tick* stall, const Descriptor& d);
    // The timing path to the memory serving [addr, addr + len), or null (then: transfer()).
    const TimedPath* probe(std::uint64_t addr, std::uint64_t len, TimedPath& into);
    Tick direct(const TimedPath& path, bool write, bool reduce, std::uint64_t addr, std::uint64_t len, Tick at,
                Tick now, Tick* stall, bool count);
    [[noreturn]] void fail(const std::string& what, const Descriptor& d);

    DmaEngineConfig cfg_;
    std::deque<Descriptor> queue_;
    std::vector<Tick> started_;      // start times of the last queue_depth descriptors (ring)
    std::uint64_t accepted_ = 0;     // descriptors accepted so far
    std::uint64_t dequeued_ = 0;     // descriptors the engine has started
    // Named: for an unnamed event SystemC generates a unique name (three string streams a
    // name: a few percent of a 256-chip start-up).
    sc_core::sc_event alone_{"alone"}, space_{"space"};
    // Completion times of the chunks in flight, oldest first: a ring of max_outstanding (the
    // engine's window; a deque's block bookkeeping per chunk was measurable on DMA-heavy runs).
    class Window {
    public:
        void resize(std::size_t n) { ring_.assign(n, 0); }
        bool full() const { return size_ == ring_.size(); }
        Tick oldest() const { return ring_[head_]; }  // (only when full())
        Tick pop() {  // the oldest (only when full(): the engine frees a slot before it issues)
            const Tick t = ring_[head_];
            if (++head_ == ring_.size()) head_ = 0;
            --size_;
            return t;
        }
        void push(Tick t) {
            std::size_t i = head_ + size_;
            if (i >= ring_.size()) i -= ring_.size();
            ring_[i] = t;
            ++size_;
        }

    private:
        std::vector<Tick> ring_;
        std::size_t head_ = 0, size_ = 0;
    };
    Window inflight_;
    Tick chunk_issue_ = 0;  // issue time of a whole chunk at bandwidth_gbps
    Tick engine_free_ = 0;
    QuantumKeeper qk_;  // of the engine's own thread
    DmaArbiter& arbiter_;
    Moving m_;
    enum class Mover { None, Arbiter, Own };  // who moves m_: nobody (no descriptor), the arbiter, the engine's own thread
    Mover mover_ = Mover::None;
    // What the moving descriptor's chunks routed through the hops, not yet reported.
    std::uint64_t routed_bytes_ = 0, routed_chunks_ = 0;
    std::list<Descriptor> finishing_;
    tlm_utils::peq_with_get<Descriptor> done_peq_;
    tlm::tlm_generic_payload mem_gp_, flag_gp_, probe_gp_;
    TimedPath& probe_path_;  // owned by probe_gp_
    TimedPath src_path_, dst_path_;
    MemAccept& mem_accept_;  // owned by mem_gp_
    TxnOrigin& origin_;      // owned by mem_gp_: the DMA a transfer serves
    LinkTail& link_tail_;    // owned by mem_gp_
    ReduceWrite reduce_;     // set on mem_gp_ only around a reducing write, then cleared
    FlagCommand flag_cmd_;
    BusyTracker busy_;
    std::uint64_t descriptors_ = 0, bytes_ = 0, chunks_ = 0, remote_flags_ = 0;
    Tick queue_wait_ = 0;
};

}  // namespace xpu

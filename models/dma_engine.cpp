#include "models/dma_engine.h"

#include <sstream>

#include "models/address.h"
#include "models/sim_time.h"
#include "traces/trace_text.h"

namespace xpu {

DmaEngine::DmaEngine(const sc_core::sc_module_name& n, const DmaEngineConfig& cfg)
    : XpuModule(n), cmd("cmd"), mem("mem"), flags("flags"), cfg_(cfg), arbiter_(DmaArbiter::of_chip(cfg.chip)), done_peq_("done_peq"), probe_path_(*new TimedPath), mem_accept_(*new MemAccept), origin_(*new TxnOrigin), link_tail_(*new LinkTail) {
    cmd.register_b_transport(this, &DmaEngine::b_transport);
    expose_target("cmd", cmd, false);
    started_.assign(cfg_.queue_depth ? cfg_.queue_depth : 1, 0);
    inflight_.resize(cfg_.max_outstanding ? cfg_.max_outstanding : 1);
    chunk_issue_ = transfer_ticks(cfg_.chunk_bytes, cfg_.bandwidth_gbps);
    expose_initiator("mem", mem, false);
    expose_initiator("flags", flags, false, false);
    mem_gp_.set_extension(&mem_accept_);
    origin_.initiator = name();
    origin_.chip = flag_cmd_.chip = cfg_.chip;
    mem_gp_.set_extension(&origin_);
    mem_gp_.set_extension(&link_tail_);  // remote writes land at their tail (LinkTail)
    probe_gp_.set_extension(&probe_path_);
    probe_gp_.set_command(tlm::TLM_IGNORE_COMMAND);
    flag_gp_.set_command(tlm::TLM_WRITE_COMMAND);
    flag_gp_.set_data_ptr(reinterpret_cast<unsigned char*>(&flag_cmd_));
    flag_gp_.set_data_length(sizeof(FlagCommand));
    flag_cmd_.requester = name();
    flag_cmd_.op = FlagCommand::Op::Add;
    arbiter_.add(this);
    SC_HAS_PROCESS(DmaEngine);
    SC_THREAD(engine);
    // A method, not a thread: it never waits, and every SystemC thread costs two memory mappings
    // (its stack and the stack's guard page); a 4096-chip platform must fit in vm.max_map_count.
    SC_METHOD(completer);
    sensitive << done_peq_.get_event();
    dont_initialize();
}

void DmaEngine::fail(const std::string& what, const Descriptor& d) {
    std::ostringstream os;
    os << name() << ": core " << d.core << " instruction " << d.index << " ("
       << trace::format_instruction(d.in) << "): " << what;
    SC_REPORT_ERROR("xpusim/run", os.str().c_str());
    throw std::logic_error("unreachable");
}

void DmaEngine::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    auto* c = gp.get_extension<UnitCommand>();
    const Instruction& in = *c->in;
    const Tick offered = now_ticks() + delay.value();  // annotated time (unit_command.h)
    if (in.op != Opcode::Dma || !in.has(kMemSrc) || !in.has(kMemDst) || !in.has(kBytes) || in.bytes == 0) {
        c->error = "a DMA needs src=, dst= and bytes= > 0";
        gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
        return;
    }
    auto remote = [&](const MemRef& r) { return r.chip != kLocalChip && r.chip != cfg_.chip; };
    if (remote(in.mem_src)) {
        c->error = "a DMA reads from its own chip only (write to the other chip from there)";
        gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
        return;
    }
    if (remote(in.mem_dst) && in.has(kFlag) && !cfg_.flags_mapped) {
        c->error = "a remote DMA's completion flag needs the chips' SyncFlags in the address map (space: flags)";
        gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
        return;
    }
    // Back-pressure: descriptor n enters once descriptor n - queue_depth has left the queue
    // (started). The engine thread may not have dequeued it yet: then the core waits for it.
    if (queue_.size() >= cfg_.queue_depth) {
        wait(until(offered));
        while (queue_.size() >= cfg_.queue_depth) wait(space_);
    }
    Tick accept = offered;
    if (accepted_ >= cfg_.queue_depth) accept = max_tick(accept, started_[accepted_ % cfg_.queue_depth]);
    queue_wait_ += accept - offered;
    ++accepted_;
    Descriptor d;
    d.in = in;
    d.index = c->index;
    d.core = c->core;
    d.issue = offered;
    d.accept = accept;
    queue_.push_back(d);
    arbiter_.poke();
    c->accept = c->start = c->operands_read = accept;
    delay = until(accept);  // the descriptor is taken at accept (after a full queue: from now)
    c->complete = accept + cfg_.cycle;
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

std::uint64_t DmaEngine::global_address(const MemRef& r, const Descriptor& d) {
    if (r.space != Space::Vmem || cfg_.core_vmem_base.empty()) return cfg_.space_base[static_cast<unsigned>(r.space)] + r.addr;
    if (d.core >= cfg_.core_vmem_base.size())
        fail("core " + std::to_string(d.core) + " has no VMEM base (the engine knows cores 0.." +
                 std::to_string(cfg_.core_vmem_base.size() - 1) + ")",
             d);
    return cfg_.core_vmem_base[d.core] + r.addr;
}

Tick DmaEngine::transfer(tlm::tlm_command command, std::uint64_t addr, std::uint64_t len, Tick at,
                         Tick* stall, const Descriptor& d) {
    mem_gp_.set_command(command);
    mem_gp_.set_address(addr);
    mem_gp_.set_data_ptr(nullptr);  // timing only: no data moves
    mem_gp_.set_data_length(static_cast<unsigned>(len));
    mem_gp_.set_streaming_width(static_cast<unsigned>(len));
    mem_gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    mem_accept_.stall = 0;
    origin_.core = d.core;
    origin_.index = d.index;
    Tick base = now_ticks();
    sc_core::sc_time delay = until(at);
    mem->b_transport(mem_gp_, delay);
    if (mem_gp_.is_response_error()) {
        std::ostringstream os;
        os << (command == tlm::TLM_READ_COMMAND ? "read" : "write") << " of " << len
           << " bytes at global address 0x" << std::hex << addr
           << " failed: no memory on this chip's interconnect holds that range";
        fail(os.str(), d);
    }
    if (stall) *stall = mem_accept_.stall;
    return base + delay.value();
}

const TimedPath* DmaEngine::probe(std::uint64_t addr, std::uint64_t len, TimedPath& into) {
    if (!cfg_.timed_path || len > UINT32_MAX) return nullptr;
    probe_path_.reset();
    probe_gp_.set_address(addr);
    probe_gp_.set_data_length(static_cast<unsigned>(len));
    probe_gp_.set_streaming_width(static_cast<unsigned>(len));
    tlm::tlm_dmi dmi;
    mem->get_direct_mem_ptr(probe_gp_, dmi);
    if (!probe_path_.target) return nullptr;
    into = probe_path_;
    return &into;
}

// What transfer() computes, without the transaction: the arrival the hops would annotate (the
// issue time, not before now, plus their latencies), the memory's own timing; the hops' counts
// when `count` (else the caller adds them up: engine()).
Tick DmaEngine::direct(const TimedPath& path, bool write, bool reduce, std::uint64_t addr, std::uint64_t len, Tick at,
                       Tick now, Tick* stall, bool count) {
    if (count)
        for (unsigned i = 0; i < path.n_hops; ++i) path.hops[i]->routed(len, 1);
    MemAccess a;
    a.write = write;
    a.reduce = reduce;
    a.addr = addr;
    a.len = len;
    a.now = now;
    a.arrival = max_tick(at, now) + path.latency;
    a.origin = &origin_;  // (its core and index are the descriptor's: set by the caller)
    const MemTiming r = path.target->access(a);
    *stall = r.stall;
    return r.done;
}

bool DmaEngine::next_chunk(Tick& t) {
    // A descriptor starts as soon as the engine is free (as the engine's thread would: the core
    // may be waiting for its queue slot).
    if (mover_ == Mover::None && !queue_.empty()) begin();
    if (mover_ != Mover::Arbiter) return false;
    // At most max_outstanding chunks in flight: the next waits for the oldest to be written.
    t = inflight_.full() ? max_tick(m_.t, inflight_.oldest()) : m_.t;
    return true;
}

void DmaEngine::begin() {
    Descriptor d = queue_.front();
    queue_.pop_front();
    space_.notify();
    const Tick free = max_tick(d.accept, engine_free_);
    d.start = free + cfg_.setup_latency * cfg_.cycle;
    started_[dequeued_++ % cfg_.queue_depth] = free;  // its slot frees
    Moving& m = m_;
    m = Moving{};
    m.d = d;
    m.t = m.last = m.last_write = d.start;
    m.src = global_address(d.in.mem_src, d);
    m.dst = global_address(d.in.mem_dst, d);
    m.remote = d.in.mem_dst.chip != kLocalChip && d.in.mem_dst.chip != cfg_.chip;
    if (m.remote) m.dst = remote_address(d.in.mem_dst.chip, m.dst);
    // A local memory on either side: its timing called directly, chunk by chunk.
    m.src_path = probe(m.src, d.in.bytes, src_path_);
    m.dst_path = m.remote ? nullptr : probe(m.dst, d.in.bytes, dst_path_);
    m.reduce = d.in.has(kDtype);
    if (m.src_path && m.dst_path) {
        mover_ = Mover::Arbiter;  // the arbiter issues its chunks
    } else {
        mover_ = Mover::Own;  // a TLM side: this engine's thread moves it
        DmaArbiter::own_mover(+1);
        alone_.notify();
    }
}

// One chunk of a descriptor with both sides direct (the usual HBM <-> VMEM DMA): what it routes
// through the hops is added up and reported in one call per hop before the arbiter's thread can
// stop (a sync, the descriptor's end), so the counters read the same whenever the run ends.
bool DmaEngine::issue_chunk(Tick now, Tick& t) {
    Moving& m = m_;
    const std::uint64_t len = std::min<std::uint64_t>(cfg_.chunk_bytes, m.d.in.bytes - m.off);
    if (inflight_.full()) m.t = max_tick(m.t, inflight_.pop());
    Tick read_stall = 0, write_stall = 0;
    // Per chunk: the completer (which may have run since the last one) reuses origin_.
    origin_.core = m.d.core;
    origin_.index = m.d.index;
    const Tick read_done = direct(*m.src_path, false, false, m.src + m.off, len, m.t, now, &read_stall, false);
    const Tick write_done = direct(*m.dst_path, true, m.reduce, m.dst + m.off, len, read_done, now, &write_stall, false);
    routed_bytes_ += len;
    ++routed_chunks_;
    issued(len, read_done, write_done, std::max(read_stall, write_stall));
    if (m.off >= m.d.in.bytes) {
        report_routed();
        mover_ = Mover::None;
        finish();
    }
    return next_chunk(t);
}

void DmaEngine::issued(std::uint64_t len, Tick read_done, Tick write_done, Tick stall) {
    Moving& m = m_;
    m.last_write = read_done;  // the chunk's write issues once its read is done
    inflight_.push(write_done);
    m.last = max_tick(m.last, write_done);
    // The next chunk: at the issue rate, later under back-pressure from either side (a full HBM
    // channel queue, a full link buffer).
    const Tick issue = len == cfg_.chunk_bytes ? chunk_issue_ : transfer_ticks(len, cfg_.bandwidth_gbps);
    m.t = max_tick(m.t + issue, m.t + stall);
    ++chunks_;
    m.off += len;
}

void DmaEngine::report_routed() {
    if (!routed_chunks_) return;
    for (const TimedPath* p : {m_.src_path, m_.dst_path})
        if (p)
            for (unsigned i = 0; i < p->n_hops; ++i) p->hops[i]->routed(routed_bytes_, routed_chunks_);
    routed_bytes_ = routed_chunks_ = 0;
}

void DmaEngine::finish() {
    Descriptor& d = m_.d;
    engine_free_ = m_.t;
    if (m_.remote && d.in.has(kFlag)) post_remote_flag(d, m_.last_write, m_.last);
    d.done = m_.last;
    busy_.add(d.start, m_.last);
    bytes_ += d.in.bytes;
    ++descriptors_;
    finishing_.push_back(d);
    done_peq_.notify(finishing_.back(), until(m_.last));
}

// The engine's own thread: the descriptors with a side that needs a TLM transaction per chunk
// (which may wait), one after the other, as long as the queue holds such descriptors.
void DmaEngine::engine() {
    qk_.reset();
    for (;;) {
        while (mover_ != Mover::Own) {
            wait(alone_);
            qk_.reset();  // idle until now: a new quantum from here
        }
        move_alone();
        mover_ = Mover::None;
        DmaArbiter::own_mover(-1);
        if (!queue_.empty()) begin();  // the next one at once, as the arbiter would
        if (mover_ != Mover::Own) arbiter_.poke();  // the arbiter's turn (its descriptor, or none)
    }
}

void DmaEngine::move_alone() {
    Moving& m = m_;
    for (; m.off < m.d.in.bytes;) {
        const std::uint64_t len = std::min<std::uint64_t>(cfg_.chunk_bytes, m.d.in.bytes - m.off);
        if (inflight_.full()) m.t = max_tick(m.t, inflight_.pop());
        // Temporal decoupling, while no arbiter has chunks to issue (else in time order with
        // theirs: dma_arbiter.h). This thread waits here, inside a TLM transfer and for work
        // (then reset()). The kernel's time, for a direct side, as the chunk begins.
        if (qk_.past_quantum(m.t) || (DmaArbiter::arbiters_busy() && m.t > now_ticks())) qk_.sync_to(m.t);
        const Tick now = m.src_path || m.dst_path ? now_ticks() : 0;
        Tick read_stall = 0, write_stall = 0;
        origin_.core = m.d.core;
        origin_.index = m.d.index;
        const Tick read_done = m.src_path ? direct(*m.src_path, false, false, m.src + m.off, len, m.t, now, &read_stall, true)
                                          : transfer(tlm::TLM_READ_COMMAND, m.src + m.off, len, m.t, &read_stall, m.d);
        Tick write_done;
        if (m.dst_path) {
            write_done = direct(*m.dst_path, true, m.reduce, m.dst + m.off, len, read_done, now, &write_stall, true);
        } else {
            if (m.reduce) mem_gp_.set_extension(&reduce_);  // dst += src
            write_done = transfer(tlm::TLM_WRITE_COMMAND, m.dst + m.off, len, read_done, &write_stall, m.d);
            if (m.reduce) mem_gp_.clear_extension(&reduce_);
        }
        issued(len, read_done, write_done, std::max(read_stall, write_stall));
    }
    finish();
}

// A remote DMA's completion flag is a posted write that follows the last data write on the
// same route (port, links, far port and interconnect) into the destination chip's SyncFlags: it
// enters right behind that write (at `behind`), takes its place on each link after the data, and
// takes effect at the later of its own arrival and `landed` (every data write done at the
// destination): writes are ordered, so the flag is never seen before the data. One traversal:
// the step costs one link latency, not two.
void DmaEngine::post_remote_flag(const Descriptor& d, Tick behind, Tick landed) {
    flag_cmd_.flag = d.in.flag;
    flag_cmd_.value = d.in.has(kValue) ? d.in.value : 1;
    flag_cmd_.in = &d.in;
    flag_cmd_.core = d.core;
    flag_cmd_.index = d.index;
    flag_cmd_.not_before = landed;
    mem_gp_.set_command(tlm::TLM_WRITE_COMMAND);
    mem_gp_.set_address(remote_address(d.in.mem_dst.chip, cfg_.flags_base));
    origin_.core = d.core;
    origin_.index = d.index;
    mem_gp_.set_data_ptr(reinterpret_cast<unsigned char*>(&flag_cmd_));
    mem_gp_.set_data_length(sizeof(FlagCommand));
    mem_gp_.set_streaming_width(sizeof(FlagCommand));
    mem_gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    mem_accept_.stall = 0;
    sc_core::sc_time delay = until(behind);
    mem->b_transport(mem_gp_, delay);
    flag_cmd_.not_before = 0;
    if (mem_gp_.is_response_error()) fail("the completion flag could not reach the destination chip", d);
    ++remote_flags_;
}

// Runs when done_peq_'s event fires: every descriptor due now (the queue notifies itself again
// for those due later).
void DmaEngine::completer() {
    while (Descriptor* d = done_peq_.get_next_transaction()) {
        const bool remote = d->in.mem_dst.chip != kLocalChip && d->in.mem_dst.chip != cfg_.chip;
        if (d->in.has(kFlag) && !remote) {  // a remote one was posted behind its data (engine)
            if (flags.get_base_port().size() == 0) fail("no SyncFlags bound to raise the completion flag", *d);
            flag_cmd_.flag = d->in.flag;
            flag_cmd_.value = d->in.has(kValue) ? d->in.value : 1;
            flag_cmd_.in = &d->in;
            flag_cmd_.core = d->core;
            flag_cmd_.index = d->index;
            flag_gp_.set_address(d->in.flag);
            flag_gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
            sc_core::sc_time zero = sc_core::SC_ZERO_TIME;
            flags->b_transport(flag_gp_, zero);
            if (flag_gp_.is_response_error()) fail("completion flag id out of range", *d);
        }
        if (recorder_) {
            DmaEvent ev;
            ev.chip = cfg_.chip;
            ev.core = d->core;
            ev.index = d->index;
            ev.engine = name();
            ev.issue = d->issue;
            ev.start = d->start;
            ev.complete = d->done;
            ev.bytes = d->in.bytes;
            recorder_->on_dma(ev);
        }
        for (auto it = finishing_.begin(); it != finishing_.end(); ++it)
            if (&*it == d) {
                finishing_.erase(it);
                break;
            }
    }
}

std::vector<Stat> DmaEngine::stats() const {
    auto d = [](auto v) { return static_cast<double>(v); };
    return {{"descriptors", d(descriptors_), true, "DMAs completed", "DMAs"},
            {"bytes", d(bytes_), true, "bytes moved", "bytes"},
            {"chunks", d(chunks_), true, "chunk transactions (each a read and a write)", "chunks"},
            {"queue_full_wait_ns", ticks_to_ns(queue_wait_), false, "time cores waited for a free descriptor slot", "ns"},
            {"remote_flags", d(remote_flags_), true, "completion flags raised on other chips", "flags"}};
}

}  // namespace xpu

// Each model alone (DRAMSys-style): built from its plain config struct, without YAML or the
// platform builder, bound to stub initiators and targets (tests/model_harness.h), and checked
// against the closed form of its timing model. Every expected time is computed here from the
// config, never read back from the simulator; each test says which closed form and why it holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "models/address.h"
#include "models/bandwidth_calendar.h"
#include "models/busy_tracker.h"
#include "models/ceil_div.h"
#include "models/dma_engine.h"
#include "models/hbm_controller.h"
#include "models/ici.h"
#include "models/interconnect.h"
#include "models/matrix_unit.h"
#include "models/quantum.h"
#include "models/scalar_core.h"
#include "models/sim_time.h"
#include "models/vector_unit.h"
#include "models/vmem.h"
#include "tests/model_harness.h"

using namespace xpu;
using namespace xpu::test;

namespace {

void run() { sc_core::sc_start(); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// ScalarCore (models/scalar_core.h) with a stub instruction memory and a stub matrix unit that
// takes every command at its offer time. Independent instructions issue issue_width a cycle:
// instruction i is offered at floor(i / 4) cycles, and the unit sees it at kernel time + delay =
// that slot. Temporal decoupling (models/quantum.h), global quantum Q = 2 cycles: the core
// dispatches an instruction, then syncs if its issue time is more than Q past its last sync; so
// it syncs after instructions 12, 24, 36 (slots 3, 6, 9 cycles), and instruction i >= 1 is
// dispatched at kernel time 3 x floor((i - 1) / 12) cycles, at most Q + one cycle ahead.
TEST(ScalarCoreAlone, OffersEachInstructionAtItsSlotAndSyncsOncePerQuantum) {
    ScalarCoreConfig cfg;  // 1 GHz, fetch and issue width 4
    const Tick c = cfg.cycle, q = 2 * c;
    tlm_utils::tlm_quantumkeeper::set_global_quantum(to_sc(q));
    std::vector<Instruction> program(40);
    for (auto& in : program) in = matrix_op(Opcode::MPush, 0, 128, 128);
    ScalarCore core("core", cfg);
    StubImem imem("imem", program);
    StubUnit mxu("mxu");
    core.imem.bind(imem.socket);
    core.mxu.bind(mxu.socket);
    run();
    ASSERT_EQ(mxu.calls().size(), program.size());
    for (std::size_t i = 0; i < program.size(); ++i) {
        const auto& call = mxu.calls()[i];
        EXPECT_EQ(call.index, i);
        EXPECT_EQ(call.offered(), (i / 4) * c) << i;
        EXPECT_EQ(call.now, i == 0 ? 0 : 3 * c * ((i - 1) / 12)) << i;
        EXPECT_LE(call.delay, q + c) << i;
    }
    EXPECT_TRUE(core.finished());
    EXPECT_EQ(core.retired(), program.size());
}

// ---------------------------------------------------------------------------------------------
// MatrixUnit (models/matrix_unit.h): mpush loads a tile in `rows` cycles; a matmul of M rows
// occupies the array M cycles and its last result leaves M + rows + cols - 2 cycles after its
// first row entered; mpop moves M rows at pop_rows_per_cycle, then pop_latency.

// push, matmul, pop on an idle unit. The matmul starts when its weights are loaded (rows cycles
// after the push started at 0: there is nothing else in the way), so it completes at
// rows + (M + rows + cols - 2) cycles. The pop is offered when the matmul's result is ready (as
// the core's scoreboard would), on an idle result path: ceil(M / pop_rows_per_cycle) cycles of
// transfer, then pop_latency cycles.
TEST(MatrixUnitAlone, PushMatmulPopFollowTheClosedForm) {
    MatrixUnitConfig cfg;  // 128 x 128, 1 GHz, double buffered, 8 rows per pop cycle, pop latency 4
    const Tick c = cfg.cycle;
    const Tick R = cfg.rows, C = cfg.cols, M = 256;
    MatrixUnit mxu("mxu", cfg);
    StubInitiator core("core");
    core.socket.bind(mxu.cmd);
    Capture rec;
    mxu.set_recorder(&rec);

    auto push = unit_command(matrix_op(Opcode::MPush, 0, C, R), 0);
    auto mm = unit_command(matrix_op(Opcode::MatMul, M, C, R), 1);
    auto pop = unit_command(matrix_op(Opcode::MPop, M, C, 0), 2);
    const Tick matmul_done = (R + (M + R + C - 2)) * c;  // 638 ns
    core.send(*push, 0);
    core.send(*mm, 0);
    // Offered at matmul_done: sent 38 ns earlier with that much annotated delay.
    core.send(*pop, matmul_done - 38'000, 38'000);
    run();

    EXPECT_EQ(push->cmd->start, 0u);
    EXPECT_EQ(push->cmd->complete, R * c);
    EXPECT_EQ(mm->cmd->accept, 0u);
    EXPECT_EQ(mm->cmd->start, R * c);
    EXPECT_EQ(mm->cmd->operands_read, (R + M) * c);  // the LHS rows streamed in M cycles
    EXPECT_EQ(mm->cmd->complete, matmul_done);
    EXPECT_EQ(pop->cmd->accept, matmul_done);
    EXPECT_EQ(pop->cmd->start, matmul_done);
    EXPECT_EQ(pop->cmd->complete, matmul_done + ((M + cfg.pop_rows_per_cycle - 1) / cfg.pop_rows_per_cycle + cfg.pop_latency) * c);
    EXPECT_EQ(mxu.flops(), 2ull * M * C * R);
    ASSERT_EQ(rec.unit_ops.size(), 3u);
    EXPECT_EQ(rec.unit_ops[1].end, (R + M) * c);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(core.sent(i).status, tlm::TLM_OK_RESPONSE) << i;
}

// Without a shadow buffer a push waits for the array to drain: two folds of M rows cost
// rows + (M + rows + cols - 2) cycles each, back to back (the SCALE-Sim fold model).
TEST(MatrixUnitAlone, WithoutDoubleBufferEachFoldCostsLoadPlusDrain) {
    MatrixUnitConfig cfg;
    cfg.double_buffer = false;
    const Tick c = cfg.cycle, R = cfg.rows, C = cfg.cols, M = 64;
    MatrixUnit mxu("mxu", cfg);
    StubInitiator core("core");
    core.socket.bind(mxu.cmd);
    std::vector<std::unique_ptr<Payload>> ops;
    for (int f = 0; f < 2; ++f) {
        ops.push_back(unit_command(matrix_op(Opcode::MPush, 0, C, R)));
        ops.push_back(unit_command(matrix_op(Opcode::MatMul, M, C, R)));
    }
    for (auto& p : ops) core.send(*p, 0);
    run();
    const Tick fold = (R + (M + R + C - 2)) * c;
    EXPECT_EQ(ops[1]->cmd->complete, fold);
    EXPECT_EQ(ops[2]->cmd->start, fold);  // the second push waits for the drain
    EXPECT_EQ(ops[3]->cmd->complete, 2 * fold);
}

// The TLM annotation: a command sent at kernel time 0 with delay d is offered at d, exactly like
// the same command sent at kernel time d with no delay (two identical units, one elaboration).
// On an idle unit a push then starts at d and completes rows cycles later; the returned delay
// moves the annotation to the acceptance (d from the call's kernel time).
TEST(MatrixUnitAlone, AnnotatedDelayIsTheSameAsArrivingLater) {
    MatrixUnitConfig cfg;
    const Tick c = cfg.cycle, d = 5'000;
    MatrixUnit a("a", cfg), b("b", cfg);
    StubInitiator ia("ia"), ib("ib");
    ia.socket.bind(a.cmd);
    ib.socket.bind(b.cmd);
    auto pa = unit_command(matrix_op(Opcode::MPush, 0, cfg.cols, cfg.rows));
    auto pb = unit_command(matrix_op(Opcode::MPush, 0, cfg.cols, cfg.rows));
    ia.send(*pa, 0, d);
    ib.send(*pb, d, 0);
    run();
    EXPECT_EQ(pa->cmd->accept, d);
    EXPECT_EQ(pa->cmd->start, d);
    EXPECT_EQ(pa->cmd->complete, d + cfg.rows * c);
    EXPECT_EQ(ia.sent(0).delay_out, d);  // accepted at 0 + d
    EXPECT_EQ(ia.sent(0).answered(), pa->cmd->accept);
    EXPECT_EQ(pb->cmd->accept, pa->cmd->accept);
    EXPECT_EQ(pb->cmd->start, pa->cmd->start);
    EXPECT_EQ(pb->cmd->complete, pa->cmd->complete);
    EXPECT_EQ(ib.sent(0).answered(), ia.sent(0).answered());
}

// ---------------------------------------------------------------------------------------------
// VectorUnit (models/vector_unit.h): an op occupies its pipeline vregs x cycles-per-vreg, and
// its result is there `latency` cycles later. Offered with an annotated delay d on an idle unit,
// a valu of V vregs completes at d + (V + alu_latency) cycles, and the transcendental pipeline
// runs beside the ALU one (its own in-order path): its op offered at the same time starts at d.
TEST(VectorUnitAlone, AnnotatedDelayAndPipelineOccupancy) {
    VectorUnitConfig cfg;  // 128 x 8 = 1024 elements per vreg
    const Tick c = cfg.cycle, d = 7'000;
    const std::uint32_t per_vreg = cfg.lanes * cfg.sublanes;
    VectorUnit vpu("vpu", cfg);
    StubInitiator core("core");
    core.socket.bind(vpu.cmd);
    auto a1 = unit_command(vector_op(Opcode::VAlu, 4 * per_vreg));
    auto a2 = unit_command(vector_op(Opcode::VAlu, per_vreg));
    auto t1 = unit_command(vector_op(Opcode::VTrans, 2 * per_vreg));
    core.send(*a1, 0, d);
    core.send(*a2, 0, d);
    core.send(*t1, 0, d);
    run();
    EXPECT_EQ(a1->cmd->accept, d);
    EXPECT_EQ(a1->cmd->complete, d + (4 + cfg.alu_latency) * c);
    EXPECT_EQ(a2->cmd->start, d + 4 * c);  // behind a1 on the ALU pipeline
    EXPECT_EQ(a2->cmd->complete, d + (4 + 1 + cfg.alu_latency) * c);
    EXPECT_EQ(t1->cmd->start, d);          // its own pipeline
    EXPECT_EQ(t1->cmd->complete, d + (2 * cfg.trans_cycles_per_vreg + cfg.trans_latency) * c);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(core.sent(i).answered(), d) << i;
}

// A vld goes to VMEM on the unit's `mem` socket when it starts (offered with delay d on an idle
// unit: at d), with the instruction's TxnOrigin; it completes when both its load/store pipeline
// occupancy (ceil(bytes / ldst_bytes_per_cycle) cycles) and the memory's answer are done:
// complete = d + max(occupancy, memory latency). Here 64 KiB at 4 KiB a cycle = 16 ns, against a
// stub memory answering in 30 ns: 30 ns wins.
TEST(VectorUnitAlone, LoadGoesToMemoryAtItsStartAndWaitsForTheAnswer) {
    VectorUnitConfig cfg;
    cfg.vmem_base = 1ull << 32;
    const Tick c = cfg.cycle, d = 3'000, mem_latency = 30'000;
    VectorUnit vpu("vpu", cfg);
    StubInitiator core("core");
    StubTarget vmem_stub("vmem", mem_latency);
    core.socket.bind(vpu.cmd);
    vpu.mem.bind(vmem_stub.socket);
    Instruction in;
    in.op = Opcode::VLoad;
    in.mem_src = {Space::Vmem, kLocalChip, 0x400};
    in.bytes = 65536;
    in.set(kMemSrc | kBytes);
    auto ld = unit_command(in, 9);
    core.send(*ld, 0, d);
    run();
    ASSERT_EQ(vmem_stub.received().size(), 1u);
    const Received& r = vmem_stub.received(0);
    EXPECT_EQ(r.arrival(), d);
    EXPECT_EQ(r.command, tlm::TLM_READ_COMMAND);
    EXPECT_EQ(r.addr, cfg.vmem_base + 0x400);
    EXPECT_EQ(r.bytes, 65536u);
    EXPECT_EQ(r.initiator, vpu.name());
    const Tick occupancy = (65536 / cfg.ldst_bytes_per_cycle) * c;
    ASSERT_LT(occupancy, mem_latency);
    EXPECT_EQ(ld->cmd->start, d);
    EXPECT_EQ(ld->cmd->operands_read, d + occupancy);
    EXPECT_EQ(ld->cmd->complete, d + mem_latency);
}

// ---------------------------------------------------------------------------------------------
// DmaEngine (models/dma_engine.h): a descriptor starts setup_latency cycles after it is taken;
// chunk k of chunk_bytes is read at start + k x chunk_bytes / bandwidth (the issue rate, with
// max_outstanding not reached and a memory that never pushes back), and written when its read
// data is back (at once with a zero-latency memory); the completion flag (flag += val) is raised
// when the last write is done.

namespace {

struct DmaBench {
    DmaEngineConfig cfg;
    std::unique_ptr<DmaEngine> dma;
    StubInitiator core{"core"};
    StubTarget mem{"mem"}, flags{"flags"};
    Capture rec;
    static constexpr std::uint64_t kHbm = 1ull << 40;  // where Space::Hbm starts in global addresses

    explicit DmaBench(unsigned queue_depth = 16, unsigned max_outstanding = 64, unsigned setup_cycles = 16,
                      Tick mem_latency = 0)
        : mem("mem", mem_latency) {
        cfg.queue_depth = queue_depth;
        cfg.max_outstanding = max_outstanding;
        cfg.chunk_bytes = 4096;
        cfg.bandwidth_gbps = 1024;        // 4096 B in exactly 4 ns
        cfg.setup_latency = setup_cycles;  // cycles of 1 ns
        cfg.space_base = {0, kHbm};
        dma = std::make_unique<DmaEngine>("dma", cfg);
        core.socket.bind(dma->cmd);
        dma->mem.bind(mem.socket);
        dma->flags.bind(flags.socket);
        dma->set_recorder(&rec);
    }
    Tick chunk_time() const { return transfer_ticks(cfg.chunk_bytes, cfg.bandwidth_gbps); }
};

MemRef hbm(std::uint64_t a) { return {Space::Hbm, kLocalChip, a}; }
MemRef vmem(std::uint64_t a) { return {Space::Vmem, kLocalChip, a}; }

// The chunks of a 4-chunk descriptor at the stub memory: read k at start + k x chunk time from
// the HBM side, its write at the same time (zero-latency memory) on the VMEM side; every one of
// them carries the engine's TxnOrigin.
void expect_chunks(const DmaBench& b, Tick start, std::uint64_t src, std::uint64_t dst) {
    ASSERT_EQ(b.mem.received().size(), 8u);
    for (unsigned k = 0; k < 4; ++k) {
        const Received& rd = b.mem.received(2 * k);
        const Received& wr = b.mem.received(2 * k + 1);
        EXPECT_EQ(rd.command, tlm::TLM_READ_COMMAND) << k;
        EXPECT_EQ(rd.addr, DmaBench::kHbm + src + k * 4096ull) << k;
        EXPECT_EQ(rd.bytes, 4096u) << k;
        EXPECT_EQ(rd.arrival(), start + k * b.chunk_time()) << k;
        EXPECT_EQ(wr.command, tlm::TLM_WRITE_COMMAND) << k;
        EXPECT_EQ(wr.addr, dst + k * 4096ull) << k;
        EXPECT_EQ(wr.arrival(), rd.arrival()) << k;
        EXPECT_EQ(rd.initiator, b.dma->name()) << k;
        EXPECT_EQ(wr.initiator, b.dma->name()) << k;
    }
}

}  // namespace

// No global quantum set: no temporal decoupling, so the engine waits for each chunk's time and
// the stub memory sees every chunk at its own kernel time with a zero annotation. 16 KiB = 4
// chunks of 4 ns after 16 ns of setup: chunks at 16, 20, 24, 28 ns, the flag raised at 28 ns.
TEST(DmaEngineAlone, ChunksAtItsBandwidthAfterSetupFlagAtTheLastWrite) {
    DmaBench b;
    ASSERT_EQ(QuantumKeeper::global_quantum_ticks(), 0u);
    const Tick c = b.cfg.cycle;
    auto p = unit_command(dma_op(hbm(0x2000), vmem(0x1000), 16384, 3, 2), 5);
    b.core.send(*p, 0);
    run();
    const Tick start = b.cfg.setup_latency * c;
    const Tick last = start + 3 * b.chunk_time();
    EXPECT_EQ(p->cmd->accept, 0u);
    EXPECT_EQ(p->cmd->complete, c);  // the core is done with it after one cycle
    expect_chunks(b, start, 0x2000, 0x1000);
    for (const auto& r : b.mem.received()) EXPECT_EQ(r.delay, 0u);
    ASSERT_EQ(b.flags.received().size(), 1u);
    const Received& f = b.flags.received(0);
    EXPECT_TRUE(f.is_flag);
    EXPECT_EQ(f.arrival(), last);
    EXPECT_EQ(f.now, last);  // raised at its time, through the payload event queue
    EXPECT_EQ(f.flag.op, FlagCommand::Op::Add);
    EXPECT_EQ(f.flag.flag, 3u);
    EXPECT_EQ(f.flag.value, 2);
    EXPECT_EQ(f.flag.index, 5u);
    ASSERT_EQ(b.rec.dmas.size(), 1u);
    EXPECT_EQ(b.rec.dmas[0].start, start);
    EXPECT_EQ(b.rec.dmas[0].complete, last);
    EXPECT_EQ(b.dma->bytes_moved(), 16384u);
}

// With a global quantum of 10 ns the engine runs ahead of the kernel by at most one quantum,
// counted from its last synchronisation (models/quantum.h): the first chunk (16 ns) is more than
// 10 ns ahead of 0, so it syncs to 16 ns; 20 and 24 ns are within 16 + 10 and go out annotated
// (delay 4 and 8 ns); 28 ns is past 26, so it syncs again. The arrival times do not change.
TEST(DmaEngineAlone, RunsAheadOfTheKernelByAtMostOneQuantum) {
    tlm_utils::tlm_quantumkeeper::set_global_quantum(sc_core::sc_time(10, sc_core::SC_NS));
    DmaBench b;
    const Tick q = 10'000, start = b.cfg.setup_latency * b.cfg.cycle;
    auto p = unit_command(dma_op(hbm(0), vmem(0), 16384, 1, 1));
    b.core.send(*p, 0);
    run();
    expect_chunks(b, start, 0, 0);
    const Tick expected_now[4] = {start, start, start, start + 3 * b.chunk_time()};
    for (unsigned k = 0; k < 4; ++k) {
        EXPECT_EQ(b.mem.received(2 * k).now, expected_now[k]) << k;
        EXPECT_LE(b.mem.received(2 * k).delay, q) << k;
    }
}

// A local time exactly one quantum ahead is still allowed (QuantumKeeper syncs at *more* than
// one quantum, models/quantum.h): with a quantum of 12 ns the engine syncs to the first chunk
// (16 ns) and then sends the next three, 4 to 12 ns ahead, without waiting.
TEST(DmaEngineAlone, ExactlyOneQuantumAheadIsStillAllowed) {
    tlm_utils::tlm_quantumkeeper::set_global_quantum(sc_core::sc_time(12, sc_core::SC_NS));
    DmaBench b;
    const Tick start = b.cfg.setup_latency * b.cfg.cycle;
    auto p = unit_command(dma_op(hbm(0), vmem(0), 16384, 1, 1));
    b.core.send(*p, 0);
    run();
    expect_chunks(b, start, 0, 0);
    for (unsigned k = 0; k < 4; ++k) {
        EXPECT_EQ(b.mem.received(2 * k).now, start) << k;
        EXPECT_EQ(b.mem.received(2 * k).delay, k * b.chunk_time()) << k;
    }
}

// A descriptor offered with an annotated delay d is taken at d (returned annotation: d) and its
// first chunk goes out setup_latency cycles later.
TEST(DmaEngineAlone, AnnotatedDelayIsTheOfferTime) {
    DmaBench b;
    const Tick d = 5'000, start = d + b.cfg.setup_latency * b.cfg.cycle;
    auto p = unit_command(dma_op(hbm(0), vmem(0), 16384, 1, 1));
    b.core.send(*p, 0, d);
    run();
    EXPECT_EQ(p->cmd->accept, d);
    EXPECT_EQ(b.core.sent(0).answered(), d);
    expect_chunks(b, start, 0, 0);
    ASSERT_EQ(b.flags.received().size(), 1u);
    EXPECT_EQ(b.flags.received(0).arrival(), start + 3 * b.chunk_time());
}

// Back-pressure: descriptor n enters a queue of depth Q when descriptor n - Q leaves it, i.e.
// when the engine dequeues it, once it has issued the previous descriptor's chunks. With Q = 1
// and three 16 KiB descriptors offered at 0 (each 16 ns setup + 4 chunks of 4 ns = 32 ns of
// engine time): d1 is taken at 0, d2 at 0 (d1 leaves the queue at once), d3 only when d2 leaves
// it, at d1's start + 4 chunks = 32 ns. The caller of d3 is blocked in b_transport until the
// engine dequeues d2 (kernel time 28 ns: the engine's last sync, at d1's last chunk), and the
// returned annotation carries it on to 32 ns. Starts: 16, 48, 80 ns.
TEST(DmaEngineAlone, FullQueueBlocksTheCallerUntilASlotFrees) {
    DmaBench b(1);
    const Tick setup = b.cfg.setup_latency * b.cfg.cycle, ct = b.chunk_time();
    const Tick busy = setup + 4 * ct;  // engine time per descriptor
    std::vector<std::unique_ptr<Payload>> ds;
    for (int i = 0; i < 3; ++i) {
        ds.push_back(unit_command(dma_op(hbm(0), vmem(0), 16384, 1, 1), i));
        b.core.send(*ds.back(), 0);
    }
    run();
    EXPECT_EQ(ds[0]->cmd->accept, 0u);
    EXPECT_EQ(ds[1]->cmd->accept, 0u);
    EXPECT_EQ(ds[2]->cmd->accept, setup + 4 * ct);  // d1 starts at setup, then 4 chunks
    EXPECT_EQ(b.core.sent(2).returned, setup + 3 * ct);    // woken when d2 was dequeued
    EXPECT_EQ(b.core.sent(2).answered(), ds[2]->cmd->accept);
    ASSERT_EQ(b.rec.dmas.size(), 3u);
    for (unsigned i = 0; i < 3; ++i) {
        EXPECT_EQ(b.rec.dmas[i].start, setup + i * busy) << i;
        EXPECT_EQ(b.rec.dmas[i].complete, setup + i * busy + 3 * ct) << i;
    }
    EXPECT_EQ(b.flags.received().size(), 3u);
}

// The in-flight window (max_outstanding = W): a chunk is issued no earlier than the chunk W
// before it is done. Closed form, with a memory of latency L on both sides (a chunk is done 2L
// after its read is issued: read data back at L, written L later), issue time c, no setup and
// 2L >= W x c: t_k = max(t_(k-1) + c, t_(k-W) + 2L) = floor(k / W) x 2L + (k mod W) x c. Over
// two descriptors (10 + 6 chunks) with k counted across both: the window is the engine's, not a
// descriptor's (the second one's first chunk waits for the first one's seventh).
TEST(DmaEngineAlone, InFlightWindowHoldsAChunkUntilTheOneWBeforeIsWritten) {
    const unsigned w = 4;
    const Tick lat = 20'000;
    DmaBench b(16, w, 0, lat);
    const Tick ct = b.chunk_time();
    ASSERT_GE(2 * lat, w * ct);  // the window binds
    auto d1 = unit_command(dma_op(hbm(0), vmem(0), 10 * 4096, 1, 1), 0);
    auto d2 = unit_command(dma_op(hbm(0x100000), vmem(0x100000), 6 * 4096, 2, 1), 1);
    b.core.send(*d1, 0);
    b.core.send(*d2, 0);
    run();
    std::vector<Tick> reads, writes;
    for (const Received& r : b.mem.received()) (r.command == tlm::TLM_READ_COMMAND ? reads : writes).push_back(r.arrival());
    ASSERT_EQ(reads.size(), 16u);
    ASSERT_EQ(writes.size(), 16u);
    for (unsigned k = 0; k < 16; ++k) {
        EXPECT_EQ(reads[k], (k / w) * 2 * lat + (k % w) * ct) << k;
        EXPECT_EQ(writes[k], reads[k] + lat) << k;
    }
    ASSERT_EQ(b.rec.dmas.size(), 2u);
    EXPECT_EQ(b.rec.dmas[0].complete, reads[9] + 2 * lat);
    EXPECT_EQ(b.rec.dmas[1].start, reads[9] + ct);  // the engine is free once chunk 9 has issued
    EXPECT_EQ(b.rec.dmas[1].complete, reads[15] + 2 * lat);
}

// ---------------------------------------------------------------------------------------------
// HbmController (models/hbm_controller.h): a request is cut every interleave_bytes over the
// channels in turn; each piece takes its channel's bandwidth from its arrival and its data is
// back `latency` after it has moved. On idle channels, with a request of n x channels x
// interleave bytes starting on channel 0, every channel moves n pieces back to back:
// done = arrival + n x interleave / channel_bandwidth + latency.

namespace {

HbmConfig small_hbm() {
    HbmConfig cfg;
    cfg.capacity = 1ull << 30;
    cfg.channels = 4;
    cfg.channel_bandwidth_gbps = 32;  // 1024 B in exactly 32 ns
    cfg.interleave_bytes = 1024;
    cfg.latency = 100'000;
    return cfg;
}

}  // namespace

// One request of 4 KiB at time 0: one piece per channel, done at 32 + 100 ns. A request of
// 8 KiB later (channels idle again): two pieces per channel, 2 x 32 + 100 ns. A third sent at
// kernel time T with an annotation of 50 ns arrives at T + 50 ns: the returned annotation is
// 50 + 32 + 100 ns from T, and the transaction log records its arrival there, with its origin.
// The 8 KiB request arrives on a calendar bucket boundary (buckets are 2^15 ps here): the
// calendar counts capacity per bucket, so a second piece arriving in the middle of a bucket may
// also use that bucket's capacity from before its arrival and finish up to that much earlier
// than back to back (measured: 48.192 ns instead of 64 ns at 1 us). That is the documented
// accuracy limit of the calendar (docs/architecture.md); on a boundary the closed form is exact.
TEST(HbmControllerAlone, ChannelBandwidthInterleaveLatencyAndAnnotatedDelay) {
    const HbmConfig cfg = small_hbm();
    HbmController hbm("hbm", cfg);
    StubInitiator init("init");
    init.socket.bind(hbm.port);
    Capture rec;
    hbm.set_recorder(&rec);
    const Tick piece = transfer_ticks(cfg.interleave_bytes, cfg.channel_bandwidth_gbps);
    ASSERT_EQ(piece, 32'000u);
    auto r1 = mem_request(tlm::TLM_READ_COMMAND, 0, 4096, "dma7");
    auto r2 = mem_request(tlm::TLM_WRITE_COMMAND, 0x10000, 8192);
    auto r3 = mem_request(tlm::TLM_READ_COMMAND, 0x20000, 4096);
    const Tick t2 = 31 * 32'768, t3 = 2'000'000, d3 = 50'000;  // t2: on a bucket boundary
    init.send(*r1, 0);
    init.send(*r2, t2);
    init.send(*r3, t3, d3);
    run();
    EXPECT_EQ(init.sent(0).delay_out, piece + cfg.latency);
    EXPECT_EQ(init.sent(1).delay_out, 2 * piece + cfg.latency);
    EXPECT_EQ(init.sent(2).called, t3);
    EXPECT_EQ(init.sent(2).delay_out, d3 + piece + cfg.latency);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(init.sent(i).status, tlm::TLM_OK_RESPONSE) << i;

    // The pieces: 4, 8 and 4, over channels 0..3 in turn.
    ASSERT_EQ(rec.hbm_pieces.size(), 16u);
    for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(rec.hbm_pieces[i].channel, i % 4) << i;
    EXPECT_EQ(rec.hbm_pieces[4 + 4].done, t2 + 2 * piece + cfg.latency);  // channel 0's second piece
    ASSERT_EQ(rec.mems.size(), 3u);
    EXPECT_EQ(rec.mem_initiators[0], "dma7");
    EXPECT_EQ(rec.mems[2].arrival, t3 + d3);
    EXPECT_EQ(rec.mems[2].done, t3 + d3 + piece + cfg.latency);
    EXPECT_EQ(hbm.bytes_read(), 8192u);
    EXPECT_EQ(hbm.bytes_written(), 8192u);
}

// The interleave split, computed (one division per request, then the next channel per
// piece: HbmController::access) against the rule enumerated byte-range by byte-range as the
// definition states it: piece = [off, min(end, next multiple of interleave)), channel =
// (off / interleave) % channels, each piece reserved on its own channel's calendar, its
// service time from its own size, its queue room queue_depth whole granules. The reference keeps its own calendars; both
// see the same random requests (addresses and lengths unaligned, reducing writes, arrivals
// out of order within a window after `now`), on interleaves and channel counts that are not
// powers of two as well as ones that are. Same answer for every request, to the picosecond.
namespace {
struct EnumeratedHbm {
    HbmConfig cfg;
    std::vector<BandwidthCalendar> channels;
    explicit EnumeratedHbm(const HbmConfig& c)
        : cfg(c), channels(c.channels, BandwidthCalendar(c.channel_bandwidth_gbps / 1000.0, c.bucket)) {}
    MemTiming access(std::uint64_t addr, std::uint64_t len, bool reduce, Tick arrival, Tick now) {
        const std::uint64_t gran = cfg.interleave_bytes;
        const unsigned passes = reduce ? 2 : 1;
        Tick accept = arrival, done = arrival;
        for (std::uint64_t off = addr - cfg.base, end = off + len; off < end;) {
            const std::uint64_t granule = off / gran;
            const std::uint64_t piece = std::min<std::uint64_t>(end, (granule + 1) * gran) - off;
            const Tick service = transfer_ticks(piece, cfg.channel_bandwidth_gbps) * passes;
            const Tick moved = channels[granule % cfg.channels].reserve(arrival, piece * passes, now);
            const Tick room = cfg.queue_depth * transfer_ticks(gran, cfg.channel_bandwidth_gbps) * passes;
            if (moved > arrival + room + service) accept = std::max(accept, moved - room - service);
            done = std::max(done, moved + cfg.latency);
            off += piece;
        }
        return {done, accept - arrival};
    }
};
}  // namespace

TEST(HbmControllerAlone, InterleaveSplitComputedEqualsEnumerated) {
    struct Shape {
        unsigned channels, interleave, queue_depth;
        double gbps;
    };
    const Shape shapes[] = {{32, 1024, 64, 37.5}, {3, 1000, 4, 10}, {8, 256, 2, 75}, {1, 4096, 64, 37.5},
                            {5, 96, 1, 0.5}, {16, 64, 8, 100}};
    std::mt19937_64 rng(14);
    int n = 0;
    for (const Shape& sh : shapes) {
        HbmConfig cfg = small_hbm();
        cfg.channels = sh.channels;
        cfg.interleave_bytes = sh.interleave;
        cfg.queue_depth = sh.queue_depth;
        cfg.channel_bandwidth_gbps = sh.gbps;
        cfg.base = 1ull << 20;
        HbmController hbm(sc_core::sc_gen_unique_name("hbm"), cfg);
        EnumeratedHbm ref(cfg);
        Tick now = 0;
        for (int i = 0; i < 3000; ++i) {
            now += rng() % 20'000;
            MemAccess a;
            const std::uint64_t span = 4ull * sh.channels * sh.interleave;
            a.addr = cfg.base + rng() % (64 * span);
            a.len = 1 + rng() % (i % 3 == 0 ? 4096 : span + sh.interleave);
            a.write = rng() % 2;
            a.reduce = a.write && rng() % 4 == 0;
            a.now = now;
            a.arrival = now + rng() % 500'000;
            const MemTiming got = hbm.access(a);
            const MemTiming want = ref.access(a.addr, a.len, a.reduce, a.arrival, a.now);
            ASSERT_EQ(got.done, want.done) << "request " << i << " of shape " << sh.channels << "x" << sh.interleave;
            ASSERT_EQ(got.stall, want.stall) << "request " << i << " of shape " << sh.channels << "x" << sh.interleave;
            n += got.stall > 0;
        }
    }
    EXPECT_GT(n, 0);  // back-pressure was exercised, not only free channels
}

// Back-pressure counts the pieces ahead as whole granules, whatever the size of the piece that
// arrives (the closed form: a channel of 32 GB/s moves a 1 KiB granule in 32 ns, so queue_depth
// 4 is room for 128 ns of work). A 128-byte piece (an unaligned DMA's edge) behind 3 whole
// granules (96 ns of work) is accepted at once; behind 6 (192 ns) it waits until 4 are left,
// 64 ns. Counting the room in its own transfer time (4 x 4 ns), as the model did before, it waited
// 80 and 176 ns: 3 pieces ahead of a queue of 4 refused it.
TEST(HbmControllerAlone, QueueRoomCountsThePiecesAheadAsWholeGranules) {
    for (const unsigned ahead : {3u, 6u}) {
        HbmConfig cfg = small_hbm();
        cfg.queue_depth = 4;
        cfg.bucket = 1024;  // ps: fine enough that the calendar's buckets round nothing here
        cfg.base = 1ull << 20;
        HbmController hbm(sc_core::sc_gen_unique_name("hbm"), cfg);
        auto request = [&](std::uint64_t granule, std::uint64_t len) {
            MemAccess a;
            a.addr = cfg.base + granule * cfg.interleave_bytes;  // granules 0, 4, 8...: channel 0
            a.len = len;
            return hbm.access(a);  // now = arrival = 0
        };
        for (unsigned i = 0; i < ahead; ++i) {
            const Tick stall = request(4 * i, 1024).stall;  // one in service and 4 queued fit
            if (i <= cfg.queue_depth) EXPECT_EQ(stall, 0) << i;
        }
        const MemTiming edge = request(4 * ahead, 128);
        const Tick want = ahead == 3 ? 0 : 64'000;
        EXPECT_NEAR(static_cast<double>(edge.stall), static_cast<double>(want), 2.0) << ahead << " ahead";
        // Its data: after the granules ahead (32 ns each) and its own 4 ns, plus the latency.
        EXPECT_NEAR(static_cast<double>(edge.done), static_cast<double>(ahead * 32'000 + 4'000 + cfg.latency), 2.0);
    }
}

// BusyTracker (models/busy_tracker.h) against the union computed from scratch: sort every
// interval, merge overlapping or touching ones, add up the lengths. Random intervals, mostly in
// order with some behind (a vector unit's pipes) and settle() calls at a watermark that no later
// interval starts before, as the models call it.
TEST(BusyTrackerAlone, TotalIsTheUnionOfTheIntervals) {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 50; ++round) {
        BusyTracker busy;
        std::vector<std::pair<Tick, Tick>> all;
        Tick base = 0;
        for (int i = 0; i < 2000; ++i) {
            base += rng() % 50;
            const Tick s = base + rng() % (round % 2 ? 400 : 40);  // ahead of the watermark
            const Tick e = s + rng() % (round % 2 ? 600 : 120);    // empty ones too; nested ones
            busy.add(s, e);
            if (e > s) all.emplace_back(s, e);
            if (rng() % 8 == 0) busy.settle(base);
        }
        std::sort(all.begin(), all.end());
        Tick want = 0, cs = 0, ce = 0;
        bool open = false;
        for (const auto& [s, e] : all) {
            if (open && s <= ce) {
                ce = std::max(ce, e);
            } else {
                if (open) want += ce - cs;
                cs = s, ce = e, open = true;
            }
        }
        if (open) want += ce - cs;
        ASSERT_EQ(busy.total(), want) << "round " << round;
    }
}

// CeilDiv (models/ceil_div.h): the units' ceil(x / d), a shift for a power-of-two divisor and a
// division otherwise, against the quotient computed by hand, around the multiples of d and for
// large x.
TEST(CeilDivAlone, EqualsTheRoundedUpQuotientForEveryDivisor) {
    std::mt19937_64 rng(5);
    for (std::uint64_t d : {1ull, 2ull, 3ull, 7ull, 8ull, 96ull, 128ull, 1000ull, 4096ull, 1048576ull}) {
        const CeilDiv div(d);
        EXPECT_EQ(div.divisor(), d);
        auto want = [d](std::uint64_t x) { return x / d + (x % d != 0); };
        for (std::uint64_t k = 0; k < 50; ++k)
            for (std::uint64_t x : {k * d, k * d + 1, k * d + d - 1})
                ASSERT_EQ(div(x), want(x)) << "d " << d << " x " << x;
        for (int i = 0; i < 1000; ++i) {
            const std::uint64_t x = rng() >> 2;  // far from overflow in x + d - 1
            ASSERT_EQ(div(x), want(x)) << "d " << d << " x " << x;
        }
    }
}

// Outside [base, base + capacity): an address error, nothing recorded.
TEST(HbmControllerAlone, AddressOutsideItsRangeIsAnError) {
    HbmConfig cfg = small_hbm();
    cfg.base = 1ull << 32;
    HbmController hbm("hbm", cfg);
    StubInitiator init("init");
    init.socket.bind(hbm.port);
    auto r = mem_request(tlm::TLM_READ_COMMAND, 0, 64);
    init.send(*r, 0);
    run();
    EXPECT_EQ(init.sent(0).status, tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(hbm.bytes_read(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Vmem (models/vmem.h): ports x port_bytes_per_cycle bytes a cycle together (a calendar), one
// request no faster than one port (ceil(bytes / port width) cycles), data there `latency` cycles
// after it has moved. Four 64 KiB reads at once each take one of the 4 ports for 64 cycles: all
// done at 64 + 2 cycles. A fifth at the same time finds the ports' 4 KiB a cycle used until 64
// cycles: its 64 KiB take 16 more, done at 80 + 2 cycles.
TEST(VmemAlone, OnePortPerRequestAndThePortsTogether) {
    VmemConfig cfg;  // 4 ports of 1 KiB a cycle at 1 GHz, latency 2 cycles
    Vmem vmem("vmem", cfg);
    StubInitiator init("init");
    init.socket.bind(vmem.port);
    const Tick c = cfg.cycle;
    std::vector<std::unique_ptr<Payload>> rs;
    for (int i = 0; i < 5; ++i) {
        rs.push_back(mem_request(tlm::TLM_READ_COMMAND, i * 65536ull, 65536));
        init.send(*rs.back(), 0);
    }
    run();
    for (unsigned i = 0; i < 4; ++i) EXPECT_EQ(init.sent(i).answered(), (64 + cfg.latency) * c) << i;
    EXPECT_EQ(init.sent(4).answered(), (64 + 16 + cfg.latency) * c);
    EXPECT_EQ(vmem.bytes_read(), 5 * 65536u);
}

// ---------------------------------------------------------------------------------------------
// IciLink / IciPort (models/ici.h): a link carries the payload plus packet_overhead_bytes per
// packet_bytes packet at bandwidth_gbps, with `latency` per hop, cut-through: the next hop sees
// the head one latency after it left, and the transfer is done when its last byte has crossed,
// latency + wire bytes / bandwidth after it arrived on an idle link. The port adds its own
// latency and routes by dimension order, the shorter way around each ring.

namespace {

IciLinkConfig link_cfg() {
    IciLinkConfig cfg;
    cfg.bandwidth_gbps = 50;  // 20 ps per byte
    cfg.latency = 500'000;
    cfg.packet_bytes = 1024;
    cfg.packet_overhead_bytes = 64;
    return cfg;
}

}  // namespace

// 4 KiB = 4 packets: 4096 + 4 x 64 = 4352 wire bytes, 87.04 ns on the wire. Sent at 0 with an
// annotation of 10 ns: the far side sees the head at 10 + 500 ns, and the link answers
// 10 + 500 + 87.04 ns.
TEST(IciLinkAlone, OneTransferIsLatencyPlusWireBytesAtItsBandwidth) {
    const IciLinkConfig cfg = link_cfg();
    IciLink link("link", cfg);
    StubInitiator init("init");
    StubTarget far("far");
    init.socket.bind(link.in);
    link.out.bind(far.socket);
    const Tick d = 10'000;
    const std::uint64_t len = 4096, wire = len + (len / cfg.packet_bytes) * cfg.packet_overhead_bytes;
    const Tick serial = transfer_ticks(wire, cfg.bandwidth_gbps);
    ASSERT_EQ(serial, 87'040u);
    auto r = mem_request(tlm::TLM_WRITE_COMMAND, remote_address(1, 0x100), len);
    init.send(*r, 0, d);
    run();
    ASSERT_EQ(far.received().size(), 1u);
    EXPECT_EQ(far.received(0).arrival(), d + cfg.latency);  // cut-through: the head
    EXPECT_EQ(far.received(0).addr, remote_address(1, 0x100));
    EXPECT_EQ(init.sent(0).answered(), d + cfg.latency + serial);
    EXPECT_EQ(link.bytes(), len);
    EXPECT_EQ(link.wire_bytes(), wire);
}

// Port then link then the next chip (a stub): the port's latency adds to the link's. On a ring
// of 4, chip 0 reaches chip 1 on its + link (socket 0) and chip 3 on its - link (socket 1,
// one hop the other way); an address of its own chip goes to `local` with the remote bits
// stripped.
TEST(IciPortAlone, RoutesTheShorterWayAndAddsItsLatency) {
    IciPortConfig pc;
    pc.chip = 0;
    pc.dims = {4};
    IciPort port("port", pc);
    const IciLinkConfig lc = link_cfg();
    IciLink plus("plus", lc), minus("minus", lc);
    StubInitiator init("init");
    StubTarget next_plus("next_plus"), next_minus("next_minus"), local("local");
    init.socket.bind(port.in);
    port.links.bind(plus.in);
    port.links.bind(minus.in);
    port.local.bind(local.socket);
    plus.out.bind(next_plus.socket);
    minus.out.bind(next_minus.socket);
    EXPECT_EQ(port.route(1, 0), 0);
    EXPECT_EQ(port.route(3, 0), 1);
    EXPECT_EQ(port.route(0, 0), -1);

    const std::uint64_t len = 1024;
    const Tick serial = transfer_ticks(len + lc.packet_overhead_bytes, lc.bandwidth_gbps);
    auto to1 = mem_request(tlm::TLM_WRITE_COMMAND, remote_address(1, 0x40), len);
    auto to3 = mem_request(tlm::TLM_WRITE_COMMAND, remote_address(3, 0x80), len);
    auto to0 = mem_request(tlm::TLM_WRITE_COMMAND, remote_address(0, 0xC0), len);
    init.send(*to1, 0);
    init.send(*to3, 0);
    init.send(*to0, 0);
    run();
    ASSERT_EQ(next_plus.received().size(), 1u);
    ASSERT_EQ(next_minus.received().size(), 1u);
    ASSERT_EQ(local.received().size(), 1u);
    EXPECT_EQ(next_plus.received(0).arrival(), pc.latency + lc.latency);
    EXPECT_EQ(next_minus.received(0).arrival(), pc.latency + lc.latency);
    EXPECT_EQ(init.sent(0).answered(), pc.latency + lc.latency + serial);
    EXPECT_EQ(init.sent(1).answered(), pc.latency + lc.latency + serial);
    EXPECT_EQ(local.received(0).addr, 0xC0u);
    EXPECT_EQ(local.received(0).arrival(), pc.latency);
    EXPECT_EQ(init.sent(2).answered(), pc.latency);
}

// ---------------------------------------------------------------------------------------------
// The DMA engine's timed path (models/timed_memory.h): chunks to memories that answer the timing
// probe are timed by calling the memory directly instead of a TLM transaction per chunk. It must
// give exactly the transactions' answer. Two identical memory systems (engine -> Interconnect ->
// HBM + VMEM) in one simulation, one engine with the timed path and one without, get the same
// descriptors at the same times: enough traffic on few narrow channels for the HBM queues to
// push back, a reducing DMA, VMEM -> HBM and HBM -> VMEM, under temporal decoupling. Every DMA's
// times, every memory transaction and HBM piece, and every counter must be equal.

namespace {

struct MemorySystem {
    static constexpr std::uint64_t kHbm = 1ull << 40;
    HbmController hbm;
    Vmem vmem;
    Interconnect noc;
    DmaEngine dma;
    StubInitiator core;
    StubTarget flags;
    Capture rec;

    static HbmConfig hbm_cfg() {
        HbmConfig c;
        c.capacity = 1ull << 30;
        c.channels = 4;
        c.channel_bandwidth_gbps = 8;
        c.queue_depth = 4;
        c.base = kHbm;
        return c;
    }
    static VmemConfig vmem_cfg() {
        VmemConfig c;
        c.capacity = 16ull << 20;
        c.ports = 1;
        c.port_bytes_per_cycle = 64;
        return c;
    }
    static InterconnectConfig noc_cfg() {
        InterconnectConfig c;
        c.routes = {{kHbm, hbm_cfg().capacity, 0}, {0, vmem_cfg().capacity, 1}};
        return c;
    }
    static DmaEngineConfig dma_cfg(bool timed) {
        DmaEngineConfig c;
        c.chunk_bytes = 4096;
        c.max_outstanding = 8;
        c.space_base = {0, kHbm};
        c.timed_path = timed;
        return c;
    }
    MemorySystem(const std::string& n, bool timed)
        : hbm((n + "_hbm").c_str(), hbm_cfg()),
          vmem((n + "_vmem").c_str(), vmem_cfg()),
          noc((n + "_noc").c_str(), noc_cfg()),
          dma((n + "_dma").c_str(), dma_cfg(timed)),
          core((n + "_core").c_str()),
          flags((n + "_flags").c_str()) {
        core.socket.bind(dma.cmd);
        dma.mem.bind(noc.in);
        noc.out.bind(hbm.port);
        noc.out.bind(vmem.port);
        dma.flags.bind(flags.socket);
        for (XpuModule* m : std::initializer_list<XpuModule*>{&hbm, &vmem, &noc, &dma}) m->set_recorder(&rec);
    }
};

std::vector<std::pair<std::string, double>> stats_of(const XpuModule& m) {
    std::vector<std::pair<std::string, double>> v;
    for (const auto& s : m.stats()) v.emplace_back(s.name, s.value);
    return v;
}

}  // namespace

TEST(DmaEngineAlone, TimedPathGivesExactlyTheTransactionsTiming) {
    tlm_utils::tlm_quantumkeeper::set_global_quantum(sc_core::sc_time(200, sc_core::SC_NS));
    MemorySystem timed("t", true), tlm_path("p", false);
    std::vector<Instruction> ops = {
        dma_op(hbm(0x0), vmem(0x0), 96 * 1024, 1, 1),
        dma_op(hbm(0x100000), vmem(0x40000), 64 * 1024 + 1000, 2, 1),  // a partial last chunk
        dma_op(vmem(0x0), hbm(0x200000), 32 * 1024, 3, 1),
        dma_op(hbm(0x300400), vmem(0x80000), 40 * 1024, 4, 1),  // unaligned to the interleave
    };
    Instruction reduce = dma_op(hbm(0x400000), hbm(0x500000), 16 * 1024, 5, 1);
    reduce.dtype = DType::Bf16;
    reduce.set(kDtype);
    ops.push_back(reduce);
    std::vector<std::unique_ptr<Payload>> keep;
    for (MemorySystem* s : {&timed, &tlm_path})
        for (std::size_t i = 0; i < ops.size(); ++i) {
            keep.push_back(unit_command(ops[i], i));
            s->core.send(*keep.back(), i * 3000, i * 500);
        }
    run();
    ASSERT_EQ(timed.rec.dmas.size(), ops.size());
    ASSERT_EQ(tlm_path.rec.dmas.size(), ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(timed.rec.dmas[i].index, tlm_path.rec.dmas[i].index) << i;
        EXPECT_EQ(timed.rec.dmas[i].start, tlm_path.rec.dmas[i].start) << i;
        EXPECT_EQ(timed.rec.dmas[i].complete, tlm_path.rec.dmas[i].complete) << i;
    }
    ASSERT_EQ(timed.rec.mems.size(), tlm_path.rec.mems.size());
    for (std::size_t i = 0; i < timed.rec.mems.size(); ++i) {
        const MemEvent &a = timed.rec.mems[i], &b = tlm_path.rec.mems[i];
        EXPECT_EQ(a.write, b.write) << i;
        EXPECT_EQ(a.addr, b.addr) << i;
        EXPECT_EQ(a.bytes, b.bytes) << i;
        EXPECT_EQ(a.arrival, b.arrival) << i;
        EXPECT_EQ(a.done, b.done) << i;
        EXPECT_EQ(a.for_instr.index, b.for_instr.index) << i;
        EXPECT_EQ(timed.rec.mem_initiators[i], "t_dma") << i;
    }
    ASSERT_EQ(timed.rec.hbm_pieces.size(), tlm_path.rec.hbm_pieces.size());
    for (std::size_t i = 0; i < timed.rec.hbm_pieces.size(); ++i) {
        const HbmChannelEvent &a = timed.rec.hbm_pieces[i], &b = tlm_path.rec.hbm_pieces[i];
        EXPECT_EQ(a.channel, b.channel) << i;
        EXPECT_EQ(a.bytes, b.bytes) << i;
        EXPECT_EQ(a.start, b.start) << i;
        EXPECT_EQ(a.done, b.done) << i;
    }
    EXPECT_EQ(stats_of(timed.hbm), stats_of(tlm_path.hbm));
    EXPECT_EQ(stats_of(timed.vmem), stats_of(tlm_path.vmem));
    EXPECT_EQ(stats_of(timed.noc), stats_of(tlm_path.noc));
    EXPECT_EQ(stats_of(timed.dma), stats_of(tlm_path.dma));
    // The traffic was heavy enough for the HBM queues to push back (else the test proves less).
    double backpressure = 0;
    for (const auto& [k, v] : stats_of(tlm_path.hbm))
        if (k == "backpressure_ns") backpressure = v;
    EXPECT_GT(backpressure, 0);
}

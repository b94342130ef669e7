// The trace transformations of the suggestions, checked independently of the code that plans
// them (whether they make the run faster is measured by re-simulation in tests/e2e/planted.sh).
//  - `reorder` (analysis/schedule.h, list scheduling of a window against a machine model built
//    from the run): the patched trace is a permutation of the original in which every pair of
//    instructions whose order matters (registers, overlapping memory, sync semantics) keeps its
//    order (brute force over every pair of every window that changed); and the model, replaying
//    the original order, lands where the simulator did (the simulator is the reference: the
//    model restates the core's and the units' timing rules).
//  - `double_buffer` (analysis/double_buffer.h, buffer renaming + prefetch): the data flow is
//    unchanged (every instruction reads, register by register and byte by byte, what the same
//    producers wrote, in program-order semantics), and every read of a DMA's data still comes
//    after a wait that covers that DMA.
//  - `double_buffer_store` (analysis/suggest/store_rename.h, staging-buffer copies and a flag per
//    copy): the same data flow, and every instruction that conflicts with a DMA in flight (a
//    read of its destination, a write over its source: read-after-write and write-after-read)
//    comes after a wait covering it; some wait leaves the write-backs of the copies it does not
//    overwrite in flight.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <sstream>
#include <unordered_map>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "analysis/context.h"
#include "analysis/dependencies.h"
#include "analysis/patch.h"
#include "analysis/schedule.h"
#include "analysis/suggest/finder.h"
#include "analysis/suggest/store_rename.h"
#include "analysis/wait_index.h"
#include "tests/analysis_fixture.h"
#include "traces/trace_reader.h"
#include "traces/trace_text.h"
#include "traces/trace_writer.h"

namespace xpu::test {
namespace {

std::vector<Instruction> read_stream(const std::string& path, std::size_t stream) {
    const trace::TraceFile f = trace::TraceFile::open(path);
    trace::StreamReader r(f, stream);
    std::vector<Instruction> out;
    Instruction buf[256];
    for (std::size_t n; (n = r.read(buf, 256)) > 0;) out.insert(out.end(), buf, buf + n);
    return out;
}

// What an instruction reads and writes, restated here from docs/trace-format.md rather than
// taken from the analysis.
struct Effects {
    std::vector<unsigned> reg_reads, reg_writes;
    struct Range {
        Space space;
        std::uint16_t chip;
        std::uint64_t lo, hi;
        bool write;
    };
    std::vector<Range> mem;
};
Effects effects(const Instruction& in, std::uint16_t chip) {
    Effects e;
    if (in.has(kSrc0)) e.reg_reads.push_back(in.src[0]);
    if (in.has(kSrc1)) e.reg_reads.push_back(in.src[1]);
    if (in.has(kSrc2)) e.reg_reads.push_back(in.src[2]);
    if (in.has(kDst)) e.reg_writes.push_back(in.dst);
    auto range = [&](const MemRef& r, bool write) {
        e.mem.push_back({r.space, r.chip == kLocalChip ? chip : r.chip, r.addr, r.addr + std::max<std::uint64_t>(in.bytes, 1), write});
    };
    if ((in.op == Opcode::VLoad || in.op == Opcode::Dma) && in.has(kMemSrc)) range(in.mem_src, false);
    if ((in.op == Opcode::VStore || in.op == Opcode::Dma) && in.has(kMemDst)) range(in.mem_dst, true);
    return e;
}
bool mem_conflict(const Effects& a, const Effects& b) {
    for (const auto& x : a.mem)
        for (const auto& y : b.mem)
            if ((x.write || y.write) && x.space == y.space && x.chip == y.chip && x.lo < y.hi && y.lo < x.hi) return true;
    return false;
}
bool reg_conflict(const Effects& a, const Effects& b) {
    auto meet = [](const std::vector<unsigned>& x, const std::vector<unsigned>& y) {
        for (unsigned r : x)
            if (std::find(y.begin(), y.end(), r) != y.end()) return true;
        return false;
    };
    return meet(a.reg_writes, b.reg_reads) || meet(a.reg_reads, b.reg_writes) || meet(a.reg_writes, b.reg_writes);
}
bool fence(Opcode op) { return op == Opcode::SSet || op == Opcode::SAdd || op == Opcode::Barrier || op == Opcode::Halt; }

// Checks that `patched` is `orig` with instructions reordered legally (single-core chips whose
// flags only the stream's own local DMAs raise, each adding 1: a swait for >= v on flag f stands
// for the DMAs on f numbered (v of the previous swait on f, v] in program order). Returns how
// many instructions changed place.
std::size_t expect_legal_reorder(const std::vector<Instruction>& orig, const std::vector<Instruction>& patched, std::uint16_t chip) {
    EXPECT_EQ(orig.size(), patched.size());
    if (orig.size() != patched.size()) return 0;
    const std::size_t n = orig.size();
    // Where each original instruction went (identical instructions matched in order: swapping
    // two identical ones changes nothing).
    std::map<std::string, std::deque<std::size_t>> at;
    for (std::size_t p = 0; p < n; ++p) at[trace::format_instruction(patched[p])].push_back(p);
    std::vector<std::size_t> pos(n);
    for (std::size_t i = 0; i < n; ++i) {
        auto& q = at[trace::format_instruction(orig[i])];
        EXPECT_FALSE(q.empty()) << "instruction " << i << " (" << trace::format_instruction(orig[i]) << ") is not in the patched trace";
        if (q.empty()) return 0;
        pos[i] = q.front();
        q.pop_front();
    }
    // The DMAs each swait stands for.
    std::vector<std::vector<std::size_t>> covers(n);
    {
        std::map<std::uint16_t, std::vector<std::size_t>> dmas;  // flag -> DMAs in program order
        std::map<std::uint16_t, std::int64_t> waited;            // flag -> value of the last swait
        for (std::size_t i = 0; i < n; ++i) {
            const Instruction& in = orig[i];
            if (in.op == Opcode::Dma && in.has(kFlag)) dmas[in.flag].push_back(i);
            if (in.op != Opcode::SWait) continue;
            const auto& d = dmas[in.flag];
            for (std::int64_t k = waited[in.flag]; k < in.value && k < static_cast<std::int64_t>(d.size()); ++k)
                covers[i].push_back(d[static_cast<std::size_t>(k)]);
            waited[in.flag] = std::max(waited[in.flag], in.value);
        }
    }
    std::vector<Effects> eff(n);
    for (std::size_t i = 0; i < n; ++i) eff[i] = effects(orig[i], chip);
    auto must_keep = [&](std::size_t i, std::size_t j) {  // i before j in program order
        const Instruction &a = orig[i], &b = orig[j];
        if (fence(a.op) || fence(b.op)) return true;
        if (reg_conflict(eff[i], eff[j]) || mem_conflict(eff[i], eff[j])) return true;
        // A matmul uses the weights pushed last before it on its unit (models/matrix_unit.h):
        // a matmul stays after its push, before the next one; pushes keep their order.
        if (a.unit == b.unit && ((a.op == Opcode::MPush && (b.op == Opcode::MatMul || b.op == Opcode::MPush)) ||
                                 (a.op == Opcode::MatMul && b.op == Opcode::MPush)))
            return true;
        const bool wa = a.op == Opcode::SWait, wb = b.op == Opcode::SWait;
        if (wa && wb) return a.flag == b.flag;
        if (wa && b.op == Opcode::Dma && b.has(kFlag) && b.flag == a.flag) return true;  // its own raiser must not pass it
        if (wb && a.op == Opcode::Dma && a.has(kFlag) && a.flag == b.flag) return true;
        if (wa)  // b moves above the wait only if it touches nothing the waited DMAs touch
            for (std::size_t d : covers[i])
                if (mem_conflict(eff[d], eff[j])) return true;
        return false;
    };
    // Windows: ranges [lo, hi) of program order that the patch permutes among themselves.
    std::size_t moved = 0, lo = 0, reach = 0, pairs = 0;
    for (std::size_t i = 0; i < n; ++i) {
        reach = std::max(reach, pos[i]);
        if (reach != i) continue;
        for (std::size_t x = lo; x <= i; ++x) {
            if (pos[x] != x) ++moved;
            for (std::size_t y = x + 1; y <= i; ++y) {
                if (pos[x] < pos[y] || !must_keep(x, y)) continue;
                ADD_FAILURE() << "#" << x << " (" << trace::format_instruction(orig[x]) << ") now after #" << y << " ("
                              << trace::format_instruction(orig[y]) << ")";
                if (++pairs > 5) return moved;
            }
        }
        lo = i + 1;
    }
    return moved;
}

// A copy of the trace at `path` whose every instruction carries its index in its stream as
// its timestamp, so that instructions can be followed through a patch that rewrites them.
std::string stamped(const std::string& path) {
    const trace::TraceFile f = trace::TraceFile::open(path);
    const std::string out = temp_path("stamped.bin");
    trace::TraceWriter w(out);
    for (const std::string& str : f.strings()) w.add_string(str);
    for (std::size_t si = 0; si < f.streams().size(); ++si) {
        const std::size_t o = w.add_stream(f.streams()[si].chip, f.streams()[si].core);
        std::uint64_t i = 0;
        for (Instruction in : read_stream(path, si)) {
            in.timestamp = i++;
            in.set(kTimestamp);
            w.append(o, in);
        }
    }
    w.close();
    return out;
}

// Stream `stream` of r's trace with `s` applied, as `xpu_analyze --apply` writes it.
std::vector<Instruction> patched_stream(const Analyzed& r, const analysis::Suggestion& s, std::size_t stream = 0) {
    const std::string out = temp_path("patched.bin");
    analysis::write_patched_trace(r.data, s, out);
    return read_stream(out, stream);
}

// Program-order data flow: for each instruction (by timestamp), who produced what it reads:
// the last writer of each source register, and the last writer of each 256-byte granule of the
// memory it reads (vld, a DMA's source); for the pieces of a split DMA, all of theirs.
std::map<std::uint64_t, std::vector<std::uint64_t>> data_flow(const std::vector<Instruction>& code, std::uint16_t chip) {
    constexpr std::uint64_t kReg = 1ull << 63;
    std::map<std::uint64_t, std::vector<std::uint64_t>> flow;
    std::vector<std::int64_t> reg_writer(kNumRegs, -1);
    std::unordered_map<std::uint64_t, std::uint64_t> writer;  // granule -> producer
    for (const Instruction& in : code) {
        const Effects e = effects(in, chip);
        std::vector<std::uint64_t> from;
        for (unsigned r : e.reg_reads)
            if (reg_writer[r] >= 0) from.push_back(kReg | static_cast<std::uint64_t>(reg_writer[r]));
        auto granules = [](const Effects::Range& m, auto f) {
            const std::uint64_t tag = (std::uint64_t(m.space) << 60) | (std::uint64_t(m.chip) << 44);
            for (std::uint64_t g = m.lo >> 8; g <= (m.hi - 1) >> 8; ++g) f(tag | g);
        };
        for (const auto& m : e.mem)
            if (!m.write)
                granules(m, [&](std::uint64_t g) {
                    auto it = writer.find(g);
                    if (it != writer.end()) from.push_back(it->second);
                });
        // The pieces of a split DMA share its timestamp: what they read, together.
        auto& all = flow[in.timestamp];
        all.insert(all.end(), from.begin(), from.end());
        std::sort(all.begin(), all.end());
        all.erase(std::unique(all.begin(), all.end()), all.end());
        if (all.empty()) flow.erase(in.timestamp);
        for (unsigned r : e.reg_writes) reg_writer[r] = static_cast<std::int64_t>(in.timestamp);
        for (const auto& m : e.mem)
            if (m.write) granules(m, [&](std::uint64_t g) { writer[g] = in.timestamp; });
    }
    return flow;
}

// A renaming patch (prefetch_ahead, double_buffer_store) rewrites only VMEM addresses, flags
// and wait values: `in` is `was` with at most those changed.
void expect_only_addresses_flags_and_counts_changed(const Instruction& was, const Instruction& in) {
    Instruction o = was;
    o.mem_src.addr = in.mem_src.addr;
    o.mem_dst.addr = in.mem_dst.addr;
    if (o.op == Opcode::Dma || o.op == Opcode::SWait) o.flag = in.flag;
    if (o.op == Opcode::SWait) o.value = in.value;
    EXPECT_EQ(o, in) << "only VMEM addresses, flags and wait values may change: " << trace::format_instruction(in);
}

// Every read of a DMA's data comes after a swait on the DMA's flag for at least the flag's count
// once that DMA (all its pieces) has landed (flags count completions by their increments; a
// `gt v` wait is a `ge v + 1`): checked on `code` as it stands.
void expect_reads_after_their_wait(const std::vector<Instruction>& code, std::uint16_t chip) {
    std::map<std::uint64_t, std::pair<std::uint16_t, std::int64_t>> dma;  // timestamp -> (flag, count once it lands)
    std::map<std::uint16_t, std::int64_t> issued, waited;                 // per flag
    std::unordered_map<std::uint64_t, std::uint64_t> writer;
    std::size_t checked = 0;
    for (const Instruction& in : code) {
        const Effects e = effects(in, chip);
        if (in.op == Opcode::SWait) waited[in.flag] = std::max(waited[in.flag], in.cond == Cond::Gt ? in.value + 1 : in.value);
        for (const auto& m : e.mem) {
            if (m.write) continue;
            for (std::uint64_t g = m.lo >> 8; g <= (m.hi - 1) >> 8; ++g) {
                auto w = writer.find((std::uint64_t(m.space) << 60) | (std::uint64_t(m.chip) << 44) | g);
                if (w == writer.end()) continue;
                auto d = dma.find(w->second);
                if (d == dma.end()) continue;
                ++checked;
                if (waited[d->second.first] < d->second.second) {
                    ADD_FAILURE() << trace::format_instruction(in) << " reads DMA #" << w->second << "'s data before a wait covers it";
                    return;
                }
            }
        }
        // A DMA (or each piece of a split one: they share its timestamp) counts its increment.
        if (in.op == Opcode::Dma && in.has(kFlag))
            dma[in.timestamp] = {in.flag, issued[in.flag] += in.has(kValue) ? in.value : 1};
        for (const auto& m : e.mem)
            if (m.write)
                for (std::uint64_t g = m.lo >> 8; g <= (m.hi - 1) >> 8; ++g)
                    writer[(std::uint64_t(m.space) << 60) | (std::uint64_t(m.chip) << 44) | g] = in.timestamp;
    }
    EXPECT_GT(checked, 0u);
}

// Applies the run's reorder suggestion at `where`, checks the patched trace's legality, and
// the model against the simulator on each list-scheduled window.
// The windows of a list-scheduled reorder (the moves carry their rank; a window ends where its
// moves go), each scheduled again: the model replays its original order within `tolerance` of
// the simulator (the reference: the model restates its rules) and finds the new order faster.
// Returns how many windows.
std::size_t expect_windows_modelled(const Analyzed& r, const analysis::Suggestion& s, double tolerance) {
    std::map<std::uint64_t, std::uint64_t> windows;  // end -> begin
    for (const analysis::Move& m : s.moves) {
        EXPECT_GT(m.rank, 0u) << "a reorder of the list scheduler moves whole windows";
        auto it = windows.emplace(m.before, m.from).first;
        it->second = std::min(it->second, m.from);
    }
    analysis::Context cx(r.data);
    analysis::Planner plan(cx);
    analysis::WindowScheduler sched(cx, plan);
    for (const auto& [end, begin] : windows) {
        const analysis::WindowSchedule w = sched.schedule(0, begin, end);
        EXPECT_EQ(w.order.size(), end - begin);
        const double span = static_cast<double>(w.measured - w.start);
        EXPECT_NEAR(static_cast<double>(w.modelled_before - w.start), span, tolerance * span)
            << "window " << begin << ".." << end << ": the model replays the original order to " << w.modelled_before
            << " ps, the simulator took it to " << w.measured << " from " << w.start;
        EXPECT_LT(w.modelled_after, w.modelled_before);
    }
    return windows.size();
}

void check_reorder(const Analyzed& r, const std::string& where_leaf) {
    const analysis::Suggestion* s = nullptr;
    for (const auto& x : r.a.suggestions)
        if (x.kind == "reorder" && x.where.find(where_leaf) != std::string::npos) s = &x;
    ASSERT_NE(s, nullptr) << "no reorder suggestion at " << where_leaf;
    EXPECT_GT(s->estimated_saving, 0u);
    const std::size_t moved = expect_legal_reorder(r.data.streams[0].code, patched_stream(r, *s), r.data.streams[0].chip);
    EXPECT_GT(moved, 0u);
    std::printf("%s: %zu instructions changed place, estimated saving %.1f ns\n", s->where.c_str(), moved, s->estimated_saving / 1000.0);

    expect_windows_modelled(r, *s, 0.02);
}

// A GEMM of two row blocks (so that one epilogue sits mid-run), k steps of 128.
gen::GemmParams two_blocks(std::uint64_t k) {
    gen::GemmParams p;
    p.m = 2048;
    p.n = 1024;
    p.k = k;
    return p;
}

// One llama2-7b decode layer over 128 cached tokens.
gen::TransformerParams decode_layer() {
    gen::TransformerParams p;
    EXPECT_TRUE(gen::model_preset("llama2-7b", p.model));
    p.seq = 128;
    p.layers = 1;
    return p;
}

// A ring of 8 chips: configs/xpu-ring4.yaml with these --set.
const std::vector<std::string> kRing8 = {"chips=8", "topology.dims=[8]"};

// One llama2-7b decode layer over 2048 cached tokens, tensor-parallel over the 8 chips of a ring
// (its all-reduces: rings of 14 steps of 1 KiB pieces), simulated and analysed.
Analyzed analyzed_tp8_decode(const std::string& name) {
    gen::TransformerParams p = decode_layer();
    p.seq = 2048;
    p.tp = 8;
    return analyzed(stamped(transformer_trace(name, p)), kRing8, "configs/xpu-ring4.yaml");
}

// sim_main (one SystemC simulation per process: a test's second run goes through it) on that
// ring, `trace` into `out`, quietly, with `flags`; whether it succeeded.
bool sim_main_on_ring8(const std::string& trace, const std::string& out, const std::string& flags) {
    std::string cmd = std::string(XPU_BINARY_DIR) + "/platform/sim_main --platform " + source_path("configs/xpu-ring4.yaml") +
                      " --trace " + trace + " --out " + out + " -q " + flags;
    for (const std::string& x : kRing8) cmd += " --set '" + x + "'";
    const int rc = std::system(cmd.c_str());
    if (rc != 0) ADD_FAILURE() << cmd << ": exit " << rc;
    return rc == 0;
}

// The end of the highest VMEM byte the stream touches.
std::uint64_t vmem_top(const std::vector<Instruction>& code) {
    std::uint64_t top = 0;
    for (const Instruction& in : code)
        for (const auto& m : effects(in, 0).mem)
            if (m.space == Space::Vmem) top = std::max(top, m.hi);
    return top;
}

// The VMEM byte ranges a program touches, merged: sorted, disjoint, not adjacent.
std::vector<std::pair<std::uint64_t, std::uint64_t>> vmem_touched(const std::vector<Instruction>& code) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> r, merged;
    for (const Instruction& in : code)
        for (const auto& m : effects(in, 0).mem)
            if (m.space == Space::Vmem) r.push_back({m.lo, m.hi});
    std::sort(r.begin(), r.end());
    for (const auto& x : r)
        if (!merged.empty() && x.first <= merged.back().second) merged.back().second = std::max(merged.back().second, x.second);
        else merged.push_back(x);
    return merged;
}

// The buffers a transformation adds (every VMEM operand whose address it changed) lie in VMEM
// the original program never touches, inside the VMEM: wherever the free VMEM is (above the
// highest byte used, or a larger range lower down: BufferRenamer::room). `patched` holds the
// original's instructions by timestamp (and waits added after them).
void expect_new_buffers_in_free_vmem(const std::vector<Instruction>& orig, const std::vector<Instruction>& patched,
                                     std::uint64_t vmem_capacity) {
    const auto used = vmem_touched(orig);
    std::size_t changed = 0;
    for (const Instruction& in : patched) {
        ASSERT_LT(in.timestamp, orig.size());
        const auto before = effects(orig[in.timestamp], 0).mem, after = effects(in, 0).mem;
        ASSERT_EQ(before.size(), after.size());
        for (std::size_t i = 0; i < after.size(); ++i) {
            if (after[i].space != Space::Vmem || after[i].lo == before[i].lo) continue;
            ++changed;
            EXPECT_LE(after[i].hi, vmem_capacity) << trace::format_instruction(in);
            auto it = std::upper_bound(used.begin(), used.end(), std::make_pair(after[i].lo, ~std::uint64_t{0}));
            if (it != used.begin()) {
                EXPECT_LE(std::prev(it)->second, after[i].lo) << "a new buffer overlaps VMEM the original uses: " << trace::format_instruction(in);
            }
            if (it != used.end()) {
                EXPECT_GE(it->first, after[i].hi) << "a new buffer overlaps VMEM the original uses: " << trace::format_instruction(in);
            }
        }
    }
    EXPECT_GT(changed, 0u) << "no VMEM operand was renamed";
}

// The planted --bad-order of the GEMM: a block's whole epilogue behind a wait for the next
// step's data.
TEST(Reorder, GemmEpilogueBurstIsListScheduledLegally) {
    gen::GemmParams p = two_blocks(512);
    p.bad_order = true;
    const Analyzed r = analyzed(gemm_trace("bad.bin", p).path);
    check_reorder(r, "wait_data");
}

// Applies the run's top suggestion, a double_buffer, and checks the patched trace: the same
// instructions, some moved, some with only a VMEM address, a flag or a wait value changed; the
// same data flow; every read of a DMA's data after a wait covering it; the copies in free VMEM.
void check_double_buffer(const Analyzed& r, std::uint64_t vmem_capacity = 32ull << 20) {
    // Its double_buffer suggestion (prefetch_ahead, which renames buffers too, may rank above it:
    // its own test is PrefetchAhead.*).
    auto it = std::find_if(r.a.suggestions.begin(), r.a.suggestions.end(), [](const analysis::Suggestion& x) { return x.kind == "double_buffer"; });
    ASSERT_NE(it, r.a.suggestions.end()) << "no double_buffer suggestion";
    const analysis::Suggestion& s = *it;
    EXPECT_GT(s.estimated_saving, 0u);
    EXPECT_FALSE(s.edits.empty());
    EXPECT_FALSE(s.moves.empty());
    const std::vector<Instruction>& orig = r.data.streams[0].code;
    const std::vector<Instruction> patched = patched_stream(r, s);
    ASSERT_EQ(orig.size(), patched.size());
    // The same instructions (by timestamp), some moved, some with a renamed VMEM address only.
    std::vector<bool> seen(orig.size(), false);
    std::size_t renamed = 0, moved = 0;
    for (std::size_t p2 = 0; p2 < patched.size(); ++p2) {
        const Instruction& in = patched[p2];
        ASSERT_LT(in.timestamp, orig.size());
        ASSERT_FALSE(seen[in.timestamp]);
        seen[in.timestamp] = true;
        if (in.timestamp != p2) ++moved;
        Instruction o = orig[in.timestamp];
        if (o == in) continue;
        ++renamed;
        // A renamed VMEM address, or a flag split (a DMA's flag, a wait's flag and value); the
        // data flow and the waits are checked below.
        o.mem_src.addr = in.mem_src.addr;
        o.mem_dst.addr = in.mem_dst.addr;
        if (o.op == Opcode::Dma || o.op == Opcode::SWait) o.flag = in.flag;
        if (o.op == Opcode::SWait) o.value = in.value;
        EXPECT_EQ(o, in) << "only VMEM addresses, flags and wait values may change: " << trace::format_instruction(in);
        if (in.op != Opcode::SWait) {
            EXPECT_TRUE(in.mem_src.space == Space::Vmem || in.mem_dst.space == Space::Vmem);
        }
    }
    EXPECT_GT(renamed, 0u);
    EXPECT_GT(moved, 0u);
    std::set<std::uint16_t> flags_before, flags_after;
    for (const Instruction& in : orig)
        if (in.op == Opcode::SWait) flags_before.insert(in.flag);
    for (const Instruction& in : patched)
        if (in.op == Opcode::SWait) flags_after.insert(in.flag);
    // Each copy's steps wait on a flag of their own: kBufferCopies - 1 new flags per split flag.
    EXPECT_GE(flags_after.size(), flags_before.size() + analysis::kBufferCopies - 1)
        << "the renamed fills' waits have a flag of their own";
    EXPECT_EQ(data_flow(orig, 0), data_flow(patched, 0)) << "a read now sees another producer";
    expect_reads_after_their_wait(orig, 0);
    expect_reads_after_their_wait(patched, 0);
    // The buffer copies fit in the VMEM, where the original used none.
    expect_new_buffers_in_free_vmem(orig, patched, vmem_capacity);  // the platform's VMEM (configs/xpu.yaml: 32 MiB)
}

// The planted --no-double-buffer: every step's tiles DMA'd into the same buffers just before
// use. The suggestion renames the fills of each step into the step's copy of the buffer and
// prefetches.
TEST(DoubleBuffer, RenamedBuffersKeepTheDataFlowAndTheWaits) {
    gen::GemmParams p = two_blocks(1024);
    p.double_buffer = false;
    check_double_buffer(analyzed(stamped(gemm_trace("single.bin", p).path)));
}

// The same on a decode layer, whose A-tile buffer is shared by ops of different tile sizes (so
// it is filled a different number of times than the weight buffers: copies follow the step).
TEST(DoubleBuffer, DecodeLayerSharedBuffersKeepTheDataFlowAndTheWaits) {
    gen::TransformerParams p = decode_layer();
    p.tiles.prefetch = false;
    check_double_buffer(analyzed(stamped(transformer_trace("decode-single.bin", p))));
}

// A GEMM whose last row block, column block and K step are smaller than the others: the edge
// tiles go into the same buffers, partly. The fill before a smaller one is renamed too when
// nothing reads the part the smaller one leaves (double_buffer.cpp: rest_unread); the data flow
// says whether that holds.
TEST(DoubleBuffer, EdgeTilesOfAnOddGemmKeepTheDataFlowAndTheWaits) {
    gen::GemmParams p;
    p.m = 1100;
    p.n = 1300;
    p.k = 700;
    p.double_buffer = false;
    check_double_buffer(analyzed(stamped(gemm_trace("odd-single.bin", p).path)));
}

// An MxNxK GEMM without prefetch (--no-double-buffer), tiled for tpu-v6e-4.yaml's four 256x256
// matrix units as `xpu_tracegen gemm --platform` tiles it (gen::tiles_for).
gen::GemmParams v6e_gemm_without_prefetch(std::uint64_t m, std::uint64_t n, std::uint64_t k) {
    gen::GemmParams p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.mxus = 4;
    p.dim = 256;
    p.dma_engines = 4;
    p.vpus = 1;
    p.vec_base = 48ull << 20;  // three quarters of its 64 MiB of VMEM
    p.double_buffer = false;
    return p;
}

// Tiles packed back to back whose sizes change from step to step: on tpu-v6e-4.yaml's four
// 256x256 matrix units (tiled for them, as `xpu_tracegen gemm --platform` does), a 500-deep K is
// a 256 and a 244 step, and the two weight tiles of a step sit one after the other, so the second
// tile of a 244 step starts inside the first tile's buffer of a 256 step. Renamed buffer by
// buffer, that fill straddles the buffer and the weights were not renamed at all (72.9% of the
// planted loss recovered, the pushes waiting on their weights every step); the region the
// tiles share is renamed step by step instead (BufferRenamer::region_of), checked here as every
// renaming is (the data flow, reads after their waits), and each step's weight fill lands in a
// copy of its own.
TEST(DoubleBuffer, TilesOfChangingSizesPackedInOneRegionAreRenamedTogether) {
    const gen::GemmParams p = v6e_gemm_without_prefetch(3000, 1000, 500);
    const Analyzed r = analyzed(stamped(gemm_trace("packed-single.bin", p).path), {}, "configs/tpu-v6e-4.yaml");
    check_double_buffer(r, 64ull << 20);
    auto it = std::find_if(r.a.suggestions.begin(), r.a.suggestions.end(), [](const analysis::Suggestion& x) { return x.kind == "double_buffer"; });
    ASSERT_NE(it, r.a.suggestions.end());
    const std::string out = temp_path("packed-patched.bin");
    analysis::write_patched_trace(r.data, *it, out);
    // The weight tiles' fills: from B, which the generator places right after A in HBM.
    const std::uint64_t b_lo = p.m * p.k * 2, b_hi = b_lo + p.k * p.n * 2;
    auto weight_buffers = [&](const std::vector<Instruction>& code) {
        std::set<std::uint64_t> at;
        for (const Instruction& in : code)
            if (in.op == Opcode::Dma && in.mem_src.space == Space::Hbm && in.mem_src.addr >= b_lo && in.mem_src.addr < b_hi)
                at.insert(in.mem_dst.addr);
        return at;
    };
    const std::set<std::uint64_t> before = weight_buffers(r.data.streams[0].code), after = weight_buffers(read_stream(out, 0));
    ASSERT_FALSE(before.empty());
    EXPECT_GE(after.size(), analysis::kBufferCopies * before.size()) << "every place a weight tile is filled, in each copy";
}

// The rule that makes renaming a region safe, shown to refuse: a vector load of a 244 step that
// reads bytes of the weight region only a 256 step's fills wrote (the tail its own smaller tiles
// leave) wants the 256 step's copy, so the region cannot be renamed step by step. The program as
// generated (that load reading its own step's bytes) is renamed.
TEST(DoubleBuffer, ARegionWhoseStepReadsAnotherStepsBytesIsNotRenamed) {
    const gen::GemmParams p = v6e_gemm_without_prefetch(3000, 1000, 500);
    const Analyzed r = analyzed(stamped(gemm_trace("packed-refused.bin", p).path), {}, "configs/tpu-v6e-4.yaml");
    // The weight region: every fill of B (placed right after A in HBM) lies in it.
    const std::uint64_t b_lo = p.m * p.k * 2, b_hi = b_lo + p.k * p.n * 2;
    const std::vector<Instruction>& code = r.data.streams[0].code;
    std::vector<std::uint64_t> fills;
    for (std::uint64_t j = 0; j < code.size(); ++j)
        if (code[j].op == Opcode::Dma && code[j].mem_src.space == Space::Hbm && code[j].mem_src.addr >= b_lo && code[j].mem_src.addr < b_hi)
            fills.push_back(j);
    ASSERT_GE(fills.size(), 4u);
    std::uint64_t lo = ~std::uint64_t{0}, hi = 0;  // the region
    for (std::uint64_t j : fills) {
        lo = std::min(lo, code[j].mem_dst.addr);
        hi = std::max(hi, code[j].mem_dst.addr + code[j].bytes);
    }
    // The fill that ends highest below the region's top (a 244 step's second tile), and the first
    // vector load of the region after it (its step's): moved to read the tail that step leaves.
    std::uint64_t short_fill = 0, load = 0, short_end = 0;
    for (std::uint64_t j : fills) {
        const std::uint64_t end = code[j].mem_dst.addr + code[j].bytes;
        if (end < hi && end > short_end) {
            short_fill = j;
            short_end = end;
        }
    }
    ASSERT_GT(short_fill, 0u) << "no step leaves the region's tail unwritten";
    for (std::uint64_t j = short_fill + 1; j < code.size() && !load; ++j)
        if (code[j].op == Opcode::VLoad && code[j].mem_src.addr >= lo && code[j].mem_src.addr < hi) load = j;
    ASSERT_GT(load, 0u);
    auto renames = [&](const analysis::RunData& run, std::string& why) {
        analysis::Context cx(run);
        analysis::Planner plan(cx);
        analysis::BufferRenamer renamer(run, plan);
        EXPECT_EQ(renamer.region_of(0, code[fills[0]].mem_dst.addr, code[fills[0]].mem_dst.addr + code[fills[0]].bytes),
                  std::make_pair(lo, hi))
            << "the region is the union of the weight fills";
        analysis::Planner::Edited edited;
        return renamer.rename(0, {fills[0]}, edited, why);
    };
    std::string why;
    EXPECT_TRUE(renames(r.data, why)) << why;
    analysis::RunData stale = r.data;
    stale.streams[0].code[load].mem_src.addr = hi - code[load].bytes;  // its bytes end at the region's top
    EXPECT_FALSE(renames(stale, why));
    EXPECT_NE(why.find("its own fills did not write"), std::string::npos) << why;
}

// Where the buffer copies beat the plain hoist, they are the step's suggestion, not a variant of
// the hoist: a 777x1000x1300 GEMM without prefetch on tpu-v6e-4.yaml (six K steps) has each
// step's A fill blocked by the step's own last vector loads, and its B fill by the weight loads
// at the step's start (two DMAs whose tile a 128 KiB load reads across the seam: renamed as one
// region). The plain hoist moves the fills only a few instructions up. The copies rename the
// data flow correctly (check_double_buffer) and are estimated above the hoist over the same
// step. (When the chip's DMA engines booked the HBM in the order their threads ran, the two
// estimates tied here and the copies were offered as a variant of the hoist; with the engines in
// time order, models/dma_arbiter.h, none of 36 GEMMs without prefetch ties: 9 shapes on xpu,
// xpu-2vpu, tpu-v5e-4 and tpu-v6e-4.)
TEST(DoubleBuffer, CopiesThatBeatThePlainHoistAreTheStepsSuggestion) {
    const Analyzed r = analyzed(stamped(gemm_trace("tie-single.bin", v6e_gemm_without_prefetch(777, 1000, 1300)).path), {},
                                "configs/tpu-v6e-4.yaml");
    check_double_buffer(r, 64ull << 20);
    const analysis::Suggestion* db = first_of_kind(r, "double_buffer");
    const analysis::Suggestion* plain = first_of_kind(r, "hoist_dma");
    ASSERT_NE(db, nullptr);
    ASSERT_NE(plain, nullptr);
    EXPECT_FALSE(db->variant);
    EXPECT_EQ(db->where, plain->where);
    EXPECT_GT(db->estimated_saving, plain->estimated_saving);
    // Both tiles are renamed: fills of A (the first DMA's destination) and of B (the third's, a
    // tile filled by two DMAs) go to copies elsewhere.
    const auto& code = r.data.streams[0].code;
    std::vector<std::uint64_t> first_fills;
    for (std::uint64_t k = 0; k < code.size() && first_fills.size() < 3; ++k)
        if (code[k].op == Opcode::Dma) first_fills.push_back(code[k].mem_dst.addr);
    ASSERT_EQ(first_fills.size(), 3u);
    auto renamed_fills_of = [&](std::uint64_t addr) {
        std::size_t n = 0;
        for (const analysis::Edit& e : db->edits)
            n += code[e.index].op == Opcode::Dma && code[e.index].mem_dst.addr == addr && e.in.mem_dst.addr != addr;
        return n;
    };
    EXPECT_GT(renamed_fills_of(first_fills[0]), 0u) << "A's fills";
    EXPECT_GT(renamed_fills_of(first_fills[2]), 0u) << "B's fills (read across the seam of its two DMAs)";
}

// The hoist's DMAs on other engines (analysis/suggest/engine_balance.h), on a GEMM whose weight
// tiles are loaded late (--late-dma) on tpu-v6e-4.yaml's four engines. The generator gave each
// DMA the next engine in its issue order; the hoist issues the first K steps' loads back to
// back, so two steps each had their four tile loads on two engines, where one engine moved a
// later step's tile while an earlier step's waited (70.3% of the planted loss recovered by the
// plain hoist, 91.6% by the variant: bench_suggestions). The variant moves exactly what the
// hoist moves and changes only engines; in its patched program, each step's loads (one flag)
// that are issued back to back sit on distinct engines, which the plain hoist's do not.
TEST(HoistDma, TheSpreadVariantGivesEachStepsLoadsEnginesOfTheirOwn) {
    gen::GemmParams p = v6e_gemm_without_prefetch(1000, 1000, 1000);
    p.double_buffer = true;
    p.late_dma = true;
    const Analyzed r = analyzed(gemm_trace("late-v6e.bin", p).path, {}, "configs/tpu-v6e-4.yaml");
    const analysis::Suggestion *plain = nullptr, *spread = nullptr;
    for (const analysis::Suggestion& x : r.a.suggestions)
        if (x.kind == "hoist_dma" && x.variant && !spread) spread = &x;
    ASSERT_NE(spread, nullptr);
    for (const analysis::Suggestion& x : r.a.suggestions)
        if (x.kind == "hoist_dma" && !x.variant && x.where == spread->where && !plain) plain = &x;
    ASSERT_NE(plain, nullptr);
    ASSERT_EQ(spread->moves.size(), plain->moves.size());
    for (std::size_t i = 0; i < plain->moves.size(); ++i) {
        EXPECT_EQ(spread->moves[i].from, plain->moves[i].from);
        EXPECT_EQ(spread->moves[i].before, plain->moves[i].before);
    }
    const auto& code = r.data.streams[0].code;
    ASSERT_FALSE(spread->edits.empty());
    for (const analysis::Edit& e : spread->edits) {
        Instruction same = e.in;
        same.unit = code[e.index].unit;
        EXPECT_EQ(same, code[e.index]) << "edit of #" << e.index << " changes more than its engine";
        EXPECT_NE(e.in.unit, code[e.index].unit);
    }
    // Per run of back-to-back DMAs in the patched program: does any flag have two of its DMAs on
    // one engine?
    auto shared_engine = [&](const analysis::Suggestion& s) {
        bool shared = false;
        std::map<std::uint16_t, std::set<std::uint8_t>> engines_of_flag;
        std::map<std::uint16_t, std::size_t> dmas_of_flag;
        auto close = [&] {
            for (const auto& [flag, n] : dmas_of_flag) shared = shared || engines_of_flag[flag].size() < n;
            engines_of_flag.clear();
            dmas_of_flag.clear();
        };
        analysis::visit_patched(
            r.data, s, [](std::uint32_t) {},
            [&](std::uint32_t, std::uint64_t i, const analysis::Edit* e) {
                const Instruction& in = e ? e->in : code[i];
                if (in.op != Opcode::Dma) return close();
                engines_of_flag[in.flag].insert(in.unit);
                ++dmas_of_flag[in.flag];
            });
        close();
        return shared;
    };
    EXPECT_TRUE(shared_engine(*plain)) << "the planted imbalance is gone: the test no longer shows the variant's reason";
    EXPECT_FALSE(shared_engine(*spread));
}

// Every instruction that conflicts with a DMA in flight (overlapping bytes, one of them
// writing: a read of its destination, a write over its source or its destination) comes after
// a swait on the DMA's flag for at least the flag's count once that DMA has landed: the order
// every asynchronous DMA needs, read-after-write and write-after-read alike. Checked on `code`
// as it stands (single stream, flags raised only by its own DMAs). Returns, over the waits on a
// flag of `watch` that covered a DMA, the most flags of `watch` that write-backs (VMEM -> HBM)
// still in flight right after it raise.
std::size_t expect_dma_orders_kept(const std::vector<Instruction>& code, std::uint16_t chip, const std::set<std::uint16_t>& watch = {}) {
    struct Flight {
        std::size_t at;
        std::uint16_t flag;
        std::int64_t count;
        Effects e;
        bool write_back;
    };
    std::vector<Flight> flight;
    std::map<std::uint16_t, std::int64_t> issued;
    std::size_t most = 0;
    for (std::size_t i = 0; i < code.size(); ++i) {
        const Instruction& in = code[i];
        if (in.op == Opcode::SWait) {
            const std::int64_t v = in.cond == Cond::Gt ? in.value + 1 : in.value;
            const std::size_t before = flight.size();
            flight.erase(std::remove_if(flight.begin(), flight.end(), [&](const Flight& f) { return f.flag == in.flag && f.count <= v; }),
                         flight.end());
            if (flight.size() < before && watch.count(in.flag)) {
                std::set<std::uint16_t> flags;
                for (const Flight& f : flight)
                    if (f.write_back && watch.count(f.flag)) flags.insert(f.flag);
                most = std::max(most, flags.size());
            }
            continue;
        }
        const Effects e = effects(in, chip);
        if (!e.mem.empty())
            for (const Flight& f : flight)
                if (mem_conflict(f.e, e)) {
                    ADD_FAILURE() << "#" << i << " (" << trace::format_instruction(in) << ") conflicts with DMA #" << f.at << " ("
                                  << trace::format_instruction(code[f.at]) << ") before a wait covers it";
                    return most;
                }
        if (in.op == Opcode::Dma && in.has(kFlag))
            flight.push_back({i, in.flag, issued[in.flag] += in.has(kValue) ? in.value : 1, e,
                              in.mem_src.space == Space::Vmem && in.mem_dst.space == Space::Hbm});
    }
    return most;
}

// double_buffer_store (analysis/suggest/store_rename.h) on a generated trace: the patched
// program is the original's instructions in their order (by timestamp; a wait may be followed
// by more waits on the copies' flags), only VMEM addresses, flags and wait counts rewritten;
// every read sees the producer it saw before; every DMA's data and buffer are waited for before
// anything that conflicts with them; and some wait now leaves the write-backs of the blocks
// since the copy it waits for in flight (kStoreCopies - 1 blocks, each copy's on its flag).
// The first suggestion of r that `is` picks, or (a failure of the test) an empty one.
template <class Pick>
const analysis::Suggestion& required_suggestion(const Analyzed& r, Pick is, const char* what) {
    auto it = std::find_if(r.a.suggestions.begin(), r.a.suggestions.end(), is);
    if (it != r.a.suggestions.end()) return *it;
    ADD_FAILURE() << "no " << what << " suggestion";
    static const analysis::Suggestion none;
    return none;
}

const analysis::Suggestion& check_double_buffer_store(const Analyzed& r) {
    const analysis::Suggestion& s = required_suggestion(
        r, [](const analysis::Suggestion& x) { return x.kind == "double_buffer_store" && x.moves.empty(); },
        "double_buffer_store (the store side alone)");
    if (s.kind.empty()) return s;
    EXPECT_GT(s.estimated_saving, 0u);
    EXPECT_TRUE(s.moves.empty()) << "nothing moves: the waits change what they wait for";
    const std::vector<Instruction>& orig = r.data.streams[0].code;
    const std::vector<Instruction> patched = patched_stream(r, s);
    std::vector<int> seen(orig.size(), 0);
    std::size_t added = 0;
    for (std::size_t p2 = 0; p2 < patched.size(); ++p2) {
        const Instruction& in = patched[p2];
        EXPECT_LT(in.timestamp, orig.size());
        if (in.timestamp >= orig.size()) return s;
        if (seen[in.timestamp]++) {  // a wait on another copy's flag, after the wait it follows
            ++added;
            EXPECT_EQ(in.op, Opcode::SWait);
            EXPECT_EQ(orig[in.timestamp].op, Opcode::SWait);
            continue;
        }
        EXPECT_EQ(in.timestamp + added, p2) << "an instruction changed place";
        expect_only_addresses_flags_and_counts_changed(orig[in.timestamp], in);
    }
    for (int n : seen) EXPECT_GE(n, 1) << "an instruction went missing";
    EXPECT_EQ(data_flow(orig, 0), data_flow(patched, 0)) << "a read now sees another producer";
    expect_reads_after_their_wait(patched, 0);
    std::set<std::uint16_t> flags;  // the write-back flags: the original's and the copies'
    for (const analysis::Edit& e : s.edits)
        if (e.in.op == Opcode::Dma) {
            flags.insert(e.in.flag);
            flags.insert(orig[e.index].flag);
        }
    EXPECT_EQ(flags.size(), analysis::kStoreCopies);
    EXPECT_EQ(expect_dma_orders_kept(orig, 0, flags), 0u);  // as generated: each wait waits for every write-back
    EXPECT_EQ(expect_dma_orders_kept(patched, 0, flags), analysis::kStoreCopies - 1)
        << "the waits before the stores should leave the write-backs of the last kStoreCopies - 1 blocks in flight";
    expect_new_buffers_in_free_vmem(orig, patched, 32ull << 20);  // configs/xpu.yaml: 32 MiB of VMEM
    return s;
}

// A llama2-7b decode layer of batch 8: the attention's QK^T blocks each wait for the previous
// block's write-back before their stores. (These tests keep 20 suggestions: the store side's
// variant competes with every kind for the list's 10 places, and forward_store takes one.)
TEST(DoubleBufferStore, DecodeLayerKeepsTheDataFlowAndEveryDmaOrder) {
    gen::TransformerParams p = decode_layer();
    p.batch = 8;
    p.seq = 512;
    check_double_buffer_store(analyzed(stamped(transformer_trace("decode-b8.bin", p)), {}, "configs/xpu.yaml", 20));
}

// The same on top of prefetch_ahead's plan (its loads moved up into buffers of their own): the
// store side's rule is checked on the program with the loads moved, so every DMA order holds
// in the patched program as a whole.
TEST(DoubleBufferStore, OnTopOfPrefetchAheadKeepsTheDataFlowAndEveryDmaOrder) {
    gen::TransformerParams p = decode_layer();
    p.batch = 8;
    p.seq = 512;
    const Analyzed r = analyzed(stamped(transformer_trace("decode-b8.bin", p)), {}, "configs/xpu.yaml", 20);
    auto it = std::find_if(r.a.suggestions.begin(), r.a.suggestions.end(),
                           [](const analysis::Suggestion& x) { return x.kind == "double_buffer_store" && !x.moves.empty(); });
    ASSERT_NE(it, r.a.suggestions.end()) << "no double_buffer_store suggestion with prefetch_ahead's loads";
    const std::vector<Instruction>& orig = r.data.streams[0].code;
    const std::vector<Instruction> patched = patched_stream(r, *it);
    std::vector<int> seen(orig.size(), 0);
    std::size_t moved = 0, added = 0;
    for (std::size_t p2 = 0; p2 < patched.size(); ++p2) {
        const Instruction& in = patched[p2];
        ASSERT_LT(in.timestamp, orig.size());
        if (seen[in.timestamp]++) {  // a wait on a new flag after the one it follows
            ++added;
            EXPECT_EQ(in.op, Opcode::SWait);
            continue;
        }
        moved += in.timestamp + added != p2;
        EXPECT_EQ(in.op, orig[in.timestamp].op);
    }
    for (int n : seen) EXPECT_GE(n, 1) << "an instruction went missing";
    EXPECT_GT(moved, 0u);
    EXPECT_GT(added, 0u);
    EXPECT_EQ(data_flow(orig, 0), data_flow(patched, 0)) << "a read now sees another producer";
    expect_reads_after_their_wait(patched, 0);
    expect_dma_orders_kept(patched, 0);
    expect_new_buffers_in_free_vmem(orig, patched, 32ull << 20);  // configs/xpu.yaml: 32 MiB of VMEM
}

// The key rule of store_rename.h: a wait may leave a write-back in flight only while nothing
// before the next wait conflicts with it. Without it (each wait on its copy's flag alone, the
// waits on the other copies' flags dropped), the last write-backs of an op are still in flight
// when the next op reads what they wrote, and the order check says so.
TEST(DoubleBufferStore, TheOrderCheckCatchesWritebacksLeftInFlight) {
    gen::TransformerParams p = decode_layer();
    p.batch = 8;
    p.seq = 512;
    const Analyzed r = analyzed(stamped(transformer_trace("decode-b8.bin", p)), {}, "configs/xpu.yaml", 20);
    analysis::Suggestion s = check_double_buffer_store(r);
    std::size_t dropped = 0;
    for (analysis::Edit& e : s.edits) {
        dropped += e.then.size();
        e.then.clear();
    }
    ASSERT_GT(dropped, 0u) << "some waits must wait for every copy";
    const std::string out = temp_path("broken.bin");
    analysis::write_patched_trace(r.data, s, out);
    EXPECT_NONFATAL_FAILURE(expect_dma_orders_kept(read_stream(out, 0), 0), "before a wait covers it");
}

// The estimate is bounded: at most the time the waits it serves stalled, at most the run's
// headroom over its lower bound.
TEST(DoubleBufferStore, EstimateAtMostTheStallsItRemovesAndTheHeadroom) {
    gen::TransformerParams p = decode_layer();
    p.batch = 8;
    p.seq = 512;
    const Analyzed r = analyzed(stamped(transformer_trace("decode-b8.bin", p)), {}, "configs/xpu.yaml", 20);
    const analysis::Suggestion& s = check_double_buffer_store(r);
    const analysis::Stream& st = r.data.streams[0];
    std::set<std::uint16_t> flags;  // the write-backs' flags in the patch, the original's and the copies'
    for (const analysis::Edit& e : s.edits)
        if (e.in.op == Opcode::Dma) flags.insert(st.code[e.index].flag);
    ASSERT_FALSE(flags.empty());
    Tick stalls = 0;
    for (std::size_t i = 0; i < st.code.size(); ++i)
        if (st.code[i].op == Opcode::SWait && flags.count(st.code[i].flag) && st.life[i].seen) stalls += st.life[i].issue - st.life[i].ready;
    EXPECT_GT(stalls, 0u);
    EXPECT_LE(s.estimated_saving, stalls);
    EXPECT_LE(s.estimated_saving, r.a.bounds.headroom);
    std::printf("double_buffer_store: estimated %.1f ns of %.1f ns stalled on the write-back flag, headroom %.1f ns\n",
                s.estimated_saving / 1000.0, stalls / 1000.0, r.a.bounds.headroom / 1000.0);
}

// For each DMA of a single-stream program: the first swait that waits for it (flags counted by
// their increments, `ge`/`gt` waits), restated here from docs/trace-format.md; none: SIZE_MAX.
// prefetch_ahead (analysis/suggest/prefetch_plan.h) on generated traces: the patched program is
// the original's instructions (by timestamp; each wait followed by at most one more on a new
// flag), only VMEM addresses, flags and wait counts rewritten; every read sees the producer it
// saw before, after a wait covering it; the new buffers lie above what the original used.
void check_prefetch_ahead(const Analyzed& r) {
    auto it = std::find_if(r.a.suggestions.begin(), r.a.suggestions.end(), [](const analysis::Suggestion& x) { return x.kind == "prefetch_ahead"; });
    ASSERT_NE(it, r.a.suggestions.end()) << "no prefetch_ahead suggestion";
    const analysis::Suggestion& s = *it;
    EXPECT_GT(s.estimated_saving, 0u);
    EXPECT_FALSE(s.moves.empty());
    const std::vector<Instruction>& orig = r.data.streams[0].code;
    const std::vector<Instruction> patched = patched_stream(r, s);
    std::vector<int> seen(orig.size(), 0);
    std::size_t added = 0, moved = 0;
    for (std::size_t p2 = 0; p2 < patched.size(); ++p2) {
        const Instruction& in = patched[p2];
        ASSERT_LT(in.timestamp, orig.size());
        if (seen[in.timestamp]++) {  // the wait on a moved load's new flag, after its first wait
            ++added;
            EXPECT_EQ(in.op, Opcode::SWait);
            EXPECT_EQ(orig[in.timestamp].op, Opcode::SWait);
            continue;
        }
        if (in.timestamp + added != p2) ++moved;
        expect_only_addresses_flags_and_counts_changed(orig[in.timestamp], in);
    }
    for (int n : seen) EXPECT_GE(n, 1) << "an instruction went missing";
    EXPECT_GT(added, 0u);
    EXPECT_GT(moved, 0u);
    EXPECT_EQ(data_flow(orig, 0), data_flow(patched, 0)) << "a read now sees another producer";
    expect_reads_after_their_wait(patched, 0);
    expect_new_buffers_in_free_vmem(orig, patched, 32ull << 20);  // configs/xpu.yaml: 32 MiB of VMEM
}

TEST(PrefetchAhead, SingleBufferedGemmKeepsTheDataFlowAndTheWaits) {
    gen::GemmParams p = two_blocks(1024);
    p.double_buffer = false;
    check_prefetch_ahead(analyzed(stamped(gemm_trace("single.bin", p).path)));
}

TEST(PrefetchAhead, DecodeLayerAcrossOpsKeepsTheDataFlowAndTheWaits) {
    check_prefetch_ahead(analyzed(stamped(transformer_trace("decode.bin", decode_layer()))));
}

// The next op's loads under this op's compute: in a llama2-13b decode layer at batch 8, seq
// 1024, once prefetch_ahead has moved the K tiles of the QK^T phase into its own idle HBM time
// (a first round), that phase is compute-bound and leaves the HBM idle while the V tiles of the
// AV phase after it wait to be loaded. Each AV step's probabilities (from the softmax) cannot
// be loaded before the softmax wrote them; a plan that let such a load claim HBM time right
// where it stands skipped all the idle time before it, and no V tile moved above the QK^T phase
// (so it was before the placement's skip rule). In the second round V tiles move into the QK^T
// phase's code, the data flow and the waits are kept (check_prefetch_ahead), and the loads'
// waits take only as many new flags as the deepest load needs, each counting every load issued
// on its flag so far.
TEST(PrefetchAhead, NextOpsLoadsGoUnderThisOpsCompute) {
    gen::TransformerParams p = decode_layer();
    EXPECT_TRUE(gen::model_preset("llama2-13b", p.model));
    p.batch = 8;
    p.seq = 1024;
    const Analyzed first = analyzed(stamped(transformer_trace("decode-13b-b8.bin", p)));
    const analysis::Suggestion* once = first_of_kind(first, "prefetch_ahead");
    ASSERT_NE(once, nullptr);
    const std::string round1 = temp_path("round-1.bin");
    analysis::write_patched_trace(first.data, *once, round1);
    // One SystemC simulation per process: the first round's trace runs in sim_main.
    const std::string dir = temp_path("round-1-out");
    const std::string cmd = std::string(XPU_BINARY_DIR) + "/platform/sim_main --platform " + source_path("configs/xpu.yaml") +
                            " --trace " + stamped(round1) + " --out " + dir + " -q --no-analysis";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    Analyzed r;
    r.data = analysis::load_run(dir);
    r.a = analysis::analyze(r.data);
    check_prefetch_ahead(r);
    const analysis::Suggestion& s = *first_of_kind(r, "prefetch_ahead");
    const std::vector<Instruction>& code = r.data.streams[0].code;
    auto ann = [&](std::uint64_t j) { return r.data.annotation(code[j]); };
    std::uint64_t last_qk = 0;  // the QK^T phase's last instruction
    for (std::uint64_t j = 0; j < code.size(); ++j)
        if (ann(j).find("attn/qk_matmul/") != std::string::npos) last_qk = j;
    ASSERT_GT(last_qk, 0u);
    std::size_t v_under_qk = 0;
    for (const analysis::Move& m : s.moves)
        if (ann(m.from).find("attn/av_matmul/load_b") != std::string::npos && m.before <= last_qk) ++v_under_qk;
    EXPECT_GT(v_under_qk, 0u) << "no V tile of the AV phase moved under the QK^T phase";
    // The new flags, in both rounds: each wait on one counts every load issued on it so far (its
    // ordinal's flag comes round again only after its loads' waits), and they are fewer than the
    // kMaxFlags (256) the placement may use: as many as the deepest load needs (the first round
    // takes all 256 when every wait served has a flag of its own in turn).
    auto check_new_flags = [&](const Analyzed& run, const analysis::Suggestion& sg, const char* round) {
        const std::vector<Instruction> patched = patched_stream(run, sg);
        std::set<std::uint16_t> old_flags, new_flags;
        for (const Instruction& in : run.data.streams[0].code)
            if (in.has(kFlag)) old_flags.insert(in.flag);
        for (const Instruction& in : patched)
            if (in.has(kFlag) && !old_flags.count(in.flag)) new_flags.insert(in.flag);
        ASSERT_FALSE(new_flags.empty()) << round;
        EXPECT_LT(new_flags.size(), 256u) << round << ": as many new flags as the placement allowed, not as the loads needed";
        for (std::uint16_t f : new_flags) {
            std::int64_t issued = 0;
            for (const Instruction& in : patched) {
                if (in.op == Opcode::Dma && in.flag == f) ++issued;
                if (in.op == Opcode::SWait && in.flag == f) {
                    EXPECT_EQ(in.value, issued) << round << ": a wait on new flag " << f << " does not count every load issued on it";
                }
            }
        }
    };
    check_new_flags(first, *once, "round 1");
    check_new_flags(r, s, "round 2");
}

// Loads under a collective's steps: in a tensor-parallel decode layer (llama2-7b, 8 chips on a
// ring), the attention's all-reduce is 14 steps of a send and a wait for the previous chip's piece
// (~0.8 us each, the link's latency), and the HBM idles while the core waits in them. A load
// placed before one of those waits issues when the core reaches the wait, right after the send,
// not when the wait is satisfied; the plan took the latter (a wait's issue time in the log is
// when it passes), so every MLP load placed in a step seemed to land after the next send went
// out, was pushed below it as a write-back's rival (store_floor), and none stayed inside the
// all-reduce. The reference: the replay (the patched trace simulated on the same platform runs
// faster), and the legality checks every prefetch_ahead test makes, on each chip's stream.
// And the loads whose claims on the HBM begin while the core waits in one step (for another
// chip's piece) all go to that step: a step lasts ~0.8 us, in which the HBM moves ~7 of the MLP's
// 128 KiB tiles at its peak. The plan took the first place issuing at or after a claim's start:
// the place below the wait, so each step took one load and the next claims went to the next
// steps (one tile per step, the HBM at ~15% of its peak under the all-reduce). Replayed, on a
// 2-layer TP-4 decode on a 4-chip ring: prefetch_ahead 6.2 -> 10.7 us saved; on the 32-layer one
// 113.6 -> 214.0 us (scripts/bench_suggestions.sh).
TEST(PrefetchAhead, LoadsIssueWhileTheCoreWaitsInACollectivesSteps) {
    const Analyzed r = analyzed_tp8_decode("decode-tp8.bin");
    const analysis::Suggestion* s = first_of_kind(r, "prefetch_ahead");
    ASSERT_NE(s, nullptr);
    for (std::uint32_t chip = 0; chip < 8; ++chip) {
        const std::vector<Instruction>& code = r.data.streams[chip].code;
        auto ann = [&](std::uint64_t j) { return r.data.annotation(code[j]); };
        std::uint64_t first_ar = code.size(), last_ar = 0;  // the attention's all-reduce
        for (std::uint64_t j = 0; j < code.size(); ++j)
            if (ann(j).find("attn/all_reduce/") != std::string::npos) {
                first_ar = std::min(first_ar, j);
                last_ar = j;
            }
        ASSERT_LT(first_ar, last_ar) << "chip " << chip;
        std::size_t inside = 0;
        std::map<std::uint64_t, std::size_t> at_wait;  // loads placed before each wait of the all-reduce
        for (const analysis::Move& m : s->moves) {
            if (m.stream != chip || ann(m.from).find("mlp/") == std::string::npos) continue;
            if (m.before <= first_ar || m.before > last_ar) continue;
            ++inside;
            ++at_wait[m.before];
            // Right after a send, before the wait for the previous chip's piece: issued while the
            // core waits there.
            EXPECT_EQ(code[m.before].op, Opcode::SWait) << "chip " << chip << ": a load placed inside a step, not at its wait";
            EXPECT_EQ(code[m.before - 1].op, Opcode::Dma);
        }
        EXPECT_GT(inside, 0u) << "chip " << chip << ": no MLP load goes under the attention's all-reduce";
        std::size_t most = 0;
        for (const auto& [w, n] : at_wait) most = std::max(most, n);
        EXPECT_GE(most, 2u) << "chip " << chip << ": one MLP load per step of the all-reduce, the HBM idle for the rest of it";
    }
    // Measured: the patched trace on the same platform (one SystemC simulation per process: sim_main).
    const std::string patched = temp_path("decode-tp8-patched.bin");
    analysis::write_patched_trace(r.data, *s, patched);
    const std::string dir = temp_path("decode-tp8-patched-out");
    ASSERT_TRUE(sim_main_on_ring8(stamped(patched), dir, "--no-analysis"));
    const Tick after = analysis::analyze(analysis::load_run(dir)).end;
    std::printf("run %.3f us, patched %.3f us, estimated saving %.3f us\n", r.a.end / 1e6, after / 1e6, s->estimated_saving / 1e6);
    EXPECT_LT(after, r.a.end) << "the loads moved under the collective made the run slower";
}

std::map<std::uint64_t, std::uint64_t> first_wait_for(const std::vector<Instruction>& code) {
    std::map<std::uint64_t, std::uint64_t> need;
    std::map<std::uint16_t, std::vector<std::pair<std::int64_t, std::uint64_t>>> pending;  // flag -> (count once landed, DMA)
    std::map<std::uint16_t, std::int64_t> issued;
    for (std::uint64_t i = 0; i < code.size(); ++i) {
        const Instruction& in = code[i];
        if (in.op == Opcode::Dma && in.has(kFlag)) {
            issued[in.flag] += in.has(kValue) ? in.value : 1;
            pending[in.flag].push_back({issued[in.flag], in.timestamp});
        } else if (in.op == Opcode::SWait) {
            const std::int64_t v = in.cond == Cond::Gt ? in.value + 1 : in.value;
            auto& q = pending[in.flag];
            for (auto it = q.begin(); it != q.end();)
                if (it->first <= v) {
                    need.emplace(it->second, i);
                    it = q.erase(it);
                } else {
                    ++it;
                }
        }
    }
    return need;
}

// No moved DMA passes a DMA that is needed strictly sooner (by its first wait in the original).
void expect_need_order(const std::vector<Instruction>& orig, const std::vector<Instruction>& patched) {
    const auto need = first_wait_for(orig);
    auto when = [&](std::uint64_t t) {
        auto it = need.find(t);
        return it == need.end() ? SIZE_MAX : it->second;
    };
    std::size_t moved = 0;
    for (std::size_t p = 0; p < patched.size(); ++p) {
        const Instruction& m = patched[p];
        if (m.op != Opcode::Dma || m.timestamp <= p || when(m.timestamp) == SIZE_MAX) continue;
        ++moved;
        for (std::size_t q = p + 1; q < patched.size(); ++q) {  // what now comes after it but came before
            const Instruction& x = patched[q];
            if (x.op == Opcode::Dma && x.timestamp < m.timestamp && when(x.timestamp) < when(m.timestamp)) {
                ADD_FAILURE() << "DMA #" << m.timestamp << " (needed at #" << when(m.timestamp) << ") moved above DMA #"
                              << x.timestamp << ", needed sooner (at #" << when(x.timestamp) << ")";
                return;
            }
        }
    }
    EXPECT_GT(moved, 0u);
}

// The planted --late-dma on a GEMM of one step per block row (1000 rows, a K of 1000): the top
// hoist_dma prefetches the weight tiles but keeps them behind the loads needed sooner; moving
// each to its earliest legal point put later steps' loads ahead of the first step's.
TEST(HoistDma, HoistedDmasStayInTheOrderTheyAreNeeded) {
    gen::GemmParams p;
    p.m = p.n = p.k = 1000;
    p.late_dma = true;
    const Analyzed r = analyzed(stamped(gemm_trace("late.bin", p).path));
    const analysis::Suggestion* s = first_of_kind(r, "hoist_dma");
    ASSERT_NE(s, nullptr);
    expect_need_order(r.data.streams[0].code, patched_stream(r, *s));
    // The check catches the order it forbids: the same suggestion with its DMAs at the top.
    analysis::Suggestion top = *s;
    for (auto& m : top.moves) m.before = 0;
    EXPECT_NONFATAL_FAILURE(expect_need_order(r.data.streams[0].code, patched_stream(r, top)), "needed sooner");
}

// No swait waits for a DMA issued after it in program order: at each wait, the increments of
// the DMAs on its flag issued so far reach its count (flags counted by increments, `gt v` as
// `ge v + 1`). A wait raised above one of its DMAs would never pass: the in-order core never
// reaches the DMA. (expect_reads_after_their_wait does not see it: it takes a wait as covering.)
void expect_no_wait_before_its_dmas(const std::vector<Instruction>& code) {
    std::map<std::uint16_t, std::int64_t> issued;
    for (const Instruction& in : code) {
        if (in.op == Opcode::Dma && in.has(kFlag)) issued[in.flag] += in.has(kValue) ? in.value : 1;
        if (in.op == Opcode::SWait) {
            const std::int64_t need = in.cond == Cond::Gt ? in.value + 1 : in.value;
            if (issued[in.flag] < need) {
                ADD_FAILURE() << trace::format_instruction(in) << " (#" << in.timestamp << ") waits for DMAs issued after it";
                return;
            }
        }
    }
}

// hoist_wait (analysis/suggest/raise_waits.h) on the planted --late-dma GEMM, whose waits and
// weight loads the plant moved next to their use: the variant of the hoist that moves them back
// up. The patched program is the original's instructions (by timestamp); every read sees the
// producer it saw before, after a wait covering it; no wait comes before a DMA it waits for;
// and waits did move up, each with the loads after it.
TEST(HoistWait, PlantedLateDmaKeepsTheDataFlowAndNoWaitPassesItsDmas) {
    gen::GemmParams p;
    p.m = 1024;
    p.n = 2048;
    p.k = 1024;
    p.late_dma = true;
    const Analyzed r = analyzed(stamped(gemm_trace("late.bin", p).path));
    const analysis::Suggestion* s = first_of_kind(r, "hoist_wait");
    ASSERT_NE(s, nullptr) << "no hoist_wait suggestion";
    EXPECT_TRUE(s->variant);
    EXPECT_GT(s->estimated_saving, 0u);
    EXPECT_LE(s->estimated_saving, r.a.bounds.headroom);
    const std::vector<Instruction>& orig = r.data.streams[0].code;
    std::size_t raised = 0;
    for (const analysis::Move& m : s->moves) raised += orig[m.from].op == Opcode::SWait;
    EXPECT_GT(raised, 0u) << "no wait moved";
    const std::vector<Instruction> patched = patched_stream(r, *s);
    ASSERT_EQ(patched.size(), orig.size());
    std::size_t up = 0;  // waits now earlier than they were
    for (std::size_t i = 0; i < patched.size(); ++i) {
        ASSERT_LT(patched[i].timestamp, orig.size());
        EXPECT_EQ(patched[i].op, orig[patched[i].timestamp].op);
        up += patched[i].op == Opcode::SWait && i < patched[i].timestamp;
    }
    EXPECT_GT(up, 0u);
    EXPECT_EQ(data_flow(orig, 0), data_flow(patched, 0)) << "a read now sees another producer";
    expect_reads_after_their_wait(patched, 0);
    expect_no_wait_before_its_dmas(orig);
    expect_no_wait_before_its_dmas(patched);
    // The check catches what it forbids: the same suggestion with its waits at the top.
    analysis::Suggestion top = *s;
    for (auto& m : top.moves)
        if (orig[m.from].op == Opcode::SWait) m.before = 0;
    EXPECT_NONFATAL_FAILURE(expect_no_wait_before_its_dmas(patched_stream(r, top)), "waits for DMAs issued after it");
}

// With too little VMEM for the buffer copies there is no double_buffer suggestion.
// The room transformations put new buffers in is the largest VMEM range nothing touches, not
// only what lies above the highest byte used: a trace that an earlier round gave buffers at the
// top of the VMEM (double_buffer_store's copies on top of prefetch_ahead go there) still has the
// free VMEM below them. Checked on a decode layer against an independent reference (the
// program's VMEM ranges merged, the gaps between them and above them), then with its last
// write-back's staging buffer moved to the VMEM's last bytes: the room is below it, and
// prefetch_ahead still plans its loads there (before: no room, no suggestion).
TEST(DoubleBuffer, RoomIsTheLargestVmemRangeNothingTouches) {
    const Analyzed r = analyzed(stamped(transformer_trace("decode.bin", decode_layer())));
    constexpr std::uint64_t kCapacity = 32ull << 20;  // configs/xpu.yaml
    auto largest_gap = [&](const std::vector<Instruction>& code) {
        std::uint64_t best = 0, from = 0;
        for (const auto& [lo, hi] : vmem_touched(code)) {
            best = std::max(best, lo > from ? lo - from : 0);
            from = hi;
        }
        return std::max(best, kCapacity > from ? kCapacity - from : 0);
    };
    auto check_room = [&](const analysis::RunData& run) {
        analysis::Context cx(run);
        analysis::Planner plan(cx);
        const analysis::BufferRenamer::Room room = analysis::BufferRenamer(run, plan).room(0);
        const std::vector<Instruction>& code = run.streams[0].code;
        EXPECT_LT(room.free_lo, room.free_hi);
        EXPECT_LE(room.free_hi, kCapacity);
        for (const auto& [lo, hi] : vmem_touched(code))
            EXPECT_TRUE(hi <= room.free_lo || lo >= room.free_hi) << "the room [" << room.free_lo << ", " << room.free_hi
                                                                << ") meets VMEM the program uses [" << lo << ", " << hi << ")";
        // Whole 4 KiB granules inside a gap (one at each end may be partly used).
        EXPECT_GE(room.free_hi - room.free_lo + 2 * 4096, largest_gap(code)) << "a larger free range was left out";
        return room;
    };
    const analysis::BufferRenamer::Room plain = check_room(r.data);
    analysis::RunData moved = r.data;
    std::vector<Instruction>& code = moved.streams[0].code;
    std::uint64_t last_store = 0;
    for (std::uint64_t j = 0; j < code.size(); ++j)
        if (code[j].op == Opcode::VStore) last_store = j;
    ASSERT_GT(last_store, 0u);
    const std::uint64_t staging = code[last_store].mem_dst.addr;
    for (Instruction& in : code) {  // its staging buffer's every access, to the VMEM's last bytes
        if ((in.op == Opcode::VStore || in.op == Opcode::Dma) && in.mem_dst.space == Space::Vmem && in.mem_dst.addr == staging)
            in.mem_dst.addr = kCapacity - in.bytes;
        if ((in.op == Opcode::VLoad || in.op == Opcode::Dma) && in.mem_src.space == Space::Vmem && in.mem_src.addr == staging)
            in.mem_src.addr = kCapacity - in.bytes;
    }
    ASSERT_EQ(vmem_top(code), kCapacity);
    const analysis::BufferRenamer::Room below = check_room(moved);
    EXPECT_LT(below.free_hi, kCapacity);
    EXPECT_GE(below.free_hi - below.free_lo, plain.free_hi - plain.free_lo - (1u << 20)) << "most of the free VMEM is still there";
    const analysis::Analysis a = analysis::analyze(moved);
    auto it = std::find_if(a.suggestions.begin(), a.suggestions.end(), [](const analysis::Suggestion& x) { return x.kind == "prefetch_ahead"; });
    ASSERT_NE(it, a.suggestions.end()) << "no prefetch_ahead below a buffer at the VMEM's top";
    for (const analysis::Edit& e : it->edits)
        if (e.in.op == Opcode::Dma && e.in.mem_dst.space == Space::Vmem && e.in.mem_dst.addr != code[e.index].mem_dst.addr) {
            EXPECT_GE(e.in.mem_dst.addr, below.free_lo);
            EXPECT_LE(e.in.mem_dst.addr + e.in.bytes, below.free_hi);
        }
}

// A chip of two cores, each with a VMEM of its own (configs/xpu-2chip-2core.yaml), running one
// stream (a tensor-parallel decode puts one per chip): the room to rename into is found in the
// VMEM that stream's vmem: operands address (the log header's vmem_of_core.K line names it), as
// on a chip of one VMEM; the other core's VMEM is left alone. Before, any chip of several VMEMs
// had no room: prefetch_ahead, double_buffer and double_buffer_store found nothing on such a
// platform (a llama2-7b TP-2 decode on xpu-2chip-2core: 29% of its headroom recovered in four
// rounds, 43% with them). Streams on both cores, or a header that does not say which VMEM
// a core addresses: no room, as before.
TEST(DoubleBuffer, RoomOnAChipOfTwoVmemsIsInTheOneItsStreamAddresses) {
    const Analyzed r = analyzed(stamped(transformer_trace("decode.bin", decode_layer())));
    const analysis::Unit* vmem = nullptr;
    for (const analysis::Unit& u : r.data.units)
        if (u.role == Role::Vmem && u.chip == 0) vmem = &u;
    ASSERT_NE(vmem, nullptr);
    const std::string path = vmem->path;  // xpu.chip0.core0.vmem
    ASSERT_NE(path.find("core0.vmem"), std::string::npos) << path;
    auto room_of = [](const analysis::RunData& run) {
        analysis::Context cx(run);
        analysis::Planner plan(cx);
        return analysis::BufferRenamer(run, plan).room(0);
    };
    const analysis::BufferRenamer::Room one = room_of(r.data);
    ASSERT_LT(one.free_lo, one.free_hi);
    analysis::RunData two = r.data;
    analysis::Unit other = *vmem;
    other.path.replace(other.path.find("core0.vmem"), 10, "core1.vmem");
    other.capacity = 16u << 20;
    two.units.push_back(other);
    EXPECT_EQ(room_of(two).free_hi, 0u) << "two VMEMs, the header naming neither: no room";
    // What the log reader makes of the header's vmem_of_core.0 core0.vmem, vmem_of_core.1 core1.vmem.
    two.vmem_paths = {"core0.vmem", "core1.vmem"};
    two.streams[0].vmem = 0;
    const analysis::BufferRenamer::Room theirs = room_of(two);
    EXPECT_EQ(theirs.free_lo, one.free_lo) << "the room of core 0's VMEM, as alone";
    EXPECT_EQ(theirs.free_hi, one.free_hi);
    EXPECT_TRUE(theirs.one_stream);
    const analysis::Analysis a = analysis::analyze(two);
    EXPECT_TRUE(std::any_of(a.suggestions.begin(), a.suggestions.end(), [](const analysis::Suggestion& x) { return x.kind == "prefetch_ahead"; }))
        << "prefetch_ahead plans into it";
    // A second stream, on core 1: the chip's streams address two VMEMs.
    analysis::RunData both = two;
    both.streams.push_back(both.streams[0]);
    both.streams.back().core = 1;
    both.streams.back().vmem = 1;
    EXPECT_EQ(room_of(both).free_hi, 0u) << "streams on both cores: no room";
}

TEST(DoubleBuffer, NotSuggestedWithoutVmemHeadroom) {
    gen::GemmParams p = two_blocks(1024);
    p.double_buffer = false;
    const std::string trace = gemm_trace("single.bin", p).path;
    const std::uint64_t top = vmem_top(read_stream(trace, 0));
    const Analyzed r = analyzed(trace, {"chip.modules.core0.vmem.capacity=" + std::to_string(top + 4096)});
    for (const auto& s : r.a.suggestions) EXPECT_NE(s.kind, "double_buffer") << s.action;
}

// A what-if platform whose DMA engines are a quarter of the HBM's bandwidth: the decode layer's
// weight tiles are engine-bound, and the suggestion splits them over the four engines.
TEST(SplitDma, PiecesKeepTheDataFlowAndTheWaits) {
    gen::TransformerParams p = decode_layer();
    std::vector<std::string> slow;
    for (int e = 0; e < 4; ++e) slow.push_back("chip.modules.dma" + std::to_string(e) + ".bandwidth_gbps=300");
    const Analyzed r = analyzed(stamped(transformer_trace("decode.bin", p)), slow);
    const analysis::Suggestion* s = first_of_kind(r, "split_dma");
    ASSERT_NE(s, nullptr) << "no split_dma suggestion";
    EXPECT_GT(s->estimated_saving, 0u);
    const std::vector<Instruction>& orig = r.data.streams[0].code;
    const std::vector<Instruction> patched = patched_stream(r, *s);
    // Each split DMA's pieces: contiguous, on distinct engines, its bytes in all.
    std::map<std::uint64_t, std::vector<Instruction>> by_ts;
    for (const Instruction& in : patched) by_ts[in.timestamp].push_back(in);
    ASSERT_EQ(by_ts.size(), orig.size());
    std::size_t split = 0;
    for (const auto& [ts, v] : by_ts) {
        if (v.size() == 1) continue;
        ++split;
        const Instruction& o = orig[ts];
        ASSERT_EQ(o.op, Opcode::Dma);
        std::uint64_t bytes = 0;
        std::set<unsigned> units;
        for (const Instruction& piece : v) {
            EXPECT_EQ(piece.mem_src.addr, o.mem_src.addr + bytes);
            EXPECT_EQ(piece.mem_dst.addr, o.mem_dst.addr + bytes);
            EXPECT_EQ(piece.flag, o.flag);
            bytes += piece.bytes;
            units.insert(piece.unit);
        }
        EXPECT_EQ(bytes, o.bytes);
        EXPECT_EQ(units.size(), v.size()) << "two pieces on one engine";
    }
    EXPECT_GT(split, 0u);
    EXPECT_EQ(data_flow(orig, 0), data_flow(patched, 0)) << "a read now sees another producer";
    expect_reads_after_their_wait(orig, 0);
    expect_reads_after_their_wait(patched, 0);
}

// On configs/xpu.yaml one engine reaches the HBM's peak alone: nothing to split.
TEST(SplitDma, NotSuggestedWhenOneEngineFillsTheHbm) {
    gen::TransformerParams p = decode_layer();
    const Analyzed r = analyzed(transformer_trace("decode.bin", p));
    for (const auto& s : r.a.suggestions) EXPECT_NE(s.kind, "split_dma") << s.action;
}

// Per swait of `code` on one of `flags` (by timestamp): the DMAs on those flags issued before
// it (by timestamp: a split DMA's pieces share the DMA's). Checks that each such swait waits for
// all of them: `ge` the sum of the increments issued on its flag before it (the flags are
// counted that way, FlagCounting::waits_for_all).
std::map<std::uint64_t, std::set<std::uint64_t>> waited_dmas(const std::vector<Instruction>& code, const std::set<std::uint16_t>& flags) {
    std::map<std::uint64_t, std::set<std::uint64_t>> out;
    std::map<std::uint16_t, std::int64_t> issued;
    std::map<std::uint16_t, std::set<std::uint64_t>> dmas;
    for (const Instruction& in : code) {
        if (!in.has(kFlag) || !flags.count(in.flag)) continue;
        if (in.op == Opcode::Dma) {
            issued[in.flag] += in.has(kValue) ? in.value : 1;
            dmas[in.flag].insert(in.timestamp);
        } else if (in.op == Opcode::SWait) {
            EXPECT_EQ(in.cond, Cond::Ge) << trace::format_instruction(in);
            EXPECT_EQ(in.value, issued[in.flag]) << trace::format_instruction(in) << ": does not wait for every DMA issued on its flag";
            out[in.timestamp].insert(dmas[in.flag].begin(), dmas[in.flag].end());
        }
    }
    return out;
}

// pipeline_store (analysis/suggest/pipeline_store.cpp) on a GEMM of two row blocks, each
// block's result stored whole after its epilogue: each split DMA becomes its bytes exactly, in
// contiguous pieces of at most 256 KiB on a flag the trace never names, each after the last
// write of its bytes (the data flow is the original's), some issued earlier than the DMA was;
// every wait on the DMAs' flag waits, in the patched program, for the same DMAs as before.
TEST(PipelineStore, PiecesFollowTheirWritersAndEveryWaitWaitsForWhatItDid) {
    const Analyzed r = analyzed(stamped(gemm_trace("gemm.bin", two_blocks(1024)).path));
    const analysis::Suggestion* s = first_of_kind(r, "pipeline_store");
    ASSERT_NE(s, nullptr) << "no pipeline_store suggestion";
    EXPECT_GT(s->estimated_saving, 0u);
    EXPECT_LE(s->estimated_saving, r.a.bounds.headroom);
    const std::string out = temp_path("patched.bin");
    const analysis::PatchCount n = analysis::write_patched_trace(r.data, *s, out);
    EXPECT_EQ(n.moved, 0u);
    EXPECT_GT(n.inserted, 0u);
    const std::vector<Instruction>& orig = r.data.streams[0].code;
    const std::vector<Instruction> patched = read_stream(out, 0);
    std::set<std::uint16_t> named;
    for (const Instruction& in : orig)
        if (in.has(kFlag)) named.insert(in.flag);
    std::map<std::uint64_t, std::vector<std::size_t>> at;  // timestamp -> positions in the patched program
    for (std::size_t i = 0; i < patched.size(); ++i) at[patched[i].timestamp].push_back(i);
    ASSERT_EQ(at.size(), orig.size());
    std::set<std::uint16_t> split_flags, piece_flags;
    std::size_t split = 0, earlier = 0;
    for (const auto& [ts, pos] : at) {
        const Instruction& o = orig[ts];
        if (o.op != Opcode::Dma || (pos.size() == 1 && patched[pos[0]].bytes == o.bytes)) continue;
        ++split;
        split_flags.insert(o.flag);
        std::uint64_t bytes = 0;
        for (std::size_t i : pos) {
            const Instruction& piece = patched[i];
            EXPECT_EQ(piece.mem_src.addr, o.mem_src.addr + bytes);
            EXPECT_EQ(piece.mem_dst.addr, o.mem_dst.addr + bytes);
            EXPECT_EQ(piece.unit, o.unit);
            EXPECT_LE(piece.bytes, 256u * 1024);
            EXPECT_FALSE(named.count(piece.flag)) << "a piece raises a flag the trace uses";
            piece_flags.insert(piece.flag);
            bytes += piece.bytes;
            // Issued earlier: an instruction that came before the DMA now comes after the piece.
            for (std::size_t j = i + 1; j < patched.size(); ++j)
                if (patched[j].timestamp < ts && !(patched[j].op == Opcode::Dma && at[patched[j].timestamp].size() > 1)) {
                    ++earlier;
                    break;
                }
        }
        EXPECT_EQ(bytes, o.bytes);
    }
    EXPECT_GT(split, 0u);
    EXPECT_GT(earlier, 0u) << "no piece is issued before the DMA was";
    EXPECT_EQ(data_flow(orig, 0), data_flow(patched, 0)) << "a piece reads bytes before their last write";
    std::set<std::uint16_t> both = split_flags;
    both.insert(piece_flags.begin(), piece_flags.end());
    const auto before = waited_dmas(orig, split_flags), after = waited_dmas(patched, both);
    EXPECT_FALSE(before.empty());
    EXPECT_EQ(before, after) << "a wait waits for other DMAs than it did";
    // The checks catch what they forbid: a piece issued before the last write of its bytes, and
    // the waits left on the DMA's flag alone.
    analysis::Suggestion early = *s;
    std::set<std::uint64_t> edited;
    for (const analysis::Edit& e : early.edits) edited.insert(e.index);
    for (analysis::Edit& e : early.edits)
        if (!e.then.empty() && e.then.back().op == Opcode::Dma && !edited.count(e.index / 2)) {
            e.index /= 2;  // before the epilogue that writes its bytes
            e.in = orig[e.index];
            break;
        }
    analysis::write_patched_trace(r.data, early, out);
    EXPECT_NE(data_flow(orig, 0), data_flow(read_stream(out, 0), 0));
    analysis::Suggestion unscaled = *s;
    unscaled.edits.erase(std::remove_if(unscaled.edits.begin(), unscaled.edits.end(),
                                        [&](const analysis::Edit& e) { return orig[e.index].op == Opcode::SWait; }),
                         unscaled.edits.end());
    analysis::write_patched_trace(r.data, unscaled, out);
    EXPECT_NONFATAL_FAILURE(waited_dmas(read_stream(out, 0), both), "does not wait for every DMA");
}

// Per swait (by timestamp), the DMAs on its flag issued before it in program order (by timestamp).
std::map<std::uint64_t, std::set<std::uint64_t>> dmas_before_waits(const std::vector<Instruction>& code) {
    std::map<std::uint64_t, std::set<std::uint64_t>> out;
    std::map<std::uint16_t, std::set<std::uint64_t>> issued;
    for (const Instruction& in : code) {
        if (in.op == Opcode::Dma && in.has(kFlag)) issued[in.flag].insert(in.timestamp);
        if (in.op == Opcode::SWait) out[in.timestamp] = issued[in.flag];
    }
    return out;
}

// defer_dma (analysis/suggest/defer_dma.cpp) on a 1000^3 GEMM, whose prologue issues the first
// step's tile loads together with the next steps' prefetches: the prefetches on engines the
// first loads do not use move to just after the first wait. Each moved DMA is one the wait does
// not wait for, placed right after that wait; nothing else moves; the data flow is the
// original's; every wait waits for the same DMAs as before (the deferred ones stay before their
// own waits). The checks catch a DMA deferred past its own wait.
TEST(DeferDma, PrefetchesMoveBehindTheFirstWaitAndEveryWaitWaitsForWhatItDid) {
    gen::GemmParams p;
    p.m = p.n = p.k = 1000;
    const Analyzed r = analyzed(stamped(gemm_trace("prologue.bin", p).path));
    const analysis::Suggestion* s = first_of_kind(r, "defer_dma");
    ASSERT_NE(s, nullptr) << "no defer_dma suggestion";
    EXPECT_GT(s->estimated_saving, 0u);
    EXPECT_LE(s->estimated_saving, r.a.bounds.headroom);
    EXPECT_TRUE(s->edits.empty());
    const std::vector<Instruction>& orig = r.data.streams[0].code;
    ASSERT_FALSE(s->moves.empty());
    for (const analysis::Move& m : s->moves) {
        EXPECT_EQ(orig[m.from].op, Opcode::Dma);
        ASSERT_GT(m.before, m.from + 1);
        EXPECT_EQ(orig[m.before - 1].op, Opcode::SWait) << "not placed right after a wait";
        EXPECT_NE(orig[m.before - 1].flag, orig[m.from].flag) << "deferred past a wait on its own flag";
    }
    const std::string out = temp_path("deferred.bin");
    const analysis::PatchCount n = analysis::write_patched_trace(r.data, *s, out);
    EXPECT_EQ(n.moved, s->moves.size());
    EXPECT_EQ(n.inserted, 0u);
    const std::vector<Instruction> patched = read_stream(out, 0);
    ASSERT_EQ(patched.size(), orig.size());
    EXPECT_EQ(data_flow(orig, 0), data_flow(patched, 0));
    EXPECT_EQ(dmas_before_waits(orig), dmas_before_waits(patched)) << "a wait waits for other DMAs than it did";
    // The check catches what it forbids: the first deferred DMA moved past its own first wait.
    analysis::Suggestion late = *s;
    std::uint64_t own = 0;
    for (std::uint64_t j = late.moves[0].before; j < orig.size() && !own; ++j)
        if (orig[j].op == Opcode::SWait && orig[j].flag == orig[late.moves[0].from].flag) own = j;
    ASSERT_GT(own, 0u);
    late.moves[0].before = own + 1;
    const std::string bad = temp_path("too-late.bin");
    analysis::write_patched_trace(r.data, late, bad);
    EXPECT_NE(dmas_before_waits(orig), dmas_before_waits(read_stream(bad, 0)));
}

TEST(Reorder, DecodeLayerEpiloguesAreListScheduledLegally) {
    gen::TransformerParams p = decode_layer();
    p.tiles.bad_order = true;
    const Analyzed r = analyzed(transformer_trace("bad.bin", p));
    check_reorder(r, "wait_data");
}

// reorder across the stream (analysis/suggest/stream_schedule.h): the suggestion, told from
// reorder's windows at waits by its action.
const analysis::Suggestion* across_the_stream(const Analyzed& r) {
    for (const analysis::Suggestion& x : r.a.suggestions)
        if (x.kind == "reorder" && x.action.rfind("reorder across the stream", 0) == 0) return &x;
    return nullptr;
}

// A patched trace, simulated in sim_main (one SystemC simulation per process), analysed again.
Analyzed replayed(const std::string& trace, const char* name) {
    const std::string dir = temp_path(name);
    const std::string cmd = std::string(XPU_BINARY_DIR) + "/platform/sim_main --platform " + source_path("configs/xpu.yaml") +
                            " --trace " + trace + " --out " + dir + " -q --no-analysis";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    Analyzed r;
    r.data = analysis::load_run(dir);
    r.a = analysis::analyze(r.data);
    return r;
}

// Known by construction: K rows, each a chain on a register of its own (an elementwise op, a
// transcendental, an elementwise op, of V vector registers each: each op waits for the one
// before it). In program order the in-order core waits on every link, so the rows run one
// after the other: K x (V + alu_latency + 4 V + trans_latency + V + alu_latency) cycles (the
// vector unit's rules, models/vector_unit.h: occupancy V cycles per vreg, result `latency`
// after). Interleaved, the transcendental pipeline is the bottleneck, and no order can run the
// rows faster than K x 4 V cycles, its occupancy (conservation: one pipeline, in order): the
// replayed patch lands within 10% of that bound plus the first row's lead-in and the last row's
// tail. The reference for the order: expect_legal_reorder.
TEST(Reorder, AcrossTheStreamRowChainsInterleaveToTheTranscendentalPipelinesBound) {
    constexpr unsigned K = 16, V = 8;
    const std::string t = write_trace("rows.bin", [](gen::Emitter& e) {
        e.annotate("rows");
        for (unsigned r = 0; r < K; ++r) {
            e.vop(Opcode::VAlu, 0, gen::vreg(r), gen::vreg(r), V * 1024);
            e.vop(Opcode::VTrans, 0, gen::vreg(r), gen::vreg(r), V * 1024);
            e.vop(Opcode::VAlu, 0, gen::vreg(r), gen::vreg(r), V * 1024);
        }
    });
    const Analyzed r = analyzed(t);
    const Tick cycle = cycle_of(*r.run);
    const Tick alu = V + 2, trans = 4 * V + 12;  // configs/xpu.yaml: alu_latency 2, trans 4 cycles/vreg, latency 12
    const double serial = static_cast<double>(K * (2 * alu + trans) * cycle);
    EXPECT_NEAR(static_cast<double>(r.a.end), serial, 0.1 * serial) << "the rows in program order: one after the other";
    const analysis::Suggestion* s = across_the_stream(r);
    ASSERT_NE(s, nullptr);
    const std::string patched = temp_path("rows-pipelined.bin");
    analysis::write_patched_trace(r.data, *s, patched);
    EXPECT_GT(expect_legal_reorder(r.data.streams[0].code, read_stream(patched, 0), 0), K);
    const Analyzed p = replayed(patched, "rows-out");
    const Tick bound = K * 4 * V * cycle;
    EXPECT_GE(p.a.end, bound) << "faster than the transcendental pipeline can take the rows";
    EXPECT_LE(static_cast<double>(p.a.end), 1.1 * static_cast<double>(bound + (alu + 12 + alu) * cycle));
    const Tick measured = r.a.end - p.a.end;
    EXPECT_LE(s->estimated_saving, r.a.end - bound) << "an estimate past the bound";
    EXPECT_NEAR(static_cast<double>(s->estimated_saving), static_cast<double>(measured), 0.1 * static_cast<double>(measured));
    std::printf("rows: %.1f ns in program order, %.1f ns pipelined (bound %.1f ns), estimated saving %.1f ns\n", r.a.end / 1000.0,
                p.a.end / 1000.0, bound / 1000.0, s->estimated_saving / 1000.0);
    // The fixed point: the pipelined rows are not proposed again.
    EXPECT_EQ(across_the_stream(p), nullptr);
}

// Independent ops, one register each: the core never waits on their results (the premise,
// checked: no data-dependency time), the transcendental pipeline is busy from the first to the
// last, and program order is already the best order: nothing is suggested (a model that found
// a gain here would be inventing one).
TEST(Reorder, AcrossTheStreamNothingWhereProgramOrderIsAlreadyTheBest) {
    const std::string t = write_trace("independent.bin", [](gen::Emitter& e) {
        e.annotate("independent");
        for (unsigned r = 0; r < 48; ++r) e.vop(Opcode::VTrans, 0, gen::vreg(r), gen::vreg(r), 8 * 1024);
    });
    const Analyzed r = analyzed(t);
    EXPECT_EQ(r.a.core_total[static_cast<std::size_t>(analysis::Cause::DataDep)], 0u);
    EXPECT_EQ(across_the_stream(r), nullptr);
}

// A small llama2-shaped prefill layer (hidden 512, 4 heads, 96 tokens): its norms, softmax,
// rope, SiLU and residual loops are row chains. The patched trace is a legal reorder (brute force
// over every pair of every window), the model replays each window's original order within 10% of
// the simulator (the simulator is the reference: the model restates its rules; reorder's windows,
// which start at a wait, land within 2%, but these are cut mid-loop, and two that start inside
// the QKV projection's matmuls replay 7.6% and 6.4% slow in the model), the replay is
// faster, by the estimate within 25%, the estimate is under the headroom, and the patched run
// does not propose the same again: the list scheduler is greedy and the patched run's timing is
// new, so another order of the same windows may come back, but as a remainder, estimated under
// 15% of the first's measured saving (5.5% here; tests/e2e/reorder_stream.sh: 7.4%, 4.4%).
TEST(Reorder, AcrossTheStreamPrefillLayerRowLoopsAreListScheduledLegally) {
    gen::TransformerParams p;
    p.model = {512, 4, 4, 1408, 1};
    p.decode = false;
    p.seq = 96;
    p.layers = 1;
    const Analyzed r = analyzed(transformer_trace("prefill-small.bin", p));
    const analysis::Suggestion* s = across_the_stream(r);
    ASSERT_NE(s, nullptr);
    EXPECT_NE(s->where.find("softmax"), std::string::npos) << s->where;
    const std::string patched = temp_path("prefill-pipelined.bin");
    analysis::write_patched_trace(r.data, *s, patched);
    EXPECT_GT(expect_legal_reorder(r.data.streams[0].code, read_stream(patched, 0), 0), 0u);
    const std::size_t windows = expect_windows_modelled(r, *s, 0.10);
    const Analyzed q = replayed(patched, "prefill-out");
    ASSERT_LT(q.a.end, r.a.end);
    const double measured = static_cast<double>(r.a.end - q.a.end);
    EXPECT_NEAR(static_cast<double>(s->estimated_saving), measured, 0.25 * measured);
    EXPECT_LE(s->estimated_saving, r.a.bounds.headroom);
    std::printf("prefill layer: %.1f -> %.1f us, estimated saving %.1f us, %zu windows\n", r.a.end / 1e6, q.a.end / 1e6,
                s->estimated_saving / 1e6, windows);
    if (const analysis::Suggestion* again = across_the_stream(q)) {
        EXPECT_LE(static_cast<double>(again->estimated_saving), 0.15 * measured) << again->cause;
    }
}

// The list scheduler finds the waits that order an access through an index (analysis/
// wait_index.h); the reference is the scan it replaced: every earlier wait of the window asked
// Planner::wait_blocks. Same set for every instruction with memory accesses of windows that
// start at every wait (as the reorder finder opens them) and at strided points, on a decode
// layer, a GEMM and an all-reduce split over 4 chips (remote raisers).
void expect_index_matches_scan(const analysis::RunData& run) {
    std::size_t compared = 0, blocked = 0;
    analysis::Context cx(run);
    analysis::Planner plan(cx);
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        const auto& code = run.streams[s].code;
        std::vector<std::uint64_t> starts;
        for (std::uint64_t i = 0; i < code.size(); ++i)
            if (code[i].op == Opcode::SWait || i % 997 == 0) starts.push_back(i);
        for (std::size_t x = 0; x < starts.size(); x += 3) {  // a third of them keeps the test short
            const std::uint64_t begin = starts[x], n = std::min<std::uint64_t>(code.size() - begin, 1500);
            std::vector<std::uint32_t> waits;
            for (std::uint32_t k = 0; k < n; ++k)
                if (code[begin + k].op == Opcode::SWait) waits.push_back(k);
            const analysis::WaitBlockIndex index(plan, s, begin, waits);
            for (std::uint32_t k = 0; k < n; ++k) {
                analysis::Access acc[2];
                const int na = analysis::accesses(code[begin + k], run.streams[s], acc);
                std::vector<std::uint32_t> want, got;
                for (std::uint32_t w : waits)
                    if (w < k && plan.wait_blocks(s, begin + w, acc, na)) want.push_back(w);
                index.blocking(acc, na, k, got);
                std::sort(got.begin(), got.end());
                got.erase(std::unique(got.begin(), got.end()), got.end());
                ASSERT_EQ(got, want) << "stream " << s << " window at " << begin << ", instruction " << begin + k;
                ++compared;
                blocked += want.size();
            }
        }
    }
    std::printf("%zu instructions compared, %zu (instruction, wait) orderings found\n", compared, blocked);
    EXPECT_GT(blocked, 100u);  // the trace does have waits that order accesses
}

// One simulation per process (SystemC): one test per trace.
TEST(Reorder, WaitIndexFindsWhatTheScanFindsOnADecodeLayer) {
    gen::TransformerParams p = decode_layer();
    p.tiles.bad_order = true;
    expect_index_matches_scan(analyzed(transformer_trace("idx-decode.bin", p)).data);
}

TEST(Reorder, WaitIndexFindsWhatTheScanFindsOnAGemm) {
    gen::GemmParams p = two_blocks(512);
    p.bad_order = true;
    expect_index_matches_scan(analyzed(gemm_trace("idx-gemm.bin", p).path).data);
}

TEST(Reorder, WaitIndexFindsWhatTheScanFindsOnFourChips) {
    gen::TransformerParams p = decode_layer();
    p.tp = 4;
    expect_index_matches_scan(analyzed(transformer_trace("idx-tp4.bin", p), {}, "configs/xpu-ring4.yaml").data);
}

// The list scheduler finds a window's memory dependencies by page, dropping an access from a
// page once a later write covers its part there (analysis/schedule.h: MemoryEdges::Pages); the
// reference is the graph with an edge for every conflicting pair (AllPairs). The schedule
// depends on the graph only through its transitive closure (when an instruction becomes ready,
// the longest path below it), so the two must give the same order and the same modelled finish
// on every window: windows at every swait (as the reorder finder opens them) and at strided
// points, on a decode layer, a GEMM and a GEMM whose tiles are not page-aligned.
void expect_pages_match_all_pairs(const analysis::RunData& run) {
    analysis::Context cx(run);
    analysis::Planner plan(cx);
    analysis::WindowScheduler pages(cx, plan), all_pairs(cx, plan, analysis::WindowScheduler::MemoryEdges::AllPairs);
    std::size_t windows = 0, moved = 0;
    for (std::uint32_t s = 0; s < run.streams.size(); ++s) {
        const auto& code = run.streams[s].code;
        std::vector<std::uint64_t> starts;
        for (std::uint64_t i = 0; i < code.size(); ++i)
            if (code[i].op == Opcode::SWait || i % 251 == 0) starts.push_back(i);
        const std::size_t stride = std::max<std::size_t>(1, starts.size() / 300);  // ~300 windows keep the test short
        for (std::size_t x = 0; x < starts.size(); x += stride) {
            const std::uint64_t begin = starts[x], end = std::min<std::uint64_t>(code.size(), begin + 1200);
            const analysis::WindowSchedule a = pages.schedule(s, begin, end), b = all_pairs.schedule(s, begin, end);
            ASSERT_EQ(a.order, b.order) << "stream " << s << " window " << begin << ".." << end;
            EXPECT_EQ(a.modelled_before, b.modelled_before);
            EXPECT_EQ(a.modelled_after, b.modelled_after);
            ++windows;
            for (std::size_t p = 0; p < a.order.size(); ++p) moved += a.order[p] != begin + p;
        }
    }
    std::printf("%zu windows compared, %zu instructions placed elsewhere than in program order\n", windows, moved);
    EXPECT_GT(windows, 10u);
    EXPECT_GT(moved, 100u);  // the windows do get reordered: the graphs are put to the test
}

TEST(Reorder, PagedDependenciesScheduleAsAllPairsOnADecodeLayer) {
    gen::TransformerParams p = decode_layer();
    p.tiles.bad_order = true;
    expect_pages_match_all_pairs(analyzed(transformer_trace("pages-decode.bin", p)).data);
}

TEST(Reorder, PagedDependenciesScheduleAsAllPairsOnAGemm) {
    gen::GemmParams p = two_blocks(512);
    p.bad_order = true;
    expect_pages_match_all_pairs(analyzed(gemm_trace("pages-gemm.bin", p).path).data);
}

TEST(Reorder, PagedDependenciesScheduleAsAllPairsOnAnOddGemm) {
    gen::GemmParams p;  // edge tiles: accesses that start and end inside pages
    p.m = 1000;
    p.n = 700;
    p.k = 300;
    p.bad_order = true;
    expect_pages_match_all_pairs(analyzed(gemm_trace("pages-odd.bin", p).path).data);
}

// The same rule on the graphs themselves, where the generated programs leave it little to do
// (their data also flows through registers and waits): a random program of loads, stores and
// DMAs over a few VMEM pages, at offsets and lengths that start and end inside pages, with
// waits on the DMAs' flag. The paged graph keeps only edges of the all-pairs one and has the
// same transitive closure (computed here by bitsets over each window).
std::vector<std::vector<std::uint64_t>> closure(const std::vector<std::vector<std::uint32_t>>& succ) {
    const std::size_t n = succ.size(), words = (n + 63) / 64;
    std::vector<std::vector<std::uint64_t>> reach(n, std::vector<std::uint64_t>(words, 0));
    for (std::size_t k = n; k-- > 0;)
        for (std::uint32_t j : succ[k]) {
            reach[k][j / 64] |= std::uint64_t{1} << (j % 64);
            for (std::size_t w = 0; w < words; ++w) reach[k][w] |= reach[j][w];
        }
    return reach;
}

TEST(Reorder, PagedDependenciesKeepTheClosureOfAllPairsOnRandomAccesses) {
    std::mt19937_64 rng(14);
    auto pick = [&](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
    const std::uint64_t sizes[] = {1, 16, 100, 512, 2048, 4096, 5000, 8192, 12288};
    std::ostringstream x;
    x << ".xtr 1.0\n.stream chip=0 core=0\n";
    unsigned dmas = 0;
    for (int i = 0; i < 3000; ++i) {
        const std::uint64_t addr = pick(6 * 4096), bytes = sizes[pick(9)];
        switch (pick(8)) {
            case 0: case 1: case 2: x << "vld d=v" << pick(16) << " src=vmem:0x" << std::hex << addr << std::dec << " bytes=" << bytes << "\n"; break;
            case 3: case 4: x << "vst s0=v" << pick(16) << " dst=vmem:0x" << std::hex << addr << std::dec << " bytes=" << bytes << "\n"; break;
            case 5: x << "dma src=hbm:0x" << std::hex << pick(1 << 20) << " dst=vmem:0x" << addr << std::dec << " bytes=" << bytes << " flag=1\n"; ++dmas; break;
            case 6: x << "dma src=vmem:0x" << std::hex << addr << " dst=hbm:0x" << pick(1 << 20) << std::dec << " bytes=" << bytes << " flag=1\n"; ++dmas; break;
            default: x << "swait flag=1 cond=ge val=" << dmas << "\n"; break;
        }
    }
    x << "halt\n";
    const std::string xtr = temp_path("random.xtr"), bin = temp_path("random.bin");
    {
        std::ofstream f(xtr);
        f << x.str();
    }
    trace::assemble(xtr, bin);
    const Analyzed r = analyzed(bin);
    analysis::Context cx(r.data);
    analysis::Planner plan(cx);
    std::size_t edges_pages = 0, edges_all = 0;
    for (std::uint64_t begin = 0; begin < 3000; begin += 250) {
        using ME = analysis::WindowScheduler::MemoryEdges;
        const auto pages = analysis::window_dependencies(cx, plan, 0, begin, begin + 1000, ME::Pages);
        const auto all = analysis::window_dependencies(cx, plan, 0, begin, begin + 1000, ME::AllPairs);
        ASSERT_EQ(pages.size(), all.size());
        for (std::size_t k = 0; k < pages.size(); ++k) {
            std::set<std::uint32_t> a(all[k].begin(), all[k].end());
            for (std::uint32_t j : pages[k]) ASSERT_TRUE(a.count(j)) << "window " << begin << ": edge " << k << " -> " << j << " is not a dependency";
            edges_pages += pages[k].size();
            edges_all += all[k].size();
        }
        ASSERT_TRUE(closure(pages) == closure(all)) << "window " << begin << ": the paged graph orders other pairs than the all-pairs one";
    }
    std::printf("edges: %zu paged, %zu all pairs\n", edges_pages, edges_all);
    EXPECT_LT(edges_pages, edges_all);  // the rule did drop some: the closure check is put to the test
}

// The checker itself must catch an illegal order: a RAW pair swapped, and a load moved above
// the wait for the DMA that fills its buffer.
TEST(Reorder, TheLegalityCheckerCatchesBrokenOrders) {
    auto ins = [](const std::string& text) { return trace::parse_instruction(text, "test", 1); };
    const std::vector<Instruction> orig = {
        ins("dma src=hbm:0x0 dst=vmem:0x1000 bytes=4096 flag=1"), ins("valu d=v1 s0=v2 count=128"),
        ins("swait flag=1 val=1 cond=ge"), ins("vld d=v3 src=vmem:0x1000 bytes=256"), ins("valu d=v4 s0=v3 count=128"),
        ins("valu d=v5 s0=v6 count=128")};
    const std::vector<Instruction> fine = {orig[0], orig[2], orig[5], orig[1], orig[3], orig[4]};
    EXPECT_EQ(expect_legal_reorder(orig, fine, 0), 5u);
    const std::vector<Instruction> raw = {orig[0], orig[1], orig[2], orig[4], orig[3], orig[5]};
    const std::vector<Instruction> early_load = {orig[0], orig[1], orig[3], orig[2], orig[4], orig[5]};
    for (const auto* bad : {&raw, &early_load}) {
        ::testing::TestPartResultArray failures;
        {
            ::testing::ScopedFakeTestPartResultReporter catcher(::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
            expect_legal_reorder(orig, *bad, 0);
        }
        EXPECT_EQ(failures.size(), 1) << "an illegal order went unnoticed";
    }
}

// The data-flow and wait checks of the rewriting transformations must catch a broken rewrite:
// a load renamed without its fill, and a fill split into pieces whose wait was not scaled.
TEST(DoubleBuffer, TheDataFlowAndWaitChecksCatchBrokenRewrites) {
    auto ins = [](const std::string& text, std::uint64_t ts) {
        Instruction in = trace::parse_instruction(text, "test", 1);
        in.timestamp = ts;
        in.set(kTimestamp);
        return in;
    };
    const std::vector<Instruction> orig = {ins("dma src=hbm:0x0 dst=vmem:0x1000 bytes=4096 flag=1", 0),
                                           ins("swait flag=1 val=1 cond=ge", 1), ins("vld d=v3 src=vmem:0x1000 bytes=256", 2)};
    EXPECT_EQ(data_flow(orig, 0).at(2), std::vector<std::uint64_t>{0});
    std::vector<Instruction> stray = orig;
    stray[2].mem_src.addr = 0x9000;  // the load moved to a buffer the fill did not
    EXPECT_NE(data_flow(orig, 0), data_flow(stray, 0));
    std::vector<Instruction> split = {ins("dma src=hbm:0x0 dst=vmem:0x1000 bytes=2048 flag=1", 0),
                                      ins("dma u=1 src=hbm:0x800 dst=vmem:0x1800 bytes=2048 flag=1", 0), orig[1], orig[2]};
    EXPECT_EQ(data_flow(orig, 0), data_flow(split, 0));  // the pieces write what the DMA did
    ::testing::TestPartResultArray failures;
    {
        ::testing::ScopedFakeTestPartResultReporter catcher(::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
        expect_reads_after_their_wait(split, 0);  // val=1 waits for one piece only
    }
    EXPECT_EQ(failures.size(), 1) << "a read before all the pieces landed went unnoticed";
    split[2].value = 2;  // scaled: both pieces
    expect_reads_after_their_wait(split, 0);
}

// The finders (analysis/suggest/finder.h): one per kind, each listed once, but for reorder's two
// halves (its windows at waits, then its windows across the stream: finders of their own so that
// two workers run them side by side), listed together; the workers' order takes each finder
// once. What they find is self-contained (kind, where, finding, action, estimate, and the changes
// a patch writes), so that a suggestion can be applied and re-simulated on its own. A variant
// (hoist_wait: a hoist with its waits raised, made by the hoist's own finder) has a kind of its
// own and says so.
TEST(Finders, OnePerKindAndEverySuggestionSelfContained) {
    std::vector<std::string> kinds;
    for (const auto& f : analysis::suggestion_finders()) kinds.push_back(f->kind());
    const std::vector<std::string> want = {"defer_dma", "double_buffer", "double_buffer_store", "drop_wait", "forward_store", "hoist_dma",  "pipeline_collective",
                                           "pipeline_store", "prefetch_ahead", "reorder", "reorder", "merge_dma", "split_dma",
                                           "spread_matmuls", "direct_collective", "collective_algorithm"};
    EXPECT_EQ(kinds, want);
    std::vector<std::size_t> order = analysis::finder_work_order();
    std::sort(order.begin(), order.end());
    for (std::size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i) << "the work order takes each finder once";
    EXPECT_EQ(order.size(), kinds.size());
    // The first finder a worker takes starts while the calling thread chooses the remedies.
    EXPECT_FALSE(analysis::suggestion_finders()[analysis::finder_work_order()[0]]->reads_remedies());
    gen::GemmParams p = two_blocks(1024);
    p.double_buffer = false;
    const Analyzed r = analyzed(gemm_trace("single.bin", p).path);
    ASSERT_FALSE(r.a.suggestions.empty());
    for (std::size_t i = 0; i < r.a.suggestions.size(); ++i) {
        const analysis::Suggestion& s = r.a.suggestions[i];
        if (s.variant) EXPECT_EQ(s.kind, "hoist_wait");
        else EXPECT_NE(std::find(kinds.begin(), kinds.end(), s.kind), kinds.end()) << s.kind;
        EXPECT_FALSE(s.where.empty()) << s.kind;
        EXPECT_FALSE(s.cause.empty()) << s.kind;
        EXPECT_FALSE(s.action.empty()) << s.kind;
        EXPECT_GT(s.estimated_saving, 0u) << s.kind;
        EXPECT_TRUE(!s.moves.empty() || !s.edits.empty() || s.kind == "collective_algorithm") << s.kind << ": nothing to apply";
        if (i > 0) {
            EXPECT_GE(r.a.suggestions[i - 1].estimated_saving, s.estimated_saving) << "ranked by estimated saving";
        }
    }
}

// Ranking is a step of its own: below the noise floor (0.01% of the run, at least 10 ns) a
// suggestion goes; the rest are ordered by estimated saving, ties in the order found; at most max,
// each kind's best first.
TEST(Finders, RankingDropsNoiseOrdersBySavingKeepsTiesInOrderAndCaps) {
    auto sug = [](const char* kind, Tick saving) {
        analysis::Suggestion s;
        s.kind = kind;
        s.estimated_saving = saving;
        return s;
    };
    const Tick end = 1000000000;  // 1 ms: the floor is 100 ns
    std::vector<analysis::Suggestion> v = {sug("a", 200000), sug("b", 99999), sug("c", 500000), sug("d", 200000), sug("e", 300000)};
    analysis::rank_suggestions(v, end, 3);
    std::vector<std::string> got;
    for (const auto& s : v) got.push_back(s.kind);
    EXPECT_EQ(got, (std::vector<std::string>{"c", "e", "a"}));
    // Each kind's best is kept before another kind's second: a low estimate is not crowded out.
    std::vector<analysis::Suggestion> k = {sug("a", 500000), sug("a", 400000), sug("a", 300000), sug("b", 200000)};
    analysis::rank_suggestions(k, end, 2);
    got.clear();
    for (const auto& s : k) got.push_back(s.kind + std::to_string(s.estimated_saving / 1000));
    EXPECT_EQ(got, (std::vector<std::string>{"a500", "b200"}));
    std::vector<analysis::Suggestion> w = {sug("a", 9999), sug("b", 10000)};
    analysis::rank_suggestions(w, 1000, 10);  // a short run: the floor is 10 ns
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].kind, "b");
}

// Every stream's program as the run ran it.
std::vector<std::vector<Instruction>> original_streams(const analysis::RunData& data) {
    std::vector<std::vector<Instruction>> out;
    for (const analysis::Stream& st : data.streams) out.push_back(st.code);
    return out;
}

// Every stream's program with `s` applied (what write_patched_trace writes), stream by stream.
std::vector<std::vector<Instruction>> patched_streams(const analysis::RunData& data, const analysis::Suggestion& s) {
    std::vector<std::vector<Instruction>> out(data.streams.size());
    analysis::visit_patched(
        data, s, [](std::uint32_t) {},
        [&](std::uint32_t si, std::uint64_t i, const analysis::Edit* e) {
            if (!e) return out[si].push_back(data.streams[si].code[i]);
            out[si].push_back(e->in);
            for (const Instruction& more : e->then) out[si].push_back(more);
        });
    return out;
}

// A check of a collective's data flow that knows nothing of how it was lowered. Every chip's
// program runs with each DMA landing at a random later moment (its flag rises then), in a
// random order with the other chips' steps, waits honoured; remote DMAs from one chip to another
// land in the order they were issued (one route per pair of chips, dimension-order: the ring's
// steps count on it, a wait for step s taking the arrival count), local ones in any order. Each remote HBM write carries the
// set of chips whose contributions its source holds, per collective (its annotation less the
// phase and step: "layer0/attn/all_reduce"), read when it is issued: a reducing write merges it
// into the destination's, a plain one replaces it; a piece no write reached holds its own chip's
// contribution. Per collective the ring and any other lowering must leave every piece the
// collective touched on every chip with every chip's contribution, and never deadlock.
struct CollectiveFlow {
    bool deadlock = false;
    std::size_t pieces = 0, incomplete = 0;  // (chip, collective, piece) seen; not holding every chip's
    // What each (chip, collective, piece) ends holding: one bit per chip whose contribution it has.
    std::map<std::tuple<std::uint16_t, std::string, std::uint64_t>, std::uint32_t> held;
};

CollectiveFlow collective_flow(const analysis::RunData& data, const std::vector<std::vector<Instruction>>& code, unsigned seed) {
    auto collective = [&](const Instruction& in) {
        std::string a = data.annotation(in);
        for (int i = 0; i < 2 && a.rfind('/') != std::string::npos; ++i) a.erase(a.rfind('/'));
        return a;
    };
    struct Landing {
        std::uint16_t chip = 0, flag = 0;
        std::int64_t inc = 0;
        bool remote = false, reducing = false;
        std::string tag;
        std::uint64_t piece = 0;
        std::uint32_t from = 0;  // contributions, one bit per chip
    };
    const std::size_t n = code.size();
    std::uint32_t everyone = 0;
    for (std::size_t s = 0; s < n; ++s) everyone |= 1u << data.streams[s].chip;
    std::map<std::tuple<std::uint16_t, std::string, std::uint64_t>, std::uint32_t> value;
    auto held = [&](std::uint16_t chip, const std::string& tag, std::uint64_t piece) -> std::uint32_t& {
        auto it = value.find({chip, tag, piece});
        if (it == value.end()) it = value.emplace(std::make_tuple(chip, tag, piece), 1u << chip).first;
        return it->second;
    };
    std::map<std::pair<std::uint16_t, std::uint16_t>, std::int64_t> flag;  // (chip, flag) -> value
    std::vector<std::size_t> pc(n, 0);
    // In flight: per (from chip, to chip) of remote DMAs, a queue; every local DMA apart.
    std::map<std::pair<std::uint16_t, std::uint16_t>, std::deque<Landing>> routes;
    std::vector<Landing> local;
    std::size_t flying = 0;
    std::mt19937 rng(seed);
    auto holds = [&](const Instruction& w, std::int64_t v) {
        switch (w.cond) {
        case Cond::Eq: return v == w.value;
        case Cond::Ne: return v != w.value;
        case Cond::Ge: return v >= w.value;
        case Cond::Gt: return v > w.value;
        case Cond::Le: return v <= w.value;
        case Cond::Lt: return v < w.value;
        }
        return false;
    };
    CollectiveFlow out;
    for (;;) {
        std::vector<std::size_t> runnable;
        for (std::size_t s = 0; s < n; ++s) {
            if (pc[s] == code[s].size()) continue;
            const Instruction& in = code[s][pc[s]];
            const std::uint16_t chip = data.streams[s].chip;
            if (in.op != Opcode::SWait || holds(in, flag[{chip, in.flag}])) runnable.push_back(s);
        }
        if (runnable.empty() && flying == 0) {
            for (std::size_t s = 0; s < n; ++s) out.deadlock = out.deadlock || pc[s] < code[s].size();
            break;
        }
        if (flying > 0 && (runnable.empty() || rng() % 2 == 0)) {  // a DMA lands
            std::size_t k = rng() % flying;
            Landing l;
            if (k < local.size()) {
                l = local[k];
                local.erase(local.begin() + static_cast<std::ptrdiff_t>(k));
            } else {
                k -= local.size();
                auto it = routes.begin();
                while (k >= it->second.size()) k -= (it++)->second.size();
                l = it->second.front();  // a route's first
                it->second.pop_front();
            }
            --flying;
            if (l.remote) {
                std::uint32_t& v = held(l.chip, l.tag, l.piece);
                v = l.reducing ? (v | l.from) : l.from;
            }
            flag[{l.chip, l.flag}] += l.inc;
            continue;
        }
        const std::size_t s = runnable[rng() % runnable.size()];
        const Instruction& in = code[s][pc[s]++];
        const std::uint16_t chip = data.streams[s].chip;
        if (in.op == Opcode::Dma) {
            const bool remote = in.mem_dst.chip != kLocalChip && in.mem_dst.chip != chip && in.mem_dst.space == Space::Hbm;
            Landing l{analysis::flag_chip(in, chip), in.flag, analysis::flag_increment(in), remote, in.has(kDtype), "", 0, 0};
            if (remote) {
                l.tag = collective(in);
                l.piece = in.mem_dst.addr;
                l.from = held(chip, l.tag, in.mem_src.addr);
            }
            if (!in.has(kFlag)) l.inc = 0;
            ++flying;
            if (remote)
                routes[{chip, in.mem_dst.chip}].push_back(std::move(l));
            else
                local.push_back(std::move(l));
        } else if (in.op == Opcode::SSet) {
            flag[{chip, in.flag}] = in.value;
        } else if (in.op == Opcode::SAdd) {
            flag[{chip, in.flag}] += in.value;
        }
    }
    for (const auto& [key, v] : value) {
        ++out.pieces;
        if (v != everyone) ++out.incomplete;
    }
    out.held = std::move(value);
    return out;
}

// direct_collective on a TP-8 decode layer on a ring of 8 chips: its all-reduces (1 KiB pieces,
// a hop of 500 ns) are rings of 14 latency-bound steps. The patched programs must compute what
// the ring did: every piece of every all-reduce on every chip ends holding all 8 chips'
// contributions, whatever order the DMAs land in (collective_flow, checked on the original too,
// so that the check is known to accept a correct lowering: a flag count off would deadlock a
// later wait or let it pass early, leaving a piece short). The patched trace,
// simulated, is faster; its analysis does not propose the change again (fixed point). The
// measured saving against the estimate is the verification's (tests/e2e/kind_verified.sh).
TEST(DirectCollective, EveryPieceReducedFromEveryChipAndTheRunFaster) {
    const Analyzed r = analyzed_tp8_decode("decode-tp8-direct.bin");
    const analysis::Suggestion* s = first_of_kind(r, "direct_collective");
    ASSERT_NE(s, nullptr) << "no direct_collective on a latency-bound ring all-reduce";
    const std::vector<std::vector<Instruction>> before = original_streams(r.data);
    const std::vector<std::vector<Instruction>> after = patched_streams(r.data, *s);
    for (unsigned seed = 1; seed <= 3; ++seed) {
        const CollectiveFlow ring = collective_flow(r.data, before, seed), direct = collective_flow(r.data, after, seed);
        EXPECT_FALSE(ring.deadlock);
        EXPECT_GT(ring.pieces, 0u);
        EXPECT_EQ(ring.incomplete, 0u) << "the check refuses the ring as generated";
        EXPECT_FALSE(direct.deadlock) << "seed " << seed;
        EXPECT_EQ(direct.pieces, ring.pieces) << "seed " << seed;
        EXPECT_EQ(direct.incomplete, 0u) << "seed " << seed << ": a piece misses a chip's contribution";
    }
    // Fewer steps: per chip, its all-reduces' waits.
    auto waits_on = [&](const std::vector<Instruction>& code, std::uint16_t f) {
        std::size_t w = 0;
        for (const Instruction& in : code) w += in.op == Opcode::SWait && in.flag == f;
        return w;
    };
    std::uint16_t ring_flag = 0;
    for (const Instruction& in : before[0])
        if (in.op == Opcode::Dma && in.mem_dst.chip != kLocalChip && in.mem_dst.chip != 0) ring_flag = in.flag;
    EXPECT_LT(waits_on(after[0], ring_flag), waits_on(before[0], ring_flag) / 4);
    const std::string patched = temp_path("decode-tp8-direct-patched.bin");
    analysis::write_patched_trace(r.data, *s, patched);
    const std::string dir = temp_path("decode-tp8-direct-patched-out");
    ASSERT_TRUE(sim_main_on_ring8(patched, dir, "--no-verify"));
    const analysis::RunData again = analysis::load_run(dir);
    const analysis::Analysis a = analysis::analyze(again);
    std::printf("run %.3f us, patched %.3f us, estimated saving %.3f us\n", r.a.end / 1e6, a.end / 1e6, s->estimated_saving / 1e6);
    EXPECT_LT(a.end, r.a.end) << "the direct exchange made the run slower";
    for (const analysis::Suggestion& x : a.suggestions) EXPECT_NE(x.kind, "direct_collective") << "proposed again: " << x.action;
}

// The same on the trace with prefetch_ahead applied first (the order rounds may take): its loads
// issue in the ring's steps, while the core waits there. direct_collective still applies, every
// piece still ends reduced from every chip, and each load stays in the all-reduce's phase it was
// in (after that phase's sends, before its wait): none is lost, none moves out of the all-reduce.
TEST(DirectCollective, LoadsPlacedInTheRingsStepsStayInTheirPhase) {
    const Analyzed r = analyzed_tp8_decode("decode-tp8-first.bin");
    const analysis::Suggestion* pa = first_of_kind(r, "prefetch_ahead");
    ASSERT_NE(pa, nullptr);
    const std::string first = temp_path("decode-tp8-prefetched.bin");
    analysis::write_patched_trace(r.data, *pa, first);
    // Simulated by sim_main (one SystemC simulation per process), analysed here.
    const std::string dir = temp_path("decode-tp8-prefetched-out");
    ASSERT_TRUE(sim_main_on_ring8(first, dir, "--no-analysis"));
    struct {
        analysis::RunData data;
        analysis::Analysis a;
    } q;
    q.data = analysis::load_run(dir);
    q.a = analysis::analyze(q.data);
    const analysis::Suggestion* s = nullptr;
    for (const analysis::Suggestion& x : q.a.suggestions)
        if (!s && x.kind == "direct_collective") s = &x;
    ASSERT_NE(s, nullptr) << "not proposed once loads sit in the ring's steps";
    const std::vector<std::vector<Instruction>> before = original_streams(q.data);
    const std::vector<std::vector<Instruction>> after = patched_streams(q.data, *s);
    for (unsigned seed = 1; seed <= 3; ++seed) {
        const CollectiveFlow direct = collective_flow(q.data, after, seed);
        EXPECT_FALSE(direct.deadlock) << "seed " << seed;
        EXPECT_GT(direct.pieces, 0u);
        EXPECT_EQ(direct.incomplete, 0u) << "seed " << seed;
    }
    // Per chip, the loads between an all-reduce's first send and its last wait, and per phase.
    auto inside = [&](const std::vector<Instruction>& code, std::uint16_t chip) {
        std::map<std::string, std::size_t> n;  // "collective/phase" -> local loads in it
        std::string open;                      // the collective phase the last send or wait was in
        for (const Instruction& in : code) {
            const std::string a = q.data.annotation(in);
            const bool collective = a.find("/all_reduce/") != std::string::npos;
            if (collective) open = a.substr(0, a.rfind('/'));
            else if (in.op == Opcode::Dma && in.mem_dst.chip == kLocalChip && in.mem_src.chip == kLocalChip && !open.empty()) ++n[open];
            if (!collective && in.op != Opcode::Dma) open.clear();
        }
        (void)chip;
        return n;
    };
    std::size_t loads = 0;
    for (std::size_t c = 0; c < before.size(); ++c) {
        const auto was = inside(before[c], q.data.streams[c].chip), is = inside(after[c], q.data.streams[c].chip);
        EXPECT_EQ(is, was) << "chip " << c << ": a load left its all-reduce phase";
        for (const auto& [phase, k] : was) loads += k;
    }
    EXPECT_GT(loads, 0u) << "prefetch_ahead put no load in the ring's steps: the test shows nothing";
}

// A reduce-scatter and an all-gather alone (xpu_tracegen collective, 1 KiB pieces, a ring of 5
// chips, 2 pieces a shard): direct_collective rewrites each in one round, and the data ends as
// the ring left it (collective_flow, DMAs landing in random orders): after the all-gather every
// chip holds what the ring gave it, piece by piece; after the reduce-scatter each piece the ring
// reduced in full (at the chip that owns it) is reduced in full at the same chip (the others are
// the ring's scratch, partial sums in transit).
void check_direct_single_phase(const std::string& op) {
    gen::CollectiveParams cp;
    cp.op = op;
    cp.algo = "ring";
    cp.chips = 5;
    cp.chunks = 2;
    cp.bytes = 5 * 2 * 1024;
    const std::vector<std::string> sets = {"chips=5", "topology.dims=[5]"};
    const Analyzed r = analyzed(collective_trace("ring-" + op + ".bin", cp), sets, "configs/xpu-ring4.yaml");
    const analysis::Suggestion* s = first_of_kind(r, "direct_collective");
    ASSERT_NE(s, nullptr) << "no direct_collective on a " << op;
    EXPECT_NE(s->action.find("one round"), std::string::npos) << s->action;
    const std::vector<std::vector<Instruction>> before = original_streams(r.data);
    const std::vector<std::vector<Instruction>> after = patched_streams(r.data, *s);
    for (unsigned seed = 1; seed <= 3; ++seed) {
        const CollectiveFlow ring = collective_flow(r.data, before, seed), direct = collective_flow(r.data, after, seed);
        EXPECT_FALSE(ring.deadlock);
        EXPECT_FALSE(direct.deadlock) << "seed " << seed;
        std::size_t complete = 0;
        for (const auto& [key, v] : ring.held) {
            const auto it = direct.held.find(key);
            const std::uint32_t got = it == direct.held.end() ? 1u << std::get<0>(key) : it->second;
            if (op == "all-gather") {
                EXPECT_EQ(got, v) << "seed " << seed << ": chip " << std::get<0>(key) << ", piece " << std::get<2>(key);
            } else if (v == 0x1Fu) {  // reduced in full (5 chips)
                ++complete;
                EXPECT_EQ(got, v) << "seed " << seed << ": chip " << std::get<0>(key) << ", piece " << std::get<2>(key);
            }
        }
        if (op == "reduce-scatter") {
            EXPECT_EQ(complete, 5u * 2u) << "a piece a chunk, each reduced at its owner";
        }
    }
    // Fewer steps: per chip, one wait for the collective.
    std::size_t waits = 0;
    for (const Instruction& in : after[0]) waits += in.op == Opcode::SWait;
    EXPECT_EQ(waits, 1u);
}

TEST(DirectCollective, AllGatherAloneInOneRoundAsTheRingLeftIt) { check_direct_single_phase("all-gather"); }
TEST(DirectCollective, ReduceScatterAloneInOneRoundEachPieceReducedAtItsOwner) { check_direct_single_phase("reduce-scatter"); }

// forward_store (analysis/suggest/forward_store.cpp), checked by values rather than by the rule:
// where every byte a read sees was made (the vst or the untouched memory it came from, followed
// through every DMA's copy, byte-exact), in program order, is the same in the patched program
// as in the original for every read; only forwarded loads change (a DMA whose source became the
// VMEM); and every DMA order still holds with the DMAs in flight (a forwarded copy's source is
// not written before a wait covers the copy: expect_dma_orders_kept).
struct Provenance {
    std::uint64_t maker;  // the vst's timestamp + 1, or 0: memory nothing wrote (its own address)
    std::uint64_t offset;  // byte of the maker's data (of the address space, for untouched memory)
    bool operator==(const Provenance& o) const { return maker == o.maker && offset == o.offset; }
};
// Byte-exact provenance of one memory: runs [lo, hi) -> where their first byte was made.
class ProvenanceMap {
public:
    std::vector<std::pair<std::uint64_t, Provenance>> read(std::uint64_t lo, std::uint64_t hi) const {
        std::vector<std::pair<std::uint64_t, Provenance>> out;  // (length, provenance of its first byte)
        std::uint64_t at = lo;
        auto it = runs_.upper_bound(lo);
        if (it != runs_.begin()) --it;
        for (; at < hi;) {
            if (it != runs_.end() && it->first <= at && at < it->second.first) {
                const std::uint64_t end = std::min(hi, it->second.first);
                out.push_back({end - at, {it->second.second.maker, it->second.second.offset + (at - it->first)}});
                at = end;
                ++it;
            } else {
                const std::uint64_t end = it != runs_.end() && it->first > at ? std::min(hi, it->first) : hi;
                out.push_back({end - at, {0, at}});
                at = end;
                if (it != runs_.end() && it->first <= at && at >= it->second.first) ++it;
            }
        }
        return out;
    }
    void write(std::uint64_t lo, const std::vector<std::pair<std::uint64_t, Provenance>>& data) {
        std::uint64_t hi = lo;
        for (const auto& d : data) hi += d.first;
        cut(lo);
        cut(hi);
        runs_.erase(runs_.lower_bound(lo), runs_.lower_bound(hi));
        std::uint64_t at = lo;
        for (const auto& d : data) {
            runs_[at] = {at + d.first, d.second};
            at += d.first;
        }
    }

private:
    void cut(std::uint64_t x) {
        auto it = runs_.upper_bound(x);
        if (it == runs_.begin()) return;
        --it;
        if (it->first < x && x < it->second.first) {
            const auto tail = std::make_pair(it->second.first, Provenance{it->second.second.maker, it->second.second.offset + (x - it->first)});
            it->second.first = x;
            runs_[x] = tail;
        }
    }
    std::map<std::uint64_t, std::pair<std::uint64_t, Provenance>> runs_;  // lo -> (hi, provenance at lo)
};
// For each reading instruction (by timestamp), what its memory reads see, merged into runs.
std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, Provenance>>> value_flow(const std::vector<Instruction>& code, std::uint16_t chip) {
    std::map<std::pair<int, std::uint16_t>, ProvenanceMap> mem;  // (space, chip)
    std::map<std::uint64_t, std::vector<std::pair<std::uint64_t, Provenance>>> seen;
    for (const Instruction& in : code) {
        const Effects e = effects(in, chip);
        std::vector<std::pair<std::uint64_t, Provenance>> data;
        for (const auto& m : e.mem)
            if (!m.write) {
                auto& mp = mem[{static_cast<int>(m.space), m.chip}];
                auto d = mp.read(m.lo, m.hi);
                for (auto& x : d)  // untouched memory is named by its own place
                    if (x.second.maker == 0) x.second.offset |= (std::uint64_t(m.space) << 60) | (std::uint64_t(m.chip) << 44);
                data.insert(data.end(), d.begin(), d.end());
            }
        if (!data.empty()) seen[in.timestamp] = data;
        for (const auto& m : e.mem)
            if (m.write) {
                auto& mp = mem[{static_cast<int>(m.space), m.chip}];
                if (in.op == Opcode::Dma) mp.write(m.lo, data);  // a copy of what it read
                else mp.write(m.lo, {{m.hi - m.lo, {in.timestamp + 1, 0}}});
            }
    }
    return seen;
}
std::vector<std::pair<std::uint64_t, Provenance>> merged(std::vector<std::pair<std::uint64_t, Provenance>> v) {
    std::vector<std::pair<std::uint64_t, Provenance>> out;
    for (const auto& x : v)
        if (!out.empty() && out.back().second.maker == x.second.maker && out.back().second.offset + out.back().first == x.second.offset)
            out.back().first += x.first;
        else
            out.push_back(x);
    return out;
}

const analysis::Suggestion& check_forward_store(const Analyzed& r, bool race_free = true) {
    const analysis::Suggestion& s =
        required_suggestion(r, [](const analysis::Suggestion& x) { return x.kind == "forward_store"; }, "forward_store");
    if (s.kind.empty()) return s;
    EXPECT_GT(s.estimated_saving, 0u);
    EXPECT_LE(s.estimated_saving, r.a.bounds.headroom);
    EXPECT_TRUE(s.moves.empty());
    const std::vector<Instruction>& orig = r.data.streams[0].code;
    const std::vector<Instruction> patched = patched_stream(r, s);
    EXPECT_EQ(orig.size(), patched.size());
    if (orig.size() != patched.size()) return s;
    std::size_t forwarded = 0;
    for (std::size_t i = 0; i < orig.size(); ++i) {
        if (orig[i] == patched[i]) continue;
        ++forwarded;
        Instruction o = orig[i];
        EXPECT_EQ(o.op, Opcode::Dma);
        EXPECT_EQ(o.mem_src.space, Space::Hbm);
        EXPECT_EQ(patched[i].mem_src.space, Space::Vmem);
        o.mem_src = patched[i].mem_src;
        EXPECT_EQ(o, patched[i]) << "only a forwarded load's source changes: " << trace::format_instruction(patched[i]);
    }
    EXPECT_EQ(forwarded, s.edits.size());
    const auto before = value_flow(orig, 0), after = value_flow(patched, 0);
    EXPECT_EQ(before.size(), after.size());
    std::size_t mismatched = 0;
    for (const auto& [ts, v] : before) {
        auto a = after.find(ts);
        if (a == after.end() || merged(v) != merged(a->second)) {
            if (++mismatched <= 3) ADD_FAILURE() << "#" << ts << " (" << trace::format_instruction(orig[ts]) << ") reads other values";
        }
    }
    EXPECT_EQ(mismatched, 0u);
    if (race_free) expect_dma_orders_kept(patched, 0);  // (a program with a race keeps it)
    return s;
}

// A llama2-7b decode layer stores its small vectors (norms, residuals) and reads them back as
// the next op's input: those loads are forwarded from VMEM.
TEST(ForwardStore, DecodeLayerLoadsReadTheSameValuesAndEveryDmaOrderHolds) {
    const analysis::Suggestion& s = check_forward_store(analyzed(stamped(transformer_trace("decode.bin", decode_layer()))));
    EXPECT_GT(s.edits.size(), 10u);
}

// The rule's edges on a hand-written program: a load is forwarded only from a store it waited
// for, whose VMEM source nothing wrote since, and nothing writes before a wait covers the copy.
TEST(ForwardStore, OnlyLoadsWhoseSourceStaysUntilTheirWait) {
    const std::string xtr = temp_path("fw.xtr"), bin = temp_path("fw.bin");
    {
        std::ofstream x(xtr);
        x << ".xtr 1.0\n.stream chip=0 core=0\n"
             "vst s0=v1 dst=vmem:0x0 bytes=8192\n"
             "dma src=vmem:0x0 dst=hbm:0x100000 bytes=8192 flag=1\n"       // #1 store A
             "swait flag=1 val=1 cond=ge\n"
             "dma src=hbm:0x101000 dst=vmem:0x10000 bytes=4096 flag=2\n"   // #3 forwarded (second half of A)
             "swait flag=2 val=1 cond=ge\n"
             "vst s0=v2 dst=vmem:0x0 bytes=4096\n"                          // A's source overwritten (first half)
             "dma src=hbm:0x100000 dst=vmem:0x20000 bytes=4096 flag=2\n"   // #6 not: its bytes' source was written
             "swait flag=2 val=2 cond=ge\n"
             "vst s0=v3 dst=vmem:0x30000 bytes=4096\n"
             "dma src=vmem:0x30000 dst=hbm:0x200000 bytes=4096 flag=1\n"   // #9 store B
             "dma src=hbm:0x200000 dst=vmem:0x40000 bytes=4096 flag=2\n"   // #10 not: no wait for the store between
             "swait flag=1 val=2 cond=ge\n"
             "swait flag=2 val=3 cond=ge\n"
             "vst s0=v4 dst=vmem:0x50000 bytes=4096\n"
             "dma src=vmem:0x50000 dst=hbm:0x300000 bytes=4096 flag=1\n"   // #14 store C
             "swait flag=1 val=3 cond=ge\n"
             "dma src=hbm:0x300000 dst=vmem:0x60000 bytes=4096 flag=2\n"   // #16 not: C's source written before its wait
             "vst s0=v5 dst=vmem:0x50000 bytes=4096\n"
             "swait flag=2 val=4 cond=ge\n"
             "halt\n";
    }
    trace::assemble(xtr, bin);
    const Analyzed r = analyzed(stamped(bin));
    const analysis::Suggestion* s = first_of_kind(r, "forward_store");
    ASSERT_NE(s, nullptr) << "no forward_store suggestion";
    ASSERT_EQ(s->edits.size(), 1u);
    EXPECT_EQ(s->edits[0].index, 3u);
    EXPECT_EQ(s->edits[0].in.mem_src.space, Space::Vmem);
    EXPECT_EQ(s->edits[0].in.mem_src.addr, 0x1000u);
    check_forward_store(r, false);  // #10 races with its store on purpose
}

}  // namespace
}  // namespace xpu::test

namespace xpu::test {
namespace {

// spread_matmuls balances where the time is, stretch by stretch (the stream cut at its waits),
// not the whole run's sums: a first op streams on mxu0 alone (8 accumulators of 8 matmuls, one
// weight tile), then, after a wait, a second keeps mxu0..mxu3 busy side by side (8
// accumulators each) while mxu4..mxu7 of configs/xpu.yaml stand idle. The sums (mxu0 128
// matmuls, mxu1..3 64, the average 48) made the old rule move mxu0's last lives, the second
// op's, and leave the first on one unit. Balanced per stretch, the accumulators end one per
// unit in the first (8 matmuls each, the stretch's average) and four per unit in the second
// (32). The estimate, per stretch the busiest unit's streaming before less after times the
// share of the stretch's span it streamed: 56 matmuls' streaming, plus 32 of the second's 64
// times 64 matmuls' streaming over that stretch's span in the run. Reference: that closed form
// of the counts (a model of the compute bound; the replay of real traces: e2e.spread_stretches).
// A third stretch keeps mxu0..mxu2 busy side by side and five units idle: each idle unit takes
// lives of one busy unit only, their spans interleaving (a unit mirrors one other unit's
// weights at a time), so the last busy unit finds two idle units left for five it would need,
// and sheds less than the others (the stretch still gains). Every matmul of the patched program
// multiplies by the tile it did (the last push on its new unit, duplicated or not, is a copy of
// the push before it on its old one), as tests/e2e/check_weight_tiles.py checks on real traces.
TEST(SpreadMatmuls, EachStretchIsBalancedOnItsOwn) {
    const std::string xtr = temp_path("spread.xtr"), bin = temp_path("spread.bin");
    {
        std::ofstream x(xtr);
        x << ".xtr 1.0\n.stream chip=0 core=0\n";
        x << "vld d=v30 src=vmem:0x100000 bytes=32768\n";
        for (int r = 0; r < 8; ++r) x << "vld d=v" << r << " src=vmem:0x" << std::hex << 0x1000 * r << std::dec << " bytes=2048\n";
        auto op = [&](int unit, int first_acc) {
            x << "mpush u=" << unit << " s0=v30 shape=1x128x128 dtype=bf16\n";
            for (int a = 0; a < 8; ++a)
                for (int r = 0; r < 8; ++r) x << "matmul u=" << unit << " d=m" << first_acc + a << " s0=v" << r << " shape=8x128x128 dtype=bf16\n";
        };
        auto pops = [&](int unit, int first_acc) {
            for (int a = 0; a < 8; ++a)
                for (int r = 0; r < 8; ++r) x << "mpop u=" << unit << " d=v" << 40 + r << " s0=m" << first_acc + a << " shape=8x128x1\n";
        };
        op(0, 0);
        pops(0, 0);
        x << "sset flag=5 val=1\nswait flag=5 val=1 cond=ge\n";
        for (int u = 0; u < 4; ++u) x << "mpush u=" << u << " s0=v30 shape=1x128x128 dtype=bf16\n";
        for (int a = 0; a < 8; ++a)
            for (int r = 0; r < 8; ++r)
                for (int u = 0; u < 4; ++u) x << "matmul u=" << u << " d=m" << 8 + 8 * u + a << " s0=v" << r << " shape=8x128x128 dtype=bf16\n";
        for (int u = 0; u < 4; ++u) pops(u, 8 + 8 * u);
        x << "sset flag=6 val=1\nswait flag=6 val=1 cond=ge\n";
        for (int u = 0; u < 3; ++u) x << "mpush u=" << u << " s0=v30 shape=1x128x128 dtype=bf16\n";
        for (int a = 0; a < 8; ++a)
            for (int r = 0; r < 8; ++r)
                for (int u = 0; u < 3; ++u) x << "matmul u=" << u << " d=m" << 8 * u + a << " s0=v" << r << " shape=8x128x128 dtype=bf16\n";
        for (int u = 0; u < 3; ++u) pops(u, 8 * u);
        x << "halt\n";
    }
    trace::assemble(xtr, bin);
    const Analyzed r = analyzed(stamped(bin), {}, "configs/xpu.yaml", 10, true);
    const analysis::Suggestion* s = first_of_kind(r, "spread_matmuls");
    ASSERT_NE(s, nullptr) << "no spread_matmuls suggestion";
    const auto& code = r.data.streams[0].code;
    std::vector<std::uint64_t> waits;
    for (std::uint64_t i = 0; i < code.size(); ++i)
        if (code[i].op == Opcode::SWait) waits.push_back(i);
    ASSERT_EQ(waits.size(), 2u);
    const std::uint64_t wait = waits[0], wait3 = waits[1];
    std::map<std::uint64_t, std::uint8_t> unit_of;  // matmuls and pops after the patch
    for (std::uint64_t i = 0; i < code.size(); ++i)
        if (code[i].op == Opcode::MatMul || code[i].op == Opcode::MPop) unit_of[i] = code[i].unit;
    std::map<std::uint64_t, std::vector<std::uint8_t>> pushed_to;  // push -> the units it is issued to as well
    for (const analysis::Edit& e : s->edits) {
        if (code[e.index].op == Opcode::MPush) {
            for (const Instruction& p : e.then) pushed_to[e.index].push_back(p.unit);
            continue;
        }
        unit_of[e.index] = e.in.unit;
    }
    // Per stretch and unit: matmuls, and every accumulator on one unit (its matmuls and pops).
    std::map<std::uint8_t, int> first, second, third;
    std::map<std::pair<std::uint8_t, bool>, std::set<std::uint8_t>> units_of_acc;  // (register, in the third stretch)
    std::map<std::uint8_t, std::set<std::uint8_t>> third_from;                     // new unit -> the units its matmuls were on
    for (const auto& [i, u] : unit_of) {
        if (code[i].op == Opcode::MatMul) ++(i < wait ? first : i < wait3 ? second : third)[u];
        if (code[i].op == Opcode::MatMul && i > wait3) third_from[u].insert(code[i].unit);
        units_of_acc[{code[i].op == Opcode::MatMul ? code[i].dst : code[i].src[0], i > wait3}].insert(u);
    }
    ASSERT_EQ(first.size(), 8u) << "the first op still on " << first.size() << " units";
    for (const auto& [u, n] : first) EXPECT_EQ(n, 8) << "unit " << int(u);
    ASSERT_EQ(second.size(), 8u);
    for (const auto& [u, n] : second) EXPECT_EQ(n, 32) << "unit " << int(u);
    for (const auto& [acc, units] : units_of_acc) EXPECT_EQ(units.size(), 1u) << "accumulator m" << int(acc.first - kMatrixRegBase) << " split";
    for (std::uint8_t v = 3; v < 8; ++v) EXPECT_EQ(third_from[v].size(), 1u) << "mxu" << int(v) << " mirrors several units";
    int most = 0;
    for (const auto& [u, n] : third) most = std::max(most, n);
    EXPECT_LT(most, 64);
    EXPECT_GT(third[2], third[0]) << "the last busy unit found the idle units taken";
    // Each matmul's tile: walk the patched program (a duplicated push follows its original).
    std::map<std::uint64_t, const analysis::Edit*> edit_at;
    for (const analysis::Edit& e : s->edits) edit_at[e.index] = &e;
    std::map<std::uint8_t, std::uint64_t> tile_before, tile_after;  // unit -> the push its array holds (index)
    for (std::uint64_t i = 0; i < code.size(); ++i) {
        if (code[i].op == Opcode::MPush) {
            tile_before[code[i].unit] = tile_after[code[i].unit] = i;
            if (auto e = edit_at.find(i); e != edit_at.end())
                for (const Instruction& p : e->second->then) tile_after[p.unit] = i;
        } else if (code[i].op == Opcode::MatMul) {
            EXPECT_EQ(tile_after[unit_of.at(i)], tile_before[code[i].unit]) << "matmul #" << i << " multiplies by another tile";
        }
    }
    // The first op's tile goes to the 7 other units, each of mxu0..3's second tiles to one more.
    std::vector<std::uint64_t> pushes;
    for (std::uint64_t i = 0; i < code.size(); ++i)
        if (code[i].op == Opcode::MPush) pushes.push_back(i);
    ASSERT_EQ(pushes.size(), 8u);
    EXPECT_EQ(std::set<std::uint8_t>(pushed_to[pushes[0]].begin(), pushed_to[pushes[0]].end()), (std::set<std::uint8_t>{1, 2, 3, 4, 5, 6, 7}));
    for (int k = 1; k <= 4; ++k) EXPECT_EQ(pushed_to[pushes[k]].size(), 1u) << "the second op's push #" << pushes[k];
    // The estimate: 56 + 32 matmuls' streaming (every matmul here streams as long).
    // Per stretch: the run's span of its matmuls (every matmul streams as long).
    Tick streaming = 0;
    std::map<int, std::pair<Tick, Tick>> span_of;  // stretch -> first start, last end
    for (const analysis::UnitOp& uo : r.data.unit_ops)
        if (uo.stream == 0 && code[uo.index].op == Opcode::MatMul) {
            if (streaming == 0) streaming = uo.end - uo.start;
            EXPECT_EQ(uo.end - uo.start, streaming);
            auto& sp = span_of.try_emplace(uo.index < wait ? 0 : uo.index < wait3 ? 1 : 2, ~Tick{0}, Tick{0}).first->second;
            sp.first = std::min(sp.first, uo.start);
            sp.second = std::max(sp.second, uo.end);
        }
    ASSERT_GT(streaming, 0u);
    ASSERT_EQ(span_of.size(), 3u);
    EXPECT_LT(span_of[1].second - span_of[1].first, 64 * streaming * 11 / 10) << "the second op's units did not stream side by side";
    Tick expected = 0;
    const std::map<std::uint8_t, int>* after[3] = {&first, &second, &third};
    for (int k = 0; k < 3; ++k) {
        int most = 0;
        for (const auto& [u, n] : *after[k]) most = std::max(most, n);
        const Tick before = 64 * streaming, span = span_of[k].second - span_of[k].first;
        const long double share = span > before ? static_cast<long double>(before) / span : 1.0L;
        expected += static_cast<Tick>((before - most * streaming) * share);
    }
    EXPECT_EQ(s->estimated_saving, expected);
}

}  // namespace
}  // namespace xpu::test

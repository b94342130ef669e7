// Tests of the VCD writer (platform/vcd_writer.*, docs/waveforms.md): each simulation's
// waveform goes through a strict VCD parser (declared ids only, time never goes back, values
// of the declared width, no redundant changes), and its signals are checked against the
// configuration (times derived by hand, as in models_test.cpp) and against the models' own
// counters (busy time, bytes). One simulation per TEST.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "models/hbm_controller.h"
#include "models/sim_time.h"
#include "models/vmem.h"
#include "platform/builder.h"
#include "platform/vcd_writer.h"
#include "tests/sim_fixture.h"
#include "traces/trace_reader.h"
#include "traces/trace_text.h"
#include "traces/vmem_liveness.h"

using namespace xpu;
using namespace xpu::test;
using xpu::platform::VcdOptions;
using xpu::platform::VcdWriter;

namespace {

// ---- a strict VCD reader -----------------------------------------------------------------

struct Vcd {
    struct Var {
        std::string name;  // full dotted name, without bit range
        unsigned width = 1;
        std::vector<std::pair<Tick, std::uint64_t>> changes;  // the first is the $dumpvars value
    };
    std::vector<Var> vars;
    std::map<std::string, std::size_t> by_name;
    std::vector<Tick> times;  // every timestamp, in order
    std::string timescale;

    bool has(const std::string& n) const { return by_name.count(n) != 0; }
    const Var& var(const std::string& n) const {
        auto it = by_name.find(n);
        if (it == by_name.end()) throw std::runtime_error("no signal " + n);
        return vars[it->second];
    }
    // Value of signal n at time t (the last change at or before t).
    std::uint64_t at(const std::string& n, Tick t) const {
        const auto& c = var(n).changes;
        std::uint64_t v = 0;
        bool any = false;
        for (const auto& [ct, cv] : c) {
            if (ct > t) break;
            v = cv;
            any = true;
        }
        if (!any) throw std::runtime_error(n + " has no value at " + std::to_string(t));
        return v;
    }
    std::uint64_t final_value(const std::string& n) const { return var(n).changes.back().second; }
    // Total time in [from, to) during which signal n is non-zero.
    Tick high_time(const std::string& n, Tick to) const {
        const auto& c = var(n).changes;
        Tick total = 0;
        for (std::size_t i = 0; i < c.size(); ++i) {
            Tick end = i + 1 < c.size() ? c[i + 1].first : to;
            if (c[i].second) total += end - c[i].first;
        }
        return total;
    }
};

// Throws std::runtime_error("line N: ...") on anything a strict reader should refuse.
Vcd parse_vcd(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    Vcd v;
    std::map<std::string, std::size_t> ids;
    std::vector<std::string> scopes;
    std::string line;
    std::size_t ln = 0;
    auto fail = [&](const std::string& why) { throw std::runtime_error("line " + std::to_string(ln) + ": " + why + ": '" + line + "'"); };
    auto words = [](const std::string& s) {
        std::istringstream is(s);
        std::vector<std::string> w;
        for (std::string x; is >> x;) w.push_back(x);
        return w;
    };
    // Header.
    bool defs_done = false;
    while (!defs_done && std::getline(in, line)) {
        ++ln;
        auto w = words(line);
        if (w.empty()) continue;
        const std::string& k = w[0];
        if (k == "$date" || k == "$version" || k == "$comment") {
            if (w.back() == "$end" && w.size() > 1) continue;
            while (std::getline(in, line)) {
                ++ln;
                if (words(line) == std::vector<std::string>{"$end"}) break;
                if (line.find("$end") != std::string::npos) fail("unexpected $end");
            }
            if (!in) fail("unterminated " + k);
        } else if (k == "$timescale") {
            if (w.size() != 3 || w[2] != "$end") fail("bad $timescale");
            v.timescale = w[1];
        } else if (k == "$scope") {
            if (w.size() != 4 || w[1] != "module" || w[3] != "$end") fail("bad $scope");
            scopes.push_back(w[2]);
        } else if (k == "$upscope") {
            if (w.size() != 2 || w[1] != "$end" || scopes.empty()) fail("bad $upscope");
            scopes.pop_back();
        } else if (k == "$var") {
            if ((w.size() != 6 && w.size() != 7) || w[1] != "wire" || w.back() != "$end") fail("bad $var");
            if (scopes.empty()) fail("$var outside a scope");
            unsigned width = static_cast<unsigned>(std::stoul(w[2]));
            if (width == 0 || width > 64) fail("bad width");
            const std::string& id = w[3];
            for (char c : id)
                if (c < 33 || c > 126) fail("bad id character");
            if (ids.count(id)) fail("id declared twice");
            if (w.size() == 7) {
                if (w[5] != "[" + std::to_string(width - 1) + ":0]") fail("range does not match the width");
            } else if (width != 1) {
                fail("vector without a range");
            }
            std::string name;
            for (const auto& s : scopes) name += s + ".";
            name += w[4];
            if (v.by_name.count(name)) fail("signal declared twice");
            ids[id] = v.vars.size();
            v.by_name[name] = v.vars.size();
            v.vars.push_back({name, width, {}});
        } else if (k == "$enddefinitions") {
            if (w.size() != 2 || w[1] != "$end") fail("bad $enddefinitions");
            if (!scopes.empty()) fail("unbalanced scopes");
            defs_done = true;
        } else {
            fail("unexpected header line");
        }
    }
    if (!defs_done) throw std::runtime_error("no $enddefinitions");
    if (v.timescale != "1ps") throw std::runtime_error("timescale is not 1ps");
    // Body.
    bool in_dumpvars = false, dumped = false;
    Tick now = 0;
    std::set<std::size_t> seen_now;
    while (std::getline(in, line)) {
        ++ln;
        if (line.empty()) fail("empty line");
        if (line[0] == '#') {
            if (in_dumpvars) fail("timestamp inside $dumpvars");
            std::size_t used = 0;
            Tick t = std::stoull(line.substr(1), &used);
            if (used + 1 != line.size()) fail("bad timestamp");
            if (!v.times.empty() && t <= v.times.back()) fail("time goes back (or repeats)");
            if (!dumped && !v.times.empty()) fail("no $dumpvars after the first timestamp");
            v.times.push_back(t);
            now = t;
            seen_now.clear();
            continue;
        }
        if (line == "$dumpvars") {
            if (dumped || v.times.size() != 1) fail("$dumpvars not right after the first timestamp");
            in_dumpvars = true;
            continue;
        }
        if (line == "$end") {
            if (!in_dumpvars) fail("stray $end");
            in_dumpvars = false;
            dumped = true;
            for (const auto& var : v.vars)
                if (var.changes.empty()) fail(var.name + " has no initial value");
            continue;
        }
        if (v.times.empty()) fail("value before the first timestamp");
        if (!in_dumpvars && !dumped) fail("value change before $dumpvars");
        std::string id;
        std::uint64_t value = 0;
        unsigned bits = 0;
        if (line[0] == '0' || line[0] == '1') {
            id = line.substr(1);
            value = line[0] == '1';
            bits = 1;
            if (!ids.count(id)) fail("undeclared id");
            if (v.vars[ids[id]].width != 1) fail("scalar value for a vector");
        } else if (line[0] == 'b') {
            std::size_t sp = line.find(' ');
            if (sp == std::string::npos || sp == 1) fail("bad vector value");
            std::string b = line.substr(1, sp - 1);
            id = line.substr(sp + 1);
            if (!ids.count(id)) fail("undeclared id");
            if (b.size() > 1 && b[0] == '0') fail("leading zero");
            for (char c : b) {
                if (c != '0' && c != '1') fail("not a binary digit");
                value = (value << 1) | static_cast<std::uint64_t>(c - '0');
            }
            bits = static_cast<unsigned>(b.size());
            if (bits > v.vars[ids[id]].width) fail("value wider than declared");
            if (v.vars[ids[id]].width == 1) fail("vector value for a scalar");
        } else {
            fail("unexpected line");
        }
        std::size_t i = ids[id];
        if (!seen_now.insert(i).second) fail("two values for one signal at one time");
        auto& ch = v.vars[i].changes;
        if (!in_dumpvars && !ch.empty() && ch.back().second == value) fail("redundant change");
        ch.push_back({now, value});
    }
    if (in_dumpvars || !dumped) throw std::runtime_error("no complete $dumpvars");
    return v;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// ---- running with writers -----------------------------------------------------------------

// Everything the models reported, unit ops included, forwarded to the writers.
struct Tee : Recording {
    std::vector<Recorder*> to;
    std::vector<UnitOpEvent> ops;
    void on_instruction(const InstrEvent& e) override {
        Recording::on_instruction(e);
        for (auto* r : to) r->on_instruction(e);
    }
    void on_dma(const DmaEvent& e) override {
        Recording::on_dma(e);
        for (auto* r : to) r->on_dma(e);
    }
    void on_flag(const FlagEvent& e) override {
        Recording::on_flag(e);
        for (auto* r : to) r->on_flag(e);
    }
    void on_mem(const MemEvent& e) override {
        Recording::on_mem(e);
        for (auto* r : to) r->on_mem(e);
    }
    void on_unit_op(const UnitOpEvent& e) override {
        ops.push_back(e);
        for (auto* r : to) r->on_unit_op(e);
    }
    std::map<std::pair<std::string, unsigned>, std::uint64_t> channel_bytes;  // (controller, channel) -> bytes
    std::uint64_t pieces = 0;
    void on_hbm_channel(const HbmChannelEvent& e) override {
        channel_bytes[{e.controller, e.channel}] += e.bytes;
        ++pieces;
        for (auto* r : to) r->on_hbm_channel(e);
    }
};

struct WaveRun {
    platform::PlatformConfig cfg;
    std::unique_ptr<platform::Simulation> sim;
    Tee tee;
    std::vector<std::unique_ptr<VcdWriter>> writers;
    std::vector<Vcd> vcds;
    platform::RunResult result;
    Tick cycle = 0, end = 0;
    const Vcd& vcd(std::size_t i = 0) const { return vcds.at(i); }
};

// Runs `trace` with one writer per options (paths filled in when empty) and parses each file.
std::unique_ptr<WaveRun> run_waves(const std::string& trace, std::vector<VcdOptions> opts,
                                   const std::string& platform = "configs/xpu.yaml",
                                   const std::vector<std::string>& sets = {}) {
    auto w = std::make_unique<WaveRun>();
    w->cfg = platform::load_platform(source_path(platform), sets);
    w->sim = std::make_unique<platform::Simulation>(w->cfg, trace);
    for (std::size_t i = 0; i < opts.size(); ++i) {
        if (opts[i].path.empty()) opts[i].path = temp_path("wave" + std::to_string(i) + ".vcd");
        w->writers.push_back(std::make_unique<VcdWriter>(w->sim->platform(), opts[i]));
        w->tee.to.push_back(w->writers.back().get());
    }
    w->sim->platform().set_recorder(&w->tee);
    w->result = w->sim->run();
    w->cycle = cycle_ticks(w->cfg.clock_ghz);
    w->end = ns_to_ticks(w->result.simulated_ns);
    for (auto& wr : w->writers) {
        wr->finish(w->end);
        w->vcds.push_back(parse_vcd(wr->path()));
    }
    return w;
}

std::string xtr(const std::string& name, const std::string& body) {
    std::string src = temp_path(name + ".xtr"), bin = temp_path(name + ".bin");
    std::ofstream(src) << ".xtr 1.0\n.stream chip=0 core=0\n" << body << "halt\n";
    trace::assemble(src, bin);
    return bin;
}

using Changes = std::vector<std::pair<Tick, std::uint64_t>>;
const std::string kCore = "xpu.chip0.core0.";

}  // namespace

// The reader used below refuses what it should (a check of the checker).
TEST(VcdReader, RefusesMalformedFiles) {
    const std::string head = "$timescale 1ps $end\n$scope module a $end\n$var wire 1 ! x $end\n"
                             "$var wire 4 \" y [3:0] $end\n$upscope $end\n$enddefinitions $end\n";
    auto check = [&](const std::string& body, bool ok) {
        std::string p = temp_path("bad.vcd");
        std::ofstream(p) << head << body;
        if (ok) EXPECT_NO_THROW(parse_vcd(p)) << body;
        else EXPECT_THROW(parse_vcd(p), std::runtime_error) << body;
    };
    check("#0\n$dumpvars\n0!\nb0 \"\n$end\n#5\n1!\nb1111 \"\n#9\n", true);
    check("#0\n$dumpvars\n0!\nb0 \"\n$end\n#5\n1#\n", false);           // undeclared id
    check("#0\n$dumpvars\n0!\nb0 \"\n$end\n#5\n1!\n#4\n0!\n", false);    // time goes back
    check("#0\n$dumpvars\n0!\nb0 \"\n$end\n#5\nb10000 \"\n", false);     // 5 bits in 4
    check("#0\n$dumpvars\n0!\n$end\n", false);                            // y has no value
    check("#0\n$dumpvars\n0!\nb0 \"\n$end\n#5\n0!\n", false);            // redundant
    check("#0\n$dumpvars\n0!\nb0 \"\n$end\n#5\nbx \"\n", false);         // not 0/1
}

TEST(VcdOptions, WindowParsesNanosecondsAndRefusesNonsense) {
    VcdOptions o;
    o.set_window_ns("1000:5000.5");
    EXPECT_EQ(o.start, 1'000'000u);
    EXPECT_EQ(o.end, 5'000'500u);
    o.set_window_ns(":20");
    EXPECT_EQ(o.start, 0u);
    EXPECT_EQ(o.end, 20'000u);
    o.set_window_ns("7:");
    EXPECT_EQ(o.start, 7'000u);
    EXPECT_EQ(o.end, std::numeric_limits<Tick>::max());
    for (const char* bad : {"", "12", "a:b", "5:1", "3:3", "-1:4", "1:2x"})
        EXPECT_THROW(o.set_window_ns(bad), std::invalid_argument) << bad;
}

// mpush loads a 128-row tile in 128 cycles, then a 256-row matmul streams 256 cycles: mxu0 is
// busy from 0 to 384 cycles, its op mpush then matmul; mxu1 never. All three instructions
// (mpush, matmul, halt) issue in cycle 0 (issue width 4): the core's opcode shows the last,
// halt, for that cycle.
TEST(VcdWriter, MatmulMakesTheMatrixUnitBusyAtTheRightTimes) {
    auto w = run_waves(xtr("mm", "mpush s0=v1 shape=128x128x128\nmatmul d=m0 s0=v2 shape=256x128x128\n"), {VcdOptions{}});
    const Vcd& v = w->vcd();
    const Tick c = w->cycle;
    EXPECT_EQ(v.var(kCore + "mxu0.busy").changes, (Changes{{0, 1}, {384 * c, 0}}));
    EXPECT_EQ(v.var(kCore + "mxu0.op").changes,
              (Changes{{0, unsigned(Opcode::MPush)}, {128 * c, unsigned(Opcode::MatMul)}, {384 * c, 0}}));
    EXPECT_EQ(v.var(kCore + "mxu1.busy").changes, (Changes{{0, 0}}));
    EXPECT_EQ(v.var(kCore + "scalar.opcode").changes, (Changes{{0, unsigned(Opcode::Halt)}, {c, 0}}));
    EXPECT_EQ(v.var(kCore + "scalar.stall").changes, (Changes{{0, 0}}));
    // The run ends when the matmul's last result is out: 128 + (256 + 128 + 128 - 2) cycles.
    EXPECT_EQ(w->end, (128 + 256 + 128 + 128 - 2) * c);
    EXPECT_EQ(v.times.back(), w->end);
}

// valu of 4096 elements occupies the ALU 4 cycles and completes after 2 more; the next valu
// reads its result: it waits (dependency) from cycle 1 to cycle 6, with halt behind it in the
// issue queue, which holds both until they issue together at cycle 6.
TEST(VcdWriter, DependencyStallAndIssueQueueDepth) {
    auto w = run_waves(xtr("dep", "valu d=v1 s0=v0 count=4096\nvalu d=v2 s0=v1 count=4096\n"), {VcdOptions{}});
    const Vcd& v = w->vcd();
    const Tick c = w->cycle;
    EXPECT_EQ(v.var(kCore + "scalar.stall").changes,
              (Changes{{0, 0}, {c, VcdWriter::kDependency}, {6 * c, 0}}));
    EXPECT_EQ(v.var(kCore + "scalar.iq_depth").changes, (Changes{{0, 2}, {6 * c, 0}}));
    EXPECT_EQ(v.var(kCore + "scalar.opcode").changes,
              (Changes{{0, unsigned(Opcode::VAlu)}, {c, 0}, {6 * c, unsigned(Opcode::Halt)}, {7 * c, 0}}));
    EXPECT_EQ(v.var(kCore + "vpu0.busy").changes, (Changes{{0, 1}, {4 * c, 0}, {6 * c, 1}, {10 * c, 0}}));
    EXPECT_EQ(v.var(kCore + "vpu0.op").changes,
              (Changes{{0, unsigned(Opcode::VAlu)}, {4 * c, 0}, {6 * c, unsigned(Opcode::VAlu)}, {10 * c, 0}}));
}

// A DMA waits in the engine's queue for setup_latency (16 cycles by default) before its first
// chunk, then has its bytes in flight until its last byte lands; the swait behind it is a sync
// stall until exactly then. HBM serves the bytes read, VMEM the bytes written.
TEST(VcdWriter, DmaQueueInflightBytesAndSyncStall) {
    auto w = run_waves(xtr("dma", "dma src=hbm:0x0 dst=vmem:0x0 bytes=262144 flag=7 val=2\nswait flag=7 cond=ge val=2\n"),
                       {VcdOptions{}});
    const Vcd& v = w->vcd();
    const Tick c = w->cycle;
    ASSERT_EQ(w->tee.dmas.size(), 1u);
    const DmaEvent& d = w->tee.dmas[0];
    EXPECT_EQ(d.issue, 0u);
    EXPECT_EQ(d.start, 16 * c);
    EXPECT_EQ(v.var("xpu.chip0.dma0.queued").changes, (Changes{{0, 1}, {16 * c, 0}}));
    EXPECT_EQ(v.var("xpu.chip0.dma0.inflight_bytes").changes, (Changes{{0, 0}, {16 * c, 262144}, {d.complete, 0}}));
    EXPECT_EQ(v.var("xpu.chip0.dma1.queued").changes, (Changes{{0, 0}}));
    // swait: issued when the flag is raised, a sync stall from cycle 1 until then.
    EXPECT_EQ(v.var(kCore + "scalar.stall").changes, (Changes{{0, 0}, {c, VcdWriter::kSyncWait}, {d.complete, 0}}));
    EXPECT_EQ(v.final_value("xpu.chip0.hbm.bytes_served"), 262144u);
    EXPECT_EQ(v.final_value(kCore + "vmem.bytes_served"), 262144u);
    EXPECT_EQ(v.final_value("xpu.chip0.hbm.requests"), 0u);
    EXPECT_GT(v.high_time("xpu.chip0.hbm.requests", w->end), 0u);
}

// A whole GEMM: a strict file with every block's signals, in display order, whose busy time
// per unit is the model's own busy time (both are the union of the occupancy intervals), whose
// HBM bytes are the run's, and that ends with everything idle.
TEST(VcdWriter, GemmSampleAgreesWithTheModels) {
    auto w = run_waves(source_path("traces/samples/gemm-1k.bin"), {VcdOptions{}});
    ASSERT_TRUE(w->result.completed);
    const Vcd& v = w->vcd();
    const VcdWriter& wr = *w->writers[0];
    // 1 core x 3 + 9 units x 2 + 4 DMA x 2 + 2 memories x 2 + 32 HBM channels x 2 + VMEM
    // bytes allocated.
    EXPECT_EQ(v.vars.size(), 98u);
    EXPECT_EQ(wr.declared_signals(), 98u);
    std::vector<std::string> order = wr.selected_signals();
    ASSERT_EQ(order.size(), 98u);
    EXPECT_EQ(order[0], kCore + "scalar.opcode");
    EXPECT_EQ(order[3], kCore + "vpu0.busy");
    EXPECT_EQ(order[5], kCore + "mxu0.busy");
    EXPECT_EQ(order[20], kCore + "mxu7.op");
    EXPECT_EQ(order[21], "xpu.chip0.dma0.queued");
    EXPECT_EQ(order[29], "xpu.chip0.hbm.requests");
    EXPECT_EQ(order[31], "xpu.chip0.hbm.ch00.requests");
    EXPECT_EQ(order[32], "xpu.chip0.hbm.ch00.bytes_served");
    EXPECT_EQ(order[94], "xpu.chip0.hbm.ch31.bytes_served");
    EXPECT_EQ(order[95], kCore + "vmem.requests");
    EXPECT_EQ(order[97], kCore + "vmem.bytes_allocated");
    for (const auto& n : order) EXPECT_TRUE(v.has(n)) << n;
    for (const auto& u : w->result.units) {
        if (u.kind != "MatrixUnit" && u.kind != "VectorUnit") continue;
        EXPECT_EQ(v.high_time(u.name + ".busy", w->end), ns_to_ticks(u.busy_ns)) << u.name;
        EXPECT_EQ(v.final_value(u.name + ".busy"), 0u) << u.name;
        EXPECT_EQ(v.final_value(u.name + ".op"), 0u) << u.name;
    }
    EXPECT_GT(v.high_time(kCore + "mxu0.busy", w->end), w->end / 2);
    EXPECT_EQ(v.final_value("xpu.chip0.hbm.bytes_served"), w->result.hbm_bytes_read + w->result.hbm_bytes_written);
    for (const char* n : {"xpu.chip0.hbm.requests", "xpu.chip0.core0.vmem.requests", "xpu.chip0.dma0.queued",
                          "xpu.chip0.dma0.inflight_bytes", "xpu.chip0.core0.scalar.iq_depth",
                          "xpu.chip0.core0.scalar.opcode", "xpu.chip0.core0.scalar.stall",
                          "xpu.chip0.hbm.ch00.requests", "xpu.chip0.hbm.ch31.requests",
                          "xpu.chip0.core0.vmem.bytes_allocated"})
        EXPECT_EQ(v.final_value(n), 0u) << n;
    // Issue queue depth never exceeds the queue plus one fetch bundle in flight.
    std::uint64_t max_iq = 0;
    for (const auto& [t, x] : v.var(kCore + "scalar.iq_depth").changes) max_iq = std::max(max_iq, x);
    EXPECT_GT(max_iq, 0u);
    EXPECT_LE(max_iq, 32u + 4u);
    EXPECT_EQ(v.times.front(), 0u);
    EXPECT_EQ(v.times.back(), w->end);

    // The GTKWave save file lists every signal (vectors with their range) under one group per
    // block, and its translate filters exist and name the opcodes and stall causes.
    std::string gtkw = slurp(wr.gtkw_path());
    EXPECT_NE(gtkw.find("[dumpfile] \""), std::string::npos);
    EXPECT_NE(gtkw.find("\n" + kCore + "mxu3.busy\n"), std::string::npos);
    EXPECT_NE(gtkw.find("\n" + kCore + "mxu3.op[7:0]\n"), std::string::npos);
    EXPECT_NE(gtkw.find("\n" + kCore + "scalar.stall[2:0]\n"), std::string::npos);
    EXPECT_NE(gtkw.find("\n-chip0.core0.mxu3\n"), std::string::npos);
    EXPECT_NE(gtkw.find("^1 "), std::string::npos);
    EXPECT_NE(gtkw.find("^2 "), std::string::npos);
    EXPECT_LT(gtkw.find("-chip0.core0.scalar\n"), gtkw.find("-chip0.dma0\n"));
    EXPECT_LT(gtkw.find("-chip0.dma3\n"), gtkw.find("-chip0.hbm\n"));
    EXPECT_LT(gtkw.find("-chip0.hbm\n"), gtkw.find("-chip0.core0.vmem\n"));
    // The HBM channels: a closed group inside the HBM's, after its own two signals.
    const std::size_t chans = gtkw.find("\n@c00200\n-chip0.hbm.channels\n");
    ASSERT_NE(chans, std::string::npos);
    EXPECT_LT(gtkw.find("\nxpu.chip0.hbm.bytes_served[63:0]\n"), chans);
    EXPECT_LT(chans, gtkw.find("\nxpu.chip0.hbm.ch00.requests[31:0]\n"));
    EXPECT_LT(gtkw.find("\nxpu.chip0.hbm.ch31.bytes_served[63:0]\n"), gtkw.find("\n@1401200\n-chip0.hbm.channels\n"));
    EXPECT_LT(gtkw.find("\n@1401200\n-chip0.hbm.channels\n"), gtkw.find("\n@1000200\n-chip0.hbm\n"));
    EXPECT_NE(gtkw.find("\n" + kCore + "vmem.bytes_allocated[63:0]\n"), std::string::npos);
    std::string ops = slurp(wr.opcodes_filter_path());
    EXPECT_NE(ops.find("\n21 matmul\n"), std::string::npos) << ops;
    EXPECT_NE(ops.find("\n01 salu\n"), std::string::npos) << ops;
    EXPECT_NE(ops.find("\n30 dma\n"), std::string::npos) << ops;
    std::string stalls = slurp(wr.stalls_filter_path());
    EXPECT_NE(stalls.find("\n2 dependency\n"), std::string::npos) << stalls;
    // Nothing temporary left behind.
    EXPECT_FALSE(std::ifstream(wr.path() + ".tmp").good());
}

// One run, three writers: everything; a window in the middle; two blocks' signals. The
// windowed file starts at the window with the full run's state there and has exactly the full
// run's changes inside the window; the selective one has exactly the selected signals, with
// the full run's changes, and kept only their changes.
TEST(VcdWriter, WindowAndSelectionAgreeWithTheFullRun) {
    VcdOptions all, window, some;
    window.set_window_ns("3000:9000");
    some.signals = "*.mxu0.*, xpu.chip0.hbm.req?ests";
    auto w = run_waves(source_path("traces/samples/gemm-1k.bin"), {all, window, some});
    const Vcd &full = w->vcd(0), &win = w->vcd(1), &sel = w->vcd(2);
    ASSERT_GT(w->end, 9'000'000u);
    const Tick a = 3'000'000, b = 9'000'000;
    EXPECT_EQ(win.vars.size(), full.vars.size());
    EXPECT_EQ(win.times.front(), a);
    EXPECT_EQ(win.times.back(), b);
    for (Tick t : win.times) {
        EXPECT_GE(t, a);
        EXPECT_LE(t, b);
    }
    for (const auto& var : win.vars) {
        const auto& fc = full.var(var.name).changes;
        Changes inside;
        for (const auto& [t, x] : fc)
            if (t > a && t < b) inside.push_back({t, x});
        Changes got(var.changes.begin() + 1, var.changes.end());
        EXPECT_EQ(got, inside) << var.name;
        EXPECT_EQ(var.changes.front().second, full.at(var.name, a)) << var.name;
    }
    std::set<std::string> names;
    for (const auto& var : sel.vars) names.insert(var.name);
    EXPECT_EQ(names, (std::set<std::string>{kCore + "mxu0.busy", kCore + "mxu0.op", "xpu.chip0.hbm.requests"}));
    for (const auto& var : sel.vars) EXPECT_EQ(var.changes, full.var(var.name).changes) << var.name;
    EXPECT_LT(w->writers[2]->changes() * 4, w->writers[0]->changes());
    EXPECT_LT(w->writers[1]->changes() * 10, w->writers[0]->changes() * 6);  // 6 of the run's 12.4 us
    // The save files list what the files hold, starting where the window does.
    std::string gtkw = slurp(w->writers[2]->gtkw_path());
    EXPECT_NE(gtkw.find(kCore + "mxu0.busy\n"), std::string::npos);
    EXPECT_EQ(gtkw.find("scalar"), std::string::npos);
    EXPECT_NE(slurp(w->writers[1]->gtkw_path()).find("[timestart] 3000000\n"), std::string::npos);
}

// Beyond its memory limit the writer spills sorted runs to disk and merges them: the same file.
TEST(VcdWriter, SpillingToDiskWritesTheSameFile) {
    VcdOptions mem, disk;
    disk.memory_limit = 16 * 1024;  // 1024 records a run
    auto w = run_waves(source_path("traces/samples/gemm-1k.bin"), {mem, disk});
    EXPECT_EQ(w->writers[0]->spilled_runs(), 0u);
    EXPECT_GT(w->writers[1]->spilled_runs(), 10u);
    EXPECT_EQ(w->writers[0]->changes(), w->writers[1]->changes());
    std::string a = slurp(w->writers[0]->path()), b = slurp(w->writers[1]->path());
    EXPECT_GT(a.size(), 10000u);
    EXPECT_TRUE(a == b);
    // The run files are gone.
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_FALSE(std::ifstream(w->writers[1]->path() + ".run" + std::to_string(i) + ".tmp").good());
}

// Events arrive in host order, not time order: the file is the same whatever the order, and
// names are matched by value (not only by the models' own name pointers).
TEST(VcdWriter, OutOfOrderEventsAreSortedByTime) {
    auto cfg = platform::load_platform(source_path("configs/xpu.yaml"));
    platform::Platform plat(cfg, nullptr);
    const std::string mxu = kCore + "mxu2", hbm = "xpu.chip0.hbm", dma = "xpu.chip0.dma1";
    struct Ev {
        int kind;
        Tick a, b;
        std::uint64_t x;
    };
    std::vector<Ev> evs;
    std::mt19937 rng(42);
    for (int i = 0; i < 2000; ++i) {
        Tick a = rng() % 1'000'000, len = 1 + rng() % 50'000;
        evs.push_back({static_cast<int>(i % 3), a, a + len, 1 + rng() % 8192});
    }
    auto feed = [&](VcdWriter& wr, const std::vector<Ev>& order) {
        for (const auto& e : order) {
            if (e.kind == 0) {
                UnitOpEvent u;
                u.unit = mxu.c_str();
                u.op = e.x % 2 ? Opcode::MatMul : Opcode::MPush;
                u.start = e.a;
                u.end = e.b;
                wr.on_unit_op(u);
            } else if (e.kind == 1) {
                MemEvent m;
                m.target = hbm.c_str();
                m.bytes = e.x;
                m.arrival = e.a;
                m.done = e.b;
                wr.on_mem(m);
            } else {
                DmaEvent d;
                d.engine = dma.c_str();
                d.issue = e.a;
                d.start = e.a + (e.b - e.a) / 3;
                d.complete = e.b;
                d.bytes = e.x;
                wr.on_dma(d);
            }
        }
    };
    auto sorted = evs;
    std::stable_sort(sorted.begin(), sorted.end(), [](const Ev& p, const Ev& q) { return p.a < q.a; });
    VcdOptions o1, o2;
    o1.path = temp_path("shuffled.vcd");
    o2.path = temp_path("sorted.vcd");
    o1.signals = o2.signals = "*.mxu2.*,*.hbm.*,*.dma1.*";
    VcdWriter w1(plat, o1), w2(plat, o2);
    feed(w1, evs);
    feed(w2, sorted);
    w1.finish(1'100'000);
    w2.finish(1'100'000);
    Vcd v = parse_vcd(o1.path);
    EXPECT_EQ(v.vars.size(), 6u + 64u);  // *.hbm.*: the HBM's channels too
    EXPECT_EQ(v.final_value("xpu.chip0.hbm.requests"), 0u);
    EXPECT_EQ(v.final_value(mxu + ".busy"), 0u);
    EXPECT_EQ(v.final_value(dma + ".inflight_bytes"), 0u);
    std::uint64_t bytes = 0, max_req = 0;
    for (const auto& e : evs) bytes += e.kind == 1 ? e.x : 0;
    EXPECT_EQ(v.final_value(hbm + ".bytes_served"), bytes);
    for (const auto& [t, x] : v.var(hbm + ".requests").changes) max_req = std::max(max_req, x);
    EXPECT_GT(max_req, 5u);
    EXPECT_EQ(slurp(o1.path), slurp(o2.path));
}

// A glob that matches nothing is a mistake worth an error (it names the glob); '?' is one
// character.
TEST(VcdWriter, GlobsSelectAndAGlobMatchingNothingIsAnError) {
    auto cfg = platform::load_platform(source_path("configs/xpu.yaml"));
    platform::Platform plat(cfg, nullptr);
    VcdOptions o;
    o.path = temp_path("x.vcd");
    o.signals = "*.mxu?.busy";
    EXPECT_EQ(VcdWriter(plat, o).selected_signals().size(), 8u);
    o.signals = "*.mxu?.busy,*.mxu9.*";
    try {
        VcdWriter wr(plat, o);
        FAIL() << "expected an error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("'*.mxu9.*' matches no signal"), std::string::npos) << e.what();
    }
}

// Four chips on a ring: each link's occupancy rises while a transfer is on the wire and
// returns to zero; link signals come in their chip's group, after its memories.
TEST(VcdWriter, LinksCarryTheAllGather) {
    auto w = run_waves(source_path("traces/samples/allgather-4.bin"), {VcdOptions{}}, "configs/xpu-ring4.yaml");
    ASSERT_TRUE(w->result.completed);
    const Vcd& v = w->vcd();
    std::size_t links = 0, used = 0;
    for (const auto& var : v.vars) {
        if (var.name.rfind("xpu.links.", 0) != 0 || var.name.find(".occupancy") == std::string::npos) continue;
        ++links;
        EXPECT_EQ(var.changes.back().second, 0u) << var.name;
        std::string busy = var.name.substr(0, var.name.size() - 9) + "busy";
        EXPECT_EQ(v.high_time(busy, w->end), v.high_time(var.name, w->end)) << var.name;
        if (v.high_time(busy, w->end) > 0) ++used;
    }
    EXPECT_EQ(links, 8u);  // 4 chips x 2 directions
    EXPECT_GE(used, 4u);
    for (unsigned c = 0; c < 4; ++c) {
        Tick t = 0;
        for (unsigned d = 0; d < 4; ++d)
            t += v.high_time("xpu.chip" + std::to_string(c) + ".dma" + std::to_string(d) + ".inflight_bytes", w->end);
        EXPECT_GT(t, 0u) << c;
    }
    std::string gtkw = slurp(w->writers[0]->gtkw_path());
    EXPECT_LT(gtkw.find("-chip0.hbm\n"), gtkw.find("-links.chip0_xp\n"));
    EXPECT_LT(gtkw.find("-links.chip0_xm\n"), gtkw.find("-chip1.core0.scalar\n"));
}

// ---- HBM channels and VMEM bytes allocated ---------------------------------------------------

namespace {

const std::string kHbm = "xpu.chip0.hbm";

std::string channel_name(unsigned k) { return kHbm + ".ch" + (k < 10 ? "0" : "") + std::to_string(k); }

// The stream of a one-stream trace, from the file.
std::vector<Instruction> read_stream(const std::string& path) {
    auto tf = trace::TraceFile::open(path);
    if (tf.streams().size() != 1) throw std::runtime_error(path + ": not one stream");
    trace::StreamReader rd(tf, 0);
    std::vector<Instruction> s, buf(4096);
    for (std::size_t n; (n = rd.read(buf.data(), buf.size())) > 0;) s.insert(s.end(), buf.begin(), buf.begin() + n);
    return s;
}

// What vmem_liveness implies for bytes_allocated, with the run's times (writer start: vst
// issue, DMA start; end: the later of the write's and the last read's completion): the
// waveform as the strict reader returns it.
Changes implied_allocation(const std::vector<Instruction>& stream, const Tee& tee, std::int64_t* lowest = nullptr) {
    constexpr Tick kNone = std::numeric_limits<Tick>::max();
    std::vector<Tick> start(stream.size(), kNone), end(stream.size(), kNone);
    for (const auto& r : tee.instructions) {
        if (r.ev.index >= stream.size() || !(r.in == stream[r.ev.index])) throw std::runtime_error("event/trace mismatch");
        start[r.ev.index] = r.ev.issue;
        end[r.ev.index] = r.ev.complete;
    }
    for (const auto& d : tee.dmas) start.at(d.index) = d.start, end.at(d.index) = d.complete;
    std::map<Tick, std::int64_t> delta;
    for (const trace::VmemLive& l : trace::vmem_liveness(stream)) {
        const Tick a = start[l.writer], b = std::max(end[l.writer], l.read ? end[l.last_reader] : 0);
        if (a == kNone || b == kNone) throw std::runtime_error("an instruction without times");
        delta[a] += static_cast<std::int64_t>(l.bytes);
        delta[b] -= static_cast<std::int64_t>(l.bytes);
    }
    Changes c{{0, 0}};
    std::int64_t cur = 0, low = 0;
    for (const auto& [t, d] : delta) {
        cur += d;
        low = std::min(low, cur);
        const auto v = static_cast<std::uint64_t>(std::max<std::int64_t>(cur, 0));
        if (t == 0) c[0].second = v;
        else if (v != c.back().second) c.push_back({t, v});
    }
    if (lowest) *lowest = low;
    return c;
}

std::uint64_t high_water(const Changes& c) {
    std::uint64_t m = 0;
    for (const auto& [t, x] : c) m = std::max(m, x);
    return m;
}

}  // namespace

// One 256 KiB DMA from hbm:0 into VMEM, its swait, then a vld of the first 4 KiB. HBM: 256 KiB
// interleaved every 1 KiB over 32 channels is 8 KiB per channel, each channel's requests back
// to 0. VMEM: 256 KiB allocated from the DMA's start (16 cycles of setup); when it completes,
// all but the 4 KiB the vld reads are free (nobody reads them), the rest when the vld completes.
TEST(VcdWriter, DmaBytesPerHbmChannelAndVmemAllocation) {
    auto w = run_waves(xtr("alloc", "dma src=hbm:0x0 dst=vmem:0x0 bytes=262144 flag=7 val=1\n"
                                    "swait flag=7 cond=ge val=1\nvld d=v1 src=vmem:0x0 bytes=4096\n"),
                       {VcdOptions{}});
    const Vcd& v = w->vcd();
    const Tick c = w->cycle;
    ASSERT_EQ(w->tee.dmas.size(), 1u);
    const DmaEvent& d = w->tee.dmas[0];
    ASSERT_EQ(w->tee.instructions.size(), 4u);
    const Tick vld_done = w->tee.instructions[2].ev.complete;
    ASSERT_GT(vld_done, d.complete);
    EXPECT_EQ(v.var(kCore + "vmem.bytes_allocated").changes,
              (Changes{{0, 0}, {16 * c, 262144}, {d.complete, 4096}, {vld_done, 0}}));
    std::uint64_t sum = 0;
    for (unsigned k = 0; k < 32; ++k) {
        EXPECT_EQ(v.final_value(channel_name(k) + ".bytes_served"), 8192u) << k;
        EXPECT_EQ(v.final_value(channel_name(k) + ".requests"), 0u) << k;
        EXPECT_GT(v.high_time(channel_name(k) + ".requests", w->end), 0u) << k;
        sum += v.final_value(channel_name(k) + ".bytes_served");
    }
    EXPECT_FALSE(v.has(kHbm + ".ch32.requests"));
    EXPECT_EQ(sum, 262144u);
    EXPECT_EQ(w->tee.pieces, 256u);
}

// A reducing DMA from HBM into HBM (dst += src) reads its source and reads and writes its
// destination: the channels move 3 x 64 KiB, as the controller's bytes read + written say (its
// own bytes_served counts each request's bytes once: 2 x 64 KiB). Per channel: 2 KiB read,
// 2 x 2 KiB at the destination.
TEST(VcdWriter, HbmChannelsCountAReducingWriteTwice) {
    auto w = run_waves(xtr("reduce", "dma src=hbm:0x0 dst=hbm:0x100000 bytes=65536 dtype=f32 flag=1\n"
                                     "swait flag=1 cond=ge val=1\n"),
                       {VcdOptions{}});
    const Vcd& v = w->vcd();
    EXPECT_EQ(w->result.hbm_bytes_read + w->result.hbm_bytes_written, 3u * 65536u);
    EXPECT_EQ(v.final_value(kHbm + ".bytes_served"), 2u * 65536u);
    for (unsigned k = 0; k < 32; ++k) EXPECT_EQ(v.final_value(channel_name(k) + ".bytes_served"), 6144u) << k;
    // HBM only: nothing allocated in VMEM.
    EXPECT_EQ(v.var(kCore + "vmem.bytes_allocated").changes, (Changes{{0, 0}}));
}

namespace {

// Per channel: the channels' bytes add up to the controller's bytes read + written; no channel
// moves more than its bandwidth allows in any 2 us window (bytes are counted when a piece is
// done; the calendar's buckets allow one bucket's capacity and a piece either side). Returns the
// busiest window's bytes as a share of the channel's bandwidth x 2 us.
double check_channels(const std::string& sample) {
    VcdOptions o;
    o.signals = "xpu.chip0.hbm.*";
    auto w = run_waves(source_path(sample), {o});
    EXPECT_TRUE(w->result.completed);
    const Vcd& v = w->vcd();
    const auto* hbm = dynamic_cast<const HbmController*>(w->sim->platform().find(kHbm));
    if (!hbm) throw std::runtime_error("no HBM");
    const HbmConfig& hc = hbm->config();
    EXPECT_EQ(hc.channels, 32u);
    const double rate = hc.channel_bandwidth_gbps / 1000.0;  // bytes per ps
    Tick bucket = 1;
    while (bucket * 2 <= hc.bucket) bucket *= 2;
    const Tick window = 2'000'000;
    const double allowed = rate * static_cast<double>(window) + 2 * rate * static_cast<double>(bucket) + 2.0 * hc.interleave_bytes;
    std::uint64_t sum = 0;
    double busiest = 0;
    for (unsigned k = 0; k < hc.channels; ++k) {
        const std::string n = channel_name(k) + ".bytes_served";
        const auto& ch = v.var(n).changes;
        sum += ch.back().second;
        const std::uint64_t reported = w->tee.channel_bytes[std::make_pair(kHbm, k)];
        EXPECT_EQ(ch.back().second, reported) << n;
        EXPECT_EQ(v.final_value(channel_name(k) + ".requests"), 0u);
        for (std::size_t i = 0, j = 0; i < ch.size(); ++i) {
            while (j + 1 < ch.size() && ch[j + 1].first <= ch[i].first + window) ++j;
            const double bytes = static_cast<double>(ch[j].second - ch[i].second);
            busiest = std::max(busiest, bytes / (rate * static_cast<double>(window)));
            EXPECT_LE(bytes, allowed) << n << " from " << ch[i].first << " ps";
            if (bytes > allowed) break;
        }
    }
    EXPECT_EQ(sum, w->result.hbm_bytes_read + w->result.hbm_bytes_written) << sample;
    EXPECT_EQ(sum, v.final_value(kHbm + ".bytes_served")) << sample;  // no reducing writes here
    std::printf("%s: %llu bytes over 32 channels (= HBM bytes read + written %llu), busiest 2 us of a channel: "
                "%.2f%% of its %.1f GB/s (allowed: %.2f%%)\n",
                sample.c_str(), static_cast<unsigned long long>(sum),
                static_cast<unsigned long long>(w->result.hbm_bytes_read + w->result.hbm_bytes_written), 100 * busiest,
                hc.channel_bandwidth_gbps, 100 * allowed / (rate * static_cast<double>(window)));
    return busiest;
}

}  // namespace

// The decode layer is bound by HBM bandwidth: its channels run at their peak, so the check bites.
TEST(VcdWriter, HbmChannelsConserveBytesAndKeepToTheirBandwidthDecode) {
    const double busiest = check_channels("traces/samples/decode-layer.bin");
    EXPECT_GT(busiest, 0.9);
    RecordProperty("busiest_channel_pct", std::to_string(100 * busiest));
}

TEST(VcdWriter, HbmChannelsConserveBytesAndKeepToTheirBandwidthGemm) {
    const double busiest = check_channels("traces/samples/gemm-1k.bin");
    EXPECT_GT(busiest, 0.0);
    RecordProperty("busiest_channel_pct", std::to_string(100 * busiest));
}

// The GEMM sample's VMEM bytes allocated is exactly what vmem_liveness implies for its stream
// (read from the trace file) with the run's times: never negative, never above the VMEM's
// capacity, back to 0 at the end, the same high-water mark.
TEST(VcdWriter, VmemBytesAllocatedIsWhatLivenessImplies) {
    const std::string path = source_path("traces/samples/gemm-1k.bin");
    auto w = run_waves(path, {VcdOptions{}});
    ASSERT_TRUE(w->result.completed);
    const Vcd& v = w->vcd();
    const std::string sig = kCore + "vmem.bytes_allocated";
    std::int64_t lowest = 0;
    const Changes want = implied_allocation(read_stream(path), w->tee, &lowest);
    const Changes& got = v.var(sig).changes;
    EXPECT_EQ(lowest, 0);
    EXPECT_EQ(got, want);
    const auto* vmem = dynamic_cast<const Vmem*>(w->sim->platform().find(kCore + "vmem"));
    ASSERT_NE(vmem, nullptr);
    EXPECT_GT(high_water(got), 0u);
    EXPECT_LE(high_water(got), vmem->config().capacity);
    EXPECT_EQ(high_water(got), high_water(want));
    EXPECT_EQ(got.back().second, 0u);
    EXPECT_EQ(got.front(), (std::pair<Tick, std::uint64_t>{0, 0}));
    std::printf("gemm-1k: VMEM high-water %llu bytes of %llu, %zu changes\n",
                static_cast<unsigned long long>(high_water(got)), static_cast<unsigned long long>(vmem->config().capacity),
                got.size());
    RecordProperty("vmem_high_water_bytes", std::to_string(high_water(got)));
}

// Selected alone, bytes_allocated still sees every instruction and DMA of its stream (attach
// sets the writer on the core and the DMA engines), and the file has that one signal.
TEST(VcdWriter, BytesAllocatedAloneAttachesItsSources) {
    const std::string path = source_path("traces/samples/decode-layer.bin");
    auto cfg = platform::load_platform(source_path("configs/xpu.yaml"));
    platform::Simulation sim(cfg, path);
    Tee tee;  // records only: the writer is attached to the modules it needs
    VcdOptions o;
    o.path = temp_path("alloc-only.vcd");
    o.signals = "*.bytes_allocated";
    VcdWriter wr(sim.platform(), o);
    EXPECT_EQ(wr.selected_signals(), (std::vector<std::string>{kCore + "vmem.bytes_allocated"}));
    wr.attach(sim.platform());
    auto r = sim.run();
    ASSERT_TRUE(r.completed);
    wr.finish(ns_to_ticks(r.simulated_ns));
    Vcd v = parse_vcd(o.path);
    EXPECT_EQ(v.vars.size(), 1u);
    const auto& c = v.var(kCore + "vmem.bytes_allocated").changes;
    EXPECT_GT(c.size(), 10u);
    EXPECT_GT(high_water(c), 0u);
    EXPECT_EQ(c.back().second, 0u);
}

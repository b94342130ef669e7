// A new module type, defined in this file only, registered with one call, is instantiated from a
// platform description, runs, and shows up everywhere the platform describes its modules: the
// waveforms (the signals it offers), the transaction log's header (its unit line: role, chip,
// facts) and the analysis's list of units. Nothing outside this file knows the type: the
// builder, the log header, the waveform writer and the run's accounting ask the module itself
// (XpuModule::role, chip, facts, waveforms).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <tlm_utils/multi_passthrough_target_socket.h>

#include "analysis/outputs.h"
#include "analysis/run_data.h"
#include "models/sim_time.h"
#include "models/unit_command.h"
#include "platform/module_types.h"
#include "platform/txlog_meta.h"
#include "platform/txlog_writer.h"
#include "platform/vcd_writer.h"
#include "tests/sim_fixture.h"
#include "traces/txlog_header.h"

using namespace xpu;
using namespace xpu::test;

namespace {

// A scratch memory of its own kind: a fixed bandwidth, no latency, counts what it serves. Its
// role is Other (none of the questions the platform asks by role concern it), but it offers a memory's waveforms.
struct ScratchConfig {
    std::uint64_t capacity = 1 << 20;
    double bandwidth_gbps = 10;
    std::uint64_t base = 0;  // filled in by the builder
    void declare(ParamVisitor& v) {
        v.bytes("capacity", capacity, 1, 1ull << 40, "bytes it holds");
        v.real("bandwidth_gbps", bandwidth_gbps, 0.001, 1e6, "GB/s", "bytes per ns it moves");
    }
};

class ScratchMem : public XpuModule {
public:
    tlm_utils::multi_passthrough_target_socket<ScratchMem, 32, tlm::tlm_base_protocol_types, 0,
                                               sc_core::SC_ZERO_OR_MORE_BOUND>
        port;
    ScratchMem(const sc_core::sc_module_name& n, const ScratchConfig& c) : XpuModule(n), port("port"), cfg_(c) {
        port.register_b_transport(this, &ScratchMem::b_transport);
        expose_target("port", port, true, false);
    }
    const char* kind() const override { return "ScratchMem"; }
    Role role() const override { return Role::Other; }
    ModuleFacts facts() const override {
        ModuleFacts f;
        f.peak_gbps = cfg_.bandwidth_gbps;
        f.capacity = cfg_.capacity;
        f.bytes_read = read_;
        f.bytes_written = written_;
        return f;
    }
    Waveforms waveforms() const override {
        Waveforms w;
        w.set = WaveSet::Traffic;  // requests, bytes_served
        w.order = 2;               // after the HBM and the VMEM
        return w;
    }
    std::vector<Stat> stats() const override {
        return {{"bytes_written", static_cast<double>(written_), true, "bytes written into it", "bytes"}};
    }

private:
    void b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
        const std::uint64_t addr = gp.get_address(), len = gp.get_data_length();
        if (addr < cfg_.base || addr - cfg_.base + len > cfg_.capacity) {
            gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        const Tick arrival = now_ticks() + delay.value();
        const Tick start = std::max(arrival, free_);
        free_ = start + static_cast<Tick>(static_cast<double>(len) * 1000.0 / cfg_.bandwidth_gbps);
        (gp.is_write() ? written_ : read_) += len;
        if (recorder_) recorder_->on_mem(mem_event(gp, name(), gp.is_write(), addr, len, arrival, free_));
        delay = to_sc(free_ - now_ticks());
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    }
    ScratchConfig cfg_;
    Tick free_ = 0;
    std::uint64_t read_ = 0, written_ = 0;
};


constexpr std::uint64_t kScratchBase = 0x10000000000ull;  // 1 TiB: in the hbm space, past the HBM's 32 GiB

// configs/xpu.yaml with a scratch memory on the chip's interconnect, in the hbm address space.
std::string platform_with_scratch() {
    std::string y = file_bytes(source_path("configs/xpu.yaml"));
    auto insert_after = [&](const std::string& anchor, const std::string& text) {
        const auto at = y.find(anchor);
        if (at == std::string::npos) throw std::runtime_error("configs/xpu.yaml: no '" + anchor + "'");
        y.insert(y.find('\n', at) + 1, text);
    };
    insert_after("    flags: {type: SyncFlags", "    scratch: {type: ScratchMem, capacity: 1MiB, bandwidth_gbps: 16}\n");
    insert_after("    - {space: vmem, target: core0.vmem", "    - {space: hbm,  target: scratch,    base: 0x10000000000}\n");
    insert_after("    - noc.out[1] -> core0.vmem.port", "    - noc.out[2] -> scratch.port\n");
    const std::string path = temp_path("xpu-scratch.yaml");
    std::ofstream(path) << y;
    return path;
}

// The final value of every signal of a VCD file, by full name.
std::map<std::string, std::uint64_t> final_values(const std::string& vcd) {
    std::istringstream is(file_bytes(vcd));
    std::vector<std::string> scope;
    std::map<std::string, std::string> name_of;  // id -> full name
    std::map<std::string, std::uint64_t> value;
    std::string line;
    while (std::getline(is, line)) {
        std::istringstream ls(line);
        std::string w;
        ls >> w;
        if (w == "$scope") {
            std::string kind, name;
            ls >> kind >> name;
            scope.push_back(name);
        } else if (w == "$upscope") {
            scope.pop_back();
        } else if (w == "$var") {
            std::string wire, width, id, leaf;
            ls >> wire >> width >> id >> leaf;
            std::string full;
            for (const auto& s : scope) full += s + ".";
            name_of[id] = full + leaf;
        } else if (!w.empty() && (w[0] == 'b' || w[0] == '0' || w[0] == '1') && w[0] != '$') {
            std::string id;
            std::uint64_t v = 0;
            if (w[0] == 'b') {
                ls >> id;
                for (char c : w.substr(1)) v = 2 * v + (c == '1');
            } else {
                v = static_cast<std::uint64_t>(w[0] - '0');
                id = w.substr(1);
            }
            if (name_of.count(id)) value[name_of[id]] = v;
        }
    }
    return value;
}

}  // namespace

TEST(ModuleType, ANewTypeRegisteredInATestShowsInTheWaveformsTheLogAndTheAnalysis) {
    platform::register_module_type(platform::model_type<ScratchMem, ScratchConfig>(
        "ScratchMem", "a test's scratch memory (socket: port)",
        {[](ScratchConfig& k, const platform::BuildContext& ctx) { k.base = ctx.base.value_or(0); },
         [](const ScratchConfig& k) { return std::optional<std::uint64_t>(k.capacity); }}));
    const std::string yaml = platform_with_scratch();
    constexpr std::uint64_t kBytes = 64 << 10;
    const std::string trace = write_trace("scratch.bin", [&](gen::Emitter& e) {
        e.dma(0, Space::Hbm, 0, Space::Hbm, kScratchBase, kBytes, 1);  // HBM -> scratch, flag 1 when done
        e.swait(1, Cond::Ge, 1);
    });

    const std::string out = temp_path("scratch-out");
    std::filesystem::create_directories(out);
    platform::PlatformConfig cfg = platform::load_platform(yaml);
    platform::Simulation sim(cfg, trace);
    ASSERT_TRUE(sim.check_trace());
    XpuModule* scratch = sim.platform().find("xpu.chip0.scratch");
    ASSERT_NE(scratch, nullptr);
    EXPECT_EQ(scratch->chip(), 0);

    platform::VcdOptions vo;
    vo.path = out + "/wave.vcd";
    platform::VcdWriter vcd(sim.platform(), vo);
    std::filesystem::copy_file(trace, out + "/txlog.trace.bin");
    txlog::Writer log(out + "/txlog.bin", txlog_header(sim.platform(), trace, yaml));
    RecorderFanOut fan;
    fan.add(&log);
    fan.add(&vcd);
    sim.platform().set_recorder(&fan);
    const platform::RunResult r = sim.run();
    ASSERT_TRUE(r.completed) << r.diagnosis;
    log.finish(ns_to_ticks(r.simulated_ns), 0);
    vcd.finish(ns_to_ticks(r.simulated_ns));
    EXPECT_EQ(scratch->facts().bytes_written, kBytes);

    // The waveforms: the memory signals it offers, its bytes all served by the end.
    const auto v = final_values(vo.path);
    ASSERT_TRUE(v.count("xpu.chip0.scratch.requests"));
    ASSERT_TRUE(v.count("xpu.chip0.scratch.bytes_served"));
    EXPECT_FALSE(v.count("xpu.chip0.scratch.bytes_allocated"));  // it did not ask for VMEM liveness
    EXPECT_EQ(v.at("xpu.chip0.scratch.bytes_served"), kBytes);
    EXPECT_EQ(v.at("xpu.chip0.scratch.requests"), 0u);
    EXPECT_NE(file_bytes(vcd.gtkw_path()).find("-chip0.scratch\n"), std::string::npos);

    // The log header: its unit line, with its role and facts.
    txlog::Header h;
    std::string err;
    ASSERT_TRUE(txlog::parse_header(txlog_meta(sim.platform(), trace, yaml), h, err)) << err;
    const txlog::Unit* u = nullptr;
    for (const auto& x : h.units)
        if (x.path == "xpu.chip0.scratch") u = &x;
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->kind, "ScratchMem");
    EXPECT_EQ(u->role, Role::Other);
    EXPECT_EQ(u->chip, 0);
    EXPECT_EQ(u->peak_gbps, 16);
    EXPECT_EQ(u->capacity, 1u << 20);

    // The analysis: the unit in the run it reads back, the whole analysis written.
    const analysis::RunData run = analysis::load_run(out);
    const analysis::Unit* au = nullptr;
    for (const auto& x : run.units)
        if (x.path == "xpu.chip0.scratch") au = &x;
    ASSERT_NE(au, nullptr);
    EXPECT_EQ(au->kind, "ScratchMem");
    EXPECT_EQ(au->role, Role::Other);
    EXPECT_EQ(au->chip, 0);
    EXPECT_EQ(au->capacity, 1u << 20);
    EXPECT_GE(run.mems_not_kept, kBytes / 4096);  // its transactions read, checked, counted (not HBM, not a link)
    std::ostringstream report;
    analysis::OutputOptions oo;
    oo.print = false;
    oo.html = false;
    analysis::analyze_folder(out, report, oo);
    EXPECT_TRUE(std::filesystem::exists(out + "/analysis.json"));
}

// What the standard models say of themselves on the 4-chip ring (configs/xpu-ring4.yaml): the
// chip the builder set (a link: none, and the chip it leaves), the facts and the waveforms
// each role offers.
TEST(ModuleType, TheModelsDescribeThemselves) {
    const platform::PlatformConfig cfg = platform::load_platform(source_path("configs/xpu-ring4.yaml"));
    platform::Platform p(cfg, nullptr);
    std::map<Role, int> seen;
    for (XpuModule* m : p.modules()) {
        const std::string name = m->name();
        const ModuleFacts f = m->facts();
        const Waveforms w = m->waveforms();
        ++seen[m->role()];
        if (m->role() == Role::Link) {
            EXPECT_EQ(m->chip(), -1) << name;
            EXPECT_EQ("xpu.links.chip" + std::to_string(f.from_chip) + "_", name.substr(0, name.find('_') + 1)) << name;
            EXPECT_EQ(f.peak_gbps, 50) << name;
            EXPECT_EQ(w.set, WaveSet::Wire) << name;
            continue;
        }
        ASSERT_GE(m->chip(), 0) << name;
        EXPECT_EQ(name.rfind("xpu.chip" + std::to_string(m->chip()) + ".", 0), 0u) << name;
        switch (m->role()) {
            case Role::Hbm:
                EXPECT_EQ(f.peak_gbps, 1200) << name;
                EXPECT_EQ(f.capacity, 32ull << 30) << name;
                EXPECT_EQ(w.set, WaveSet::Traffic) << name;
                EXPECT_EQ(w.channels, 32u) << name;
                EXPECT_FALSE(w.allocation) << name;
                break;
            case Role::Vmem:
                EXPECT_EQ(f.capacity, 32ull << 20) << name;
                EXPECT_EQ(w.set, WaveSet::Traffic) << name;
                EXPECT_EQ(w.channels, 0u) << name;
                EXPECT_TRUE(w.allocation) << name;
                break;
            case Role::Dma:
                EXPECT_EQ(f.peak_gbps, 1200) << name;
                EXPECT_EQ(w.set, WaveSet::Queue) << name;
                break;
            case Role::Flags: EXPECT_GT(f.capacity, 0u) << name; break;
            case Role::Core:
                EXPECT_EQ(f.core, 0) << name;
                EXPECT_GT(f.cycle, 0u) << name;
                EXPECT_GT(f.issue_slot, 0u) << name;
                EXPECT_LE(f.issue_slot, f.cycle) << name;
                EXPECT_EQ(w.set, WaveSet::Issue) << name;
                break;
            case Role::Matrix:
                EXPECT_GT(f.peak_flops_per_s, 0) << name;
                EXPECT_EQ(w.set, WaveSet::Ops) << name;
                break;
            case Role::Vector: EXPECT_EQ(w.set, WaveSet::Ops) << name; break;
            default: EXPECT_EQ(w.set, WaveSet::None) << name; break;
        }
    }
    EXPECT_EQ(seen[Role::Link], 8);  // 4 chips x 2 directions
    EXPECT_EQ(seen[Role::Hbm], 4);
    EXPECT_EQ(seen[Role::IciPort], 4);
    EXPECT_EQ(seen[Role::Core], 4);
}

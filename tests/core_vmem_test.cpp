// Whose VMEM a `vmem:ADDR` operand addresses (docs/trace-format.md): the issuing core's own, and
// `vmem@C:ADDR` that core's VMEM on chip C. One rule (platform/builder.h: space_bases) decides
// it for the models (DmaEngine, VectorUnit), the pre-run check and the transaction log's header
// that the analysis reads. The reference here is the bytes each Vmem module counts (its own
// statistics, independent of the address arithmetic under test) and the global addresses the
// transactions carry, against the address map written in the description. Each TEST is its own
// process (one SystemC elaboration each).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "analysis/dependencies.h"
#include "models/vmem.h"
#include "platform/builder.h"
#include "platform/config_error.h"
#include "platform/platform_config.h"
#include "tests/analysis_fixture.h"
#include "tests/sim_fixture.h"
#include "traces/trace_text.h"

using namespace xpu;
using namespace xpu::platform;
using namespace xpu::test;

namespace {

const std::string kTwoCore = "tests/data/bad/two-core.yaml";          // core0.vmem @ 0x1'0000'0000, core1.vmem @ 0x2'0000'0000
const std::string kTwoChips = "configs/xpu-2chip-2core.yaml";         // core0.vmem @ 0x1000'0000'0000, core1.vmem @ 0x1100'0000'0000
constexpr std::uint64_t kTwoCoreVmem[2] = {0x100000000ull, 0x200000000ull};
constexpr std::uint64_t kTwoChipsVmem[2] = {0x100000000000ull, 0x110000000000ull};

// Assembles `text` (a whole .xtr file after the version line) into a binary trace.
std::string trace_of(const std::string& name, const std::string& text) {
    std::string src = temp_path(name + ".xtr"), bin = temp_path(name + ".bin");
    std::ofstream(src) << ".xtr 1.0\n" << text;
    trace::assemble(src, bin);
    return bin;
}

const Vmem& vmem(const Run& r, const std::string& path) {
    const auto* v = dynamic_cast<const Vmem*>(r.sim->platform().find(path));
    if (!v) throw std::runtime_error("no Vmem " + path);
    return *v;
}

// The lowest and highest+1 global address of the writes recorded on `target`.
std::pair<std::uint64_t, std::uint64_t> written_range(const Run& r, const std::string& target) {
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (const MemEvent& m : r.rec.mems)
        if (m.write && target == m.target) {
            lo = std::min(lo, m.addr);
            hi = std::max(hi, m.addr + m.bytes);
        }
    return {lo, hi};
}

// A two-core chip: VMEMs inside the cores' containers or at the top (`vmem0`, `vmem1`), the
// vector units bound to their VMEM directly or through an interconnect `vnoc` (then the
// bindings do not say which VMEM is whose). `cores` 1 or 2.
std::string two_vmem_platform(const std::string& name, unsigned cores, bool in_containers, bool direct) {
    auto vm = [&](unsigned k) { return in_containers ? "core" + std::to_string(k) + ".vmem" : "vmem" + std::to_string(k); };
    std::ostringstream y;
    y << "xpusim: 1\nname: " << name << "\nchip:\n  clock_ghz: 1.0\n  modules:\n";
    for (unsigned k = 0; k < 2; ++k) {
        if (k < cores) {
            y << "    core" << k << ":\n      injector: {type: TraceInjector}\n      scalar: {type: ScalarCore, core: " << k
              << "}\n      vpu0: {type: VectorUnit, lanes: 8, sublanes: 8}\n";
            if (in_containers) y << "      vmem: {type: Vmem, capacity: 1MiB}\n";
        }
        if (!in_containers) y << "    vmem" << k << ": {type: Vmem, capacity: 1MiB}\n";
        if (in_containers && k >= cores) y << "    core" << k << ":\n      vmem: {type: Vmem, capacity: 1MiB}\n";
    }
    y << "    dma0: {type: DmaEngine}\n    noc: {type: Interconnect}\n    vnoc: {type: Interconnect}\n"
         "    hbm: {type: HbmController, capacity: 1GiB, channels: 2}\n    flags: {type: SyncFlags, flags: 16}\n";
    // Two banks one after the other: one VMEM space for a core that cannot tell them apart.
    y << "  address_map:\n    - {space: hbm, target: hbm, base: 0x0}\n"
      << "    - {space: vmem, target: " << vm(0) << ", base: 0x100000000}\n"
      << "    - {space: vmem, target: " << vm(1) << ", base: 0x100100000}\n";
    y << "  bindings:\n";
    for (unsigned k = 0; k < cores; ++k) {
        const std::string c = "core" + std::to_string(k);
        y << "    - " << c << ".scalar.imem -> " << c << ".injector.port\n    - " << c << ".scalar.vpu[0] -> " << c
          << ".vpu0.cmd\n    - " << c << ".scalar.flags -> flags.port\n    - " << c << ".vpu0.mem -> "
          << (direct ? vm(k) + ".port" : std::string("vnoc.in")) << "\n";
    }
    y << "    - core0.scalar.dma[0] -> dma0.cmd\n    - dma0.mem -> noc.in\n    - dma0.flags -> flags.port\n"
         "    - noc.out[0] -> hbm.port\n    - noc.out[1] -> "
      << vm(0) << ".port\n    - noc.out[2] -> " << vm(1) << ".port\n"
      << "    - vnoc.out[0] -> " << vm(0) << ".port\n    - vnoc.out[1] -> " << vm(1) << ".port\n";
    const std::string path = temp_path(name + ".yaml");
    std::ofstream(path) << y.str();
    return path;
}

}  // namespace

// ---- the rule (platform/builder.h: space_bases) -------------------------------------------

TEST(CoreVmemRule, OneVmemIsEveryCoresAndSeveralAreOnePerCore) {
    // One vmem entry (every shipped single-core platform): the core's, at its base.
    SpaceBases one = space_bases(load_platform(source_path("configs/xpu.yaml")));
    ASSERT_EQ(one.vmem_of_core.size(), 1u);
    EXPECT_EQ(one.vmem_of_core.at(0).target, "core0.vmem");
    EXPECT_EQ(one.vmem_base(0), 0x100000000000ull);
    // Two cores, each vector unit bound to its VMEM: the bindings decide.
    SpaceBases two = space_bases(load_platform(source_path(kTwoCore)));
    EXPECT_EQ(two.vmem_of_core.at(0).target, "core0.vmem");
    EXPECT_EQ(two.vmem_of_core.at(1).target, "core1.vmem");
    EXPECT_EQ(two.vmem_bases(), (std::vector<std::uint64_t>{kTwoCoreVmem[0], kTwoCoreVmem[1]}));
    // The lowest vmem base stays the space's base (what a one-core chip with banks uses).
    EXPECT_EQ(two.base[static_cast<unsigned>(Space::Vmem)], kTwoCoreVmem[0]);
}

TEST(CoreVmemRule, TheContainerDecidesWhenTheBindingsDoNot) {
    // Vector units behind an interconnect: each core's VMEM is the one beside its ScalarCore.
    SpaceBases s = space_bases(load_platform(two_vmem_platform("containers", 2, true, false)));
    EXPECT_EQ(s.vmem_of_core.at(0).target, "core0.vmem");
    EXPECT_EQ(s.vmem_of_core.at(1).target, "core1.vmem");
    EXPECT_EQ(s.vmem_base(1), 0x100100000ull);
    // Bound directly, VMEMs at the top: the bindings decide.
    SpaceBases b = space_bases(load_platform(two_vmem_platform("bound", 2, false, true)));
    EXPECT_EQ(b.vmem_of_core.at(0).target, "vmem0");
    EXPECT_EQ(b.vmem_of_core.at(1).target, "vmem1");
}

TEST(CoreVmemRule, SeveralCoresThatCannotTellTheirVmemAreAConfigError) {
    // VMEMs at the top, vector units behind an interconnect: nothing says whose is whose.
    const std::string f = two_vmem_platform("ambiguous", 2, false, false);
    PlatformConfig cfg = load_platform(f);
    try {
        space_bases(cfg);
        FAIL() << "no ConfigError";
    } catch (const ConfigError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(f + ":"), std::string::npos) << m;
        EXPECT_NE(m.find("chip.modules.core0.scalar (core 0): cannot tell which VMEM its vmem: operands address: the "
                         "address map has 2 vmem entries (vmem0, vmem1) and a chip with several cores needs one per "
                         "core (expected exactly one of them bound to the mem socket of the core's vector units, or "
                         "exactly one in its container 'core0')"),
                  std::string::npos)
            << m;
    }
    // The run refuses it too, before anything runs (the builder applies the same rule).
    std::string t = trace_of("amb", ".stream chip=0 core=0\nhalt\n");
    EXPECT_THROW(Simulation sim(cfg, t), ConfigError);
}

TEST(CoreVmemRule, OneCoreWithBanksItCannotTellApartKeepsTheLowestBase) {
    // One core, two 1 MiB VMEM banks back to back behind an interconnect: its vmem: space starts
    // at the lowest base and runs across both (today's rule for such a chip).
    PlatformConfig cfg = load_platform(two_vmem_platform("banks", 1, false, false));
    SpaceBases s = space_bases(cfg);
    EXPECT_EQ(s.vmem_of_core.at(0).target, "");
    EXPECT_EQ(s.vmem_base(0), 0x100000000ull);
    std::string t = trace_of("banks", ".stream chip=0 core=0\nvld d=v1 src=vmem:0x100000 bytes=256\n"
                                      "vst s0=v1 dst=vmem:0xfff00 bytes=256\nhalt\n");
    Simulation sim(cfg, t);
    EXPECT_TRUE(sim.check_trace());
    RunResult r = sim.run();
    EXPECT_TRUE(r.completed) << r.diagnosis;
    // The load read bank 1 (vmem:0x100000 = its byte 0), the store wrote bank 0's last 256 bytes.
    const auto* b0 = dynamic_cast<const Vmem*>(sim.platform().find("xpu.chip0.vmem0"));
    const auto* b1 = dynamic_cast<const Vmem*>(sim.platform().find("xpu.chip0.vmem1"));
    ASSERT_TRUE(b0 && b1);
    EXPECT_EQ(b1->bytes_read(), 256u);
    EXPECT_EQ(b0->bytes_written(), 256u);
    EXPECT_EQ(b0->bytes_read() + b1->bytes_written(), 0u);
}

// ---- the models: where the bytes land --------------------------------------------------------

TEST(CoreVmem, EachCoreOfATwoCoreChipAddressesItsOwnVmem) {
    // The same offsets from both cores, different sizes: each VMEM counts its own core's bytes.
    std::string t = trace_of("own", ".stream chip=0 core=0\n"
                                    "dma src=hbm:0x0 dst=vmem:0x1000 bytes=4096 flag=1\n"
                                    "swait flag=1 cond=ge val=1\n"
                                    "vld d=v1 src=vmem:0x1000 bytes=256\n"
                                    "halt\n"
                                    ".stream chip=0 core=1\n"
                                    "dma src=hbm:0x0 dst=vmem:0x1000 bytes=8192 flag=2\n"
                                    "swait flag=2 cond=ge val=1\n"
                                    "vld d=v1 src=vmem:0x1000 bytes=512\n"
                                    "vst s0=v1 dst=vmem:0x4000 bytes=512\n"
                                    "halt\n");
    auto run = simulate(t, {}, kTwoCore);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    const Vmem& v0 = vmem(*run, "xpu.chip0.core0.vmem");
    const Vmem& v1 = vmem(*run, "xpu.chip0.core1.vmem");
    EXPECT_EQ(v0.bytes_written(), 4096u);
    EXPECT_EQ(v0.bytes_read(), 256u);
    EXPECT_EQ(v1.bytes_written(), 8192u + 512u);
    EXPECT_EQ(v1.bytes_read(), 512u);
    // The global addresses: each VMEM's base (the address map) + the operand's offset.
    EXPECT_EQ(written_range(*run, "xpu.chip0.core0.vmem"), std::make_pair(kTwoCoreVmem[0] + 0x1000, kTwoCoreVmem[0] + 0x2000));
    EXPECT_EQ(written_range(*run, "xpu.chip0.core1.vmem"), std::make_pair(kTwoCoreVmem[1] + 0x1000, kTwoCoreVmem[1] + 0x4200));
}

TEST(CoreVmem, ARemoteVmemOperandReachesTheSameCoreOnTheOtherChip) {
    // vmem@1 from chip 0's core 1 lands in chip 1's core1.vmem; from core 0, in its core0.vmem.
    std::string t = trace_of("remote", ".stream chip=0 core=0\n"
                                       "dma src=hbm:0x0 dst=vmem@1:0x2000 bytes=8192 flag=5\n"
                                       "halt\n"
                                       ".stream chip=0 core=1\n"
                                       "dma u=1 src=hbm:0x0 dst=vmem@1:0x2000 bytes=4096 flag=4\n"
                                       "halt\n"
                                       ".stream chip=1 core=1\n"
                                       "swait flag=4 cond=ge val=1\n"
                                       "swait flag=5 cond=ge val=1\n"
                                       "vld d=v1 src=vmem:0x2000 bytes=4096\n"
                                       "halt\n");
    auto run = simulate(t, {}, kTwoChips);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    EXPECT_EQ(vmem(*run, "xpu.chip1.core0.vmem").bytes_written(), 8192u);
    EXPECT_EQ(vmem(*run, "xpu.chip1.core1.vmem").bytes_written(), 4096u);
    EXPECT_EQ(vmem(*run, "xpu.chip1.core1.vmem").bytes_read(), 4096u);  // chip 1's core 1 reads what chip 0's core 1 sent
    EXPECT_EQ(vmem(*run, "xpu.chip0.core0.vmem").bytes_written() + vmem(*run, "xpu.chip0.core1.vmem").bytes_written(), 0u);
    EXPECT_EQ(written_range(*run, "xpu.chip1.core1.vmem"), std::make_pair(kTwoChipsVmem[1] + 0x2000, kTwoChipsVmem[1] + 0x3000));
    EXPECT_EQ(written_range(*run, "xpu.chip1.core0.vmem"), std::make_pair(kTwoChipsVmem[0] + 0x2000, kTwoChipsVmem[0] + 0x4000));
}

// ---- the analysis: the log header says whose VMEM is whose -----------------------------------

TEST(CoreVmemAnalysis, TheCoresVmemAccessesDoNotAlias) {
    std::string t = trace_of("alias", ".stream chip=0 core=0\nvst s0=v1 dst=vmem:0x0 bytes=256\nhalt\n"
                                      ".stream chip=0 core=1\nvst s0=v1 dst=vmem:0x0 bytes=256\nhalt\n");
    Analyzed a = analyzed(t, {}, kTwoCore);
    ASSERT_EQ(a.data.meta.at("vmem_of_core.0"), "core0.vmem");
    ASSERT_EQ(a.data.meta.at("vmem_of_core.1"), "core1.vmem");
    ASSERT_EQ(a.data.streams.size(), 2u);
    EXPECT_NE(a.data.streams[0].vmem, a.data.streams[1].vmem);
    analysis::Access x[2], y[2];
    const int nx = analysis::accesses(a.data.streams[0].code[0], a.data.streams[0], x);
    const int ny = analysis::accesses(a.data.streams[1].code[0], a.data.streams[1], y);
    EXPECT_FALSE(analysis::conflict(x, nx, y, ny)) << "the same offset in two VMEMs";
    // The control: the same two stores from one stream's view (one VMEM) do conflict.
    const int nz = analysis::accesses(a.data.streams[1].code[0], a.data.streams[0], y);
    EXPECT_TRUE(analysis::conflict(x, nx, y, nz));
}

TEST(CoreVmemAnalysis, OneVmemPerChipWritesNoVmemLines) {
    // A single-core platform's header is as before (its outputs unchanged): every stream's VMEM
    // is the chip's one.
    std::string t = trace_of("one", ".stream chip=0 core=0\nvst s0=v1 dst=vmem:0x0 bytes=256\nhalt\n");
    Analyzed a = analyzed(t);
    for (const auto& [k, v] : a.data.meta) EXPECT_EQ(k.rfind("vmem_of_core", 0), std::string::npos) << k;
    EXPECT_EQ(a.data.streams[0].vmem, 0u);
}

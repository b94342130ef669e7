// The platform description: loading (strict YAML, every error with file:line:col and the key
// path), --set overrides, elaboration errors found by the builder, and that a variant platform
// (configs/xpu-2vpu.yaml) is only a YAML change. Bad descriptions live in tests/data/configs/:
// each is tests/data/configs/tiny.yaml with one change, marked `# <- error`.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "models/sim_time.h"
#include "models/vector_unit.h"
#include "platform/builder.h"
#include "platform/config_error.h"
#include "platform/platform_config.h"
#include "platform/simulation.h"
#include "tests/sim_fixture.h"

using namespace xpu;
using namespace xpu::platform;
using namespace xpu::test;

namespace {

std::string data(const std::string& name) { return source_path("tests/data/configs/" + name); }

::testing::AssertionResult starts_with(const std::string& s, const std::string& prefix) {
    if (s.rfind(prefix, 0) == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "'" << s << "'\n  does not start with\n'" << prefix << "'";
}

::testing::AssertionResult contains(const std::string& s, const std::string& part) {
    if (s.find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "'" << s << "'\n  does not contain\n'" << part << "'";
}

// The message of the ConfigError that loading FILE (with sets) throws; a test failure if none.
std::string load_error(const std::string& file, const std::vector<std::string>& sets = {}) {
    try {
        load_platform(file, sets);
    } catch (const ConfigError& e) {
        return e.what();
    }
    ADD_FAILURE() << file << " loaded without a ConfigError";
    return "";
}

// The message of the ConfigError that elaborating FILE throws (it must load fine).
std::string elab_error(const std::string& file) {
    PlatformConfig cfg = load_platform(file);
    try {
        Platform p(cfg, nullptr);
    } catch (const ConfigError& e) {
        return e.what();
    }
    ADD_FAILURE() << file << " elaborated without a ConfigError";
    return "";
}

std::string without_first_line(const std::string& s) {
    auto nl = s.find('\n');
    return nl == std::string::npos ? "" : s.substr(nl + 1);
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream f(path);
    f << text;
    ASSERT_TRUE(f.good()) << path;
}

}  // namespace

// ---- loading ---------------------------------------------------------------------------------

TEST(PlatformConfig, DefaultPlatformLoadsAndItsDumpRoundTrips) {
    PlatformConfig cfg = load_platform(source_path("configs/xpu.yaml"));
    EXPECT_EQ(cfg.name, "xpu-v4-class-megacore");
    EXPECT_DOUBLE_EQ(cfg.clock_ghz, 1.05);
    EXPECT_EQ(cfg.chips, 1u);
    EXPECT_EQ(cfg.modules.size(), 19u);
    EXPECT_EQ(cfg.address_map.size(), 2u);
    EXPECT_EQ(cfg.bindings.size(), 26u);

    std::string dump = dump_config(cfg);
    EXPECT_TRUE(starts_with(dump, "# effective configuration of " + source_path("configs/xpu.yaml") + "\n"));
    YAML::Node parsed;
    ASSERT_NO_THROW(parsed = YAML::Load(dump)) << dump;
    ASSERT_TRUE(parsed.IsMap());
    // Defaults are filled in: queue_depth is not in xpu.yaml.
    YAML::Node mxu0 = parsed["chip"]["modules"]["core0"]["mxu0"];
    ASSERT_TRUE(mxu0.IsMap()) << dump;
    EXPECT_EQ(mxu0["type"].as<std::string>(), "MatrixUnit");
    EXPECT_EQ(mxu0["rows"].as<unsigned>(), 128u);
    EXPECT_TRUE(mxu0["queue_depth"].IsDefined()) << dump;
    EXPECT_EQ(parsed["chip"]["modules"]["core0"]["vmem"]["capacity"].as<std::string>(), "32MiB");

    // Loading the dump again gives the same dump (apart from the comment naming the file).
    std::string again_path = temp_path("dumped.yaml");
    write_text(again_path, dump);
    PlatformConfig again = load_platform(again_path);
    std::string dump2 = dump_config(again);
    EXPECT_TRUE(starts_with(dump2, "# effective configuration of " + again_path + "\n"));
    EXPECT_EQ(without_first_line(dump2), without_first_line(dump));
    EXPECT_EQ(again.modules.size(), cfg.modules.size());
    EXPECT_EQ(again.bindings.size(), cfg.bindings.size());
}

TEST(PlatformConfig, TinyPlatformLoadsAndElaborates) {
    // The control for every bad_*.yaml and elab_*.yaml: without their one change, all is fine.
    PlatformConfig cfg = load_platform(data("tiny.yaml"));
    ASSERT_EQ(cfg.modules.size(), 9u);
    Platform p(cfg, nullptr);
    EXPECT_EQ(p.modules().size(), 9u);
    EXPECT_EQ(p.cores().size(), 1u);
    ASSERT_NE(p.find("xpu.chip0.core0.mxu0"), nullptr);
    EXPECT_STREQ(p.find("xpu.chip0.core0.mxu0")->kind(), "MatrixUnit");
    ASSERT_NE(p.find("xpu.chip0.dma0"), nullptr);
    EXPECT_EQ(p.find("xpu.chip0.nothing"), nullptr);
}

TEST(PlatformConfig, UnknownKeyNamesFileLineColAndKeyPath) {
    std::string f = data("bad_unknown_key.yaml");
    std::string msg = load_error(f);
    EXPECT_TRUE(starts_with(msg, f + ":15:9: chip.modules.core0.mxu0.rowz: unknown key (known here: type, rows, cols,"));
}

TEST(PlatformConfig, WrongTypeNamesTheValue) {
    std::string f = data("bad_wrong_type.yaml");
    EXPECT_TRUE(starts_with(load_error(f),
                            f + ":13:15: chip.modules.core0.mxu0.rows: expected a non-negative integer, got 'abc'"));
}

TEST(PlatformConfig, BadSizeUnit) {
    std::string f = data("bad_size_unit.yaml");
    std::string msg = load_error(f);
    EXPECT_TRUE(starts_with(msg, f + ":17:19: chip.modules.core0.vmem.capacity: unknown size unit 'MiX'"));
    EXPECT_TRUE(contains(msg, "got '32MiX'"));
}

TEST(PlatformConfig, OutOfRange) {
    std::string f = data("bad_out_of_range.yaml");
    EXPECT_TRUE(starts_with(load_error(f), f + ":13:15: chip.modules.core0.mxu0.rows: expected a value in 1..4096, got 0"));
}

TEST(PlatformConfig, NegativeValue) {
    std::string f = data("bad_negative.yaml");
    EXPECT_TRUE(starts_with(load_error(f),
                            f + ":18:16: chip.modules.core0.vmem.ports: expected a non-negative integer, got '-2'"));
}

TEST(PlatformConfig, UnknownModuleTypeListsTheKnownOnes) {
    std::string f = data("bad_module_type.yaml");
    std::string msg = load_error(f);
    EXPECT_TRUE(starts_with(msg, f + ":12:15: chip.modules.core0.mxu0.type: unknown module type 'SystolicArray' (known: "));
    EXPECT_TRUE(contains(msg, "MatrixUnit"));
    EXPECT_TRUE(contains(msg, "HbmController"));
}

TEST(PlatformConfig, YamlSyntaxError) {
    std::string f = data("bad_syntax.yaml");
    std::string msg = load_error(f);
    // The `[` on line 23 opens a flow sequence; the parser rejects the block entry `-` that
    // follows on line 24, column 5.
    EXPECT_TRUE(starts_with(msg, f + ":24:5: YAML syntax error: "));
}

TEST(PlatformConfig, MissingChip) {
    std::string f = data("bad_no_chip.yaml");
    // Reported at the top-level mapping, which starts on line 2 (line 1 is a comment).
    EXPECT_TRUE(starts_with(load_error(f), f + ":2:1: chip: missing"));
}

TEST(PlatformConfig, AddressMapTargetMustBeAMemory) {
    std::string f = data("bad_map_not_memory.yaml");
    EXPECT_TRUE(starts_with(load_error(f),
                            f + ":25:29: chip.address_map[1].target: 'core0.mxu0' is a MatrixUnit, not a memory"));
}

TEST(PlatformConfig, OverlappingAddressRanges) {
    std::string f = data("bad_map_overlap.yaml");
    EXPECT_EQ(load_error(f), f + ":25:7: chip.address_map[1]: range of 'core0.vmem' overlaps that of 'hbm' (" + f + ":24:7)");
}

TEST(PlatformConfig, BindingToAModuleThatDoesNotExist) {
    std::string f = data("bad_binding_module.yaml");
    EXPECT_TRUE(starts_with(load_error(f), f + ":29:7: chip.bindings[2]: no module 'core0.mxu9' in chip.modules "
                                               "(binding 'core0.scalar.mxu[0] -> core0.mxu9.cmd')"));
}

TEST(PlatformConfig, MissingFile) {
    std::string f = data("no_such_file.yaml");
    EXPECT_TRUE(starts_with(load_error(f), f + ": cannot open"));
}

// ---- elaboration -----------------------------------------------------------------------------

TEST(PlatformElaboration, BindingToASocketThatDoesNotExistListsTheSockets) {
    std::string f = data("elab_no_socket.yaml");
    EXPECT_EQ(elab_error(f), f + ":33:7: binding 'dma0.memory -> noc.in': dma0 (DmaEngine) has no socket 'memory' "
                                 "(sockets: cmd (target), mem (initiator), flags (initiator))");
}

TEST(PlatformElaboration, BindingTargetToTarget) {
    std::string f = data("elab_target_to_target.yaml");
    EXPECT_EQ(elab_error(f), f + ":37:7: binding 'core0.vmem.port -> hbm.port': core0.vmem.port is a target socket; "
                                 "a binding goes initiator -> target");
}

TEST(PlatformElaboration, RequiredSocketLeftUnbound) {
    std::string f = data("elab_unbound.yaml");
    EXPECT_EQ(elab_error(f), f + ": xpu.chip0.dma0 (DmaEngine): socket 'mem' is not bound; "
                                 "add a binding for it to chip.bindings");
}

TEST(PlatformElaboration, TwoBindingsOnASingleInitiatorSocket) {
    std::string f = data("elab_double_initiator.yaml");
    EXPECT_EQ(elab_error(f), f + ":29:7: binding 'core0.scalar.imem -> core0.injector2.port': "
                                 "core0.scalar.imem takes a single binding");
}

TEST(PlatformElaboration, TwoBindingsOnASingleTargetSocket) {
    std::string f = data("elab_double_target.yaml");
    EXPECT_EQ(elab_error(f), f + ":31:7: binding 'core0.scalar.mxu[1] -> core0.mxu0.cmd': "
                                 "core0.mxu0.cmd is already bound; it takes a single binding");
}

TEST(PlatformElaboration, MultiSocketIndicesMustBeContiguous) {
    std::string f = data("elab_noncontiguous.yaml");
    EXPECT_EQ(elab_error(f), f + ":30:7: binding 'core0.scalar.vpu[2] -> core0.vpu1.cmd': "
                                 "indices of core0.scalar.vpu must be 0..1, each once");
}

// ---- --set -----------------------------------------------------------------------------------

TEST(PlatformSet, OverrideChangesTheEffectiveValue) {
    const std::string f = source_path("configs/xpu.yaml");
    PlatformConfig plain = load_platform(f);
    EXPECT_EQ(plain.effective["chip"]["modules"]["core0"]["mxu0"]["rows"].as<unsigned>(), 128u);
    PlatformConfig cfg = load_platform(f, {"chip.modules.core0.mxu0.rows=256", "chip.clock_ghz=2"});
    YAML::Node mods = cfg.effective["chip"]["modules"]["core0"];
    EXPECT_EQ(mods["mxu0"]["rows"].as<unsigned>(), 256u);
    EXPECT_EQ(mods["mxu0"]["cols"].as<unsigned>(), 128u);
    EXPECT_EQ(mods["mxu1"]["rows"].as<unsigned>(), 128u);
    EXPECT_DOUBLE_EQ(cfg.clock_ghz, 2.0);
    // The dump shows it too, and a dump of the overridden config loads back to the same.
    YAML::Node dumped = YAML::Load(dump_config(cfg));
    EXPECT_EQ(dumped["chip"]["modules"]["core0"]["mxu0"]["rows"].as<unsigned>(), 256u);
    // A key the file leaves at its default can be set too.
    PlatformConfig q = load_platform(f, {"chip.modules.core0.mxu0.queue_depth=3"});
    EXPECT_EQ(q.effective["chip"]["modules"]["core0"]["mxu0"]["queue_depth"].as<unsigned>(), 3u);
}

TEST(PlatformSet, BadValueNamesTheSetArgument) {
    const std::string f = source_path("configs/xpu.yaml");
    EXPECT_TRUE(starts_with(load_error(f, {"chip.modules.core0.mxu0.rows=abc"}),
                            "--set 'chip.modules.core0.mxu0.rows=abc': chip.modules.core0.mxu0.rows: "
                            "expected a non-negative integer, got 'abc'"));
    EXPECT_TRUE(starts_with(load_error(f, {"chip.modules.core0.mxu0.rows=0"}),
                            "--set 'chip.modules.core0.mxu0.rows=0': chip.modules.core0.mxu0.rows: "
                            "expected a value in 1..4096, got 0"));
    EXPECT_TRUE(starts_with(load_error(f, {"chip.modules.core0.mxu0.rows"}),
                            "--set 'chip.modules.core0.mxu0.rows': expected KEY.PATH=VALUE"));
}

// A new key under an existing module is created by --set, then rejected as unknown; the message
// must name the --set argument that introduced it. Disabled: it currently names the file
// without a position ("FILE: chip.modules.core0.mxu0.rowz: unknown key ..."), because
// ParamReader::finish() reports at the key node and YamlSource only remembers --set value nodes.
TEST(PlatformSet, UnknownKeyFromSetNamesTheSetArgument) {
    const std::string f = source_path("configs/xpu.yaml");
    EXPECT_TRUE(starts_with(load_error(f, {"chip.modules.core0.mxu0.rowz=4"}),
                            "--set 'chip.modules.core0.mxu0.rowz=4': chip.modules.core0.mxu0.rowz: unknown key"));
}

TEST(PlatformSet, UnknownKeyFromSetIsAnError) {
    const std::string f = source_path("configs/xpu.yaml");
    EXPECT_TRUE(contains(load_error(f, {"chip.modules.core0.mxu0.rowz=4"}), "chip.modules.core0.mxu0.rowz: unknown key"));
}

TEST(PlatformSet, PathThatDoesNotExistIsAnError) {
    const std::string f = source_path("configs/xpu.yaml");
    EXPECT_EQ(load_error(f, {"chip.modules.core9.mxu0.rows=256"}),
              "--set 'chip.modules.core9.mxu0.rows=256': no key 'chip.modules.core9' in " + f);
    EXPECT_EQ(load_error(f, {"chip.address_map[5].base=0"}),
              "--set 'chip.address_map[5].base=0': 'chip.address_map' has no element [5] (it has 2)");
}

TEST(PlatformSet, AnIndexMidPathSetsThatElement) {
    const std::string f = source_path("configs/xpu.yaml");
    PlatformConfig cfg = load_platform(f, {"chip.address_map[1].base=0x200000000000"});
    ASSERT_EQ(cfg.address_map.size(), 2u);
    EXPECT_EQ(cfg.address_map[1].base, 0x200000000000u);
    EXPECT_EQ(cfg.address_map[0].base, 0u);  // the list itself is untouched
}

TEST(PlatformSet, MalformedIndicesAreErrors) {
    const std::string f = source_path("configs/xpu.yaml");
    for (const char* bad : {"chip.address_map[1abc].base=0", "chip.address_map[-1].base=0", "chip.address_map[].base=0",
                            "chip.address_map[1.base=0", "chip.address_map1].base=0"})
        EXPECT_NE(load_error(f, {bad}).find("bad list index"), std::string::npos) << bad;
}

// ---- a variant platform: two vector units, 256x256 matrix units -------------------------------

TEST(PlatformVariant, TwoVectorUnitsElaborateAndTheSecondRuns) {
    std::string trace = write_trace("valu-u1.bin", [](gen::Emitter& e) {
        for (unsigned i = 0; i < 8; ++i) e.vop(Opcode::VAlu, 1, gen::vreg(1 + i % 4), gen::vreg(8), 4096);
    });
    PlatformConfig cfg = load_platform(source_path("configs/xpu-2vpu.yaml"));
    for (const char* m : {"mxu0", "mxu1", "mxu2", "mxu3"}) {
        EXPECT_EQ(cfg.effective["chip"]["modules"]["core0"][m]["rows"].as<unsigned>(), 256u) << m;
        EXPECT_EQ(cfg.effective["chip"]["modules"]["core0"][m]["cols"].as<unsigned>(), 256u) << m;
    }
    Simulation sim(cfg, trace);
    unsigned vpus = 0;
    for (auto* m : sim.platform().modules())
        if (dynamic_cast<VectorUnit*>(m)) ++vpus;
    EXPECT_EQ(vpus, 2u);
    ASSERT_NE(sim.platform().find("xpu.chip0.core0.vpu1"), nullptr);

    RunResult r = sim.run();
    ASSERT_TRUE(r.completed) << r.diagnosis;
    EXPECT_EQ(r.instructions, 9u);  // 8 valu + halt
    const UnitFigure* vpu0 = nullptr;
    const UnitFigure* vpu1 = nullptr;
    for (const auto& u : r.units) {
        if (u.name == "xpu.chip0.core0.vpu0") vpu0 = &u;
        if (u.name == "xpu.chip0.core0.vpu1") vpu1 = &u;
    }
    ASSERT_NE(vpu1, nullptr);
    EXPECT_EQ(vpu1->kind, "VectorUnit");
    EXPECT_GT(vpu1->busy_ns, 0.0);
    // u=1 went to vpu1 only.
    ASSERT_NE(vpu0, nullptr);
    EXPECT_EQ(vpu0->busy_ns, 0.0);
    // Four 256x256 MXUs at 1.05 GHz (a clock period of whole picoseconds: 952 ps).
    ASSERT_EQ(cycle_ticks(cfg.clock_ghz), Tick(952));
    EXPECT_DOUBLE_EQ(r.peak_flops_per_s, 8 * 2.0 * 256 * 256 * 1e12 / 952);
}

TEST(PlatformRun, InstructionForAUnitThatIsNotBoundIsAReportedError) {
    std::string trace = write_trace("mxu9.bin", [](gen::Emitter& e) {
        e.salu(gen::sreg(1), gen::sreg(2));
        e.matmul(9, gen::mreg(0), gen::vreg(1), 8, 128, 128, DType::Bf16);
    });
    PlatformConfig cfg = load_platform(source_path("configs/xpu.yaml"));
    Simulation sim(cfg, trace);
    try {
        sim.run();
        FAIL() << "the run ended without an error";
    } catch (const sc_core::sc_report& e) {
        std::string msg = e.get_msg();
        EXPECT_STREQ(e.get_msg_type(), "xpusim/run");
        EXPECT_TRUE(contains(msg, "xpu.chip0.core0.scalar: chip 0 core 0, instruction 1 (matmul"));
        EXPECT_TRUE(contains(msg, "unit mxu[9] does not exist (this core has 8 bound to its mxu socket)"));
    }
}

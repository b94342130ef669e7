// The parameter declarations (models/params.h): every group of keys (the description's own
// mappings and every module type) declares each key once, documented, with a unit where it is a
// number; reading an empty mapping leaves exactly the struct's defaults; docs/platform.md carries
// the reference the declarations generate; a module type can be registered from outside the
// shipped list with one line.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "models/hbm_controller.h"
#include "models/matrix_unit.h"
#include "platform/builder.h"
#include "platform/module_types.h"
#include "platform/param_catalog.h"
#include "platform/param_reader.h"
#include "platform/platform_config.h"
#include "tests/sim_fixture.h"

using namespace xpu;
using namespace xpu::platform;
using namespace xpu::test;

namespace {

// Every declared value, exactly ("key=value" with doubles in hex), to compare two instances.
class Snapshot : public ParamVisitor {
public:
    void u16(const char* k, std::uint16_t& v, unsigned, unsigned, const char*, const char*) override { put(k, std::to_string(v)); }
    void u32(const char* k, unsigned& v, unsigned, unsigned, const char*, const char*) override { put(k, std::to_string(v)); }
    void u64(const char* k, std::uint64_t& v, std::uint64_t, std::uint64_t, const char*, const char*) override {
        put(k, std::to_string(v));
    }
    void bytes(const char* k, std::uint64_t& v, std::uint64_t, std::uint64_t, const char*) override { put(k, std::to_string(v)); }
    void real(const char* k, double& v, double, double, const char*, const char*) override { put(k, hex(v)); }
    void ticks_ns(const char* k, Tick& v, double, double, const char*, Dump) override { put(k, std::to_string(v) + "ps"); }
    void boolean(const char* k, bool& v, const char*) override { put(k, v ? "true" : "false"); }
    void text(const char* k, std::string& v, const char*) override { put(k, "'" + v + "'"); }
    void section(const char*, const char*, const char*) override {}
    std::string values;

private:
    void put(const char* key, const std::string& v) { values += std::string(key) + "=" + v + "\n"; }
    static std::string hex(double v) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%a", v);
        return buf;
    }
};

std::string snapshot(ParamSet& set) {
    Snapshot s;
    set.declare(s);
    return s.values;
}

// The part of docs/platform.md between the markers of the generated reference.
std::string docs_reference() {
    const std::string doc = file_bytes(source_path("docs/platform.md"));
    const std::string begin = "<!-- BEGIN sim_main --list-types --markdown -->\n";
    const std::string end = "<!-- END sim_main --list-types --markdown -->";
    auto b = doc.find(begin);
    auto e = doc.find(end);
    if (b == std::string::npos || e == std::string::npos || e < b) return "(no generated reference in docs/platform.md)";
    return doc.substr(b + begin.size(), e - b - begin.size());
}

}  // namespace

TEST(ParamDeclarations, KeysAreUniqueDocumentedAndNumbersHaveUnitsAndRanges) {
    std::set<std::string> groups;
    for (const auto& g : param_groups()) {
        EXPECT_TRUE(groups.insert(g.name).second) << "group " << g.name << " twice";
        EXPECT_FALSE(g.doc.empty()) << g.name;
        std::set<std::string> keys;
        for (const auto& d : param_docs(g)) {
            const std::string where = g.name + "." + d.key;
            EXPECT_TRUE(keys.insert(d.key).second) << where << " declared twice";
            EXPECT_FALSE(d.doc.empty()) << where << " has no documentation";
            if (!d.numeric) continue;
            EXPECT_FALSE(d.unit.empty()) << where << " is a number without a unit";
            EXPECT_FALSE(d.range.empty()) << where << " is a number without a range";
            EXPECT_FALSE(d.def.empty()) << where << " has no default";
        }
        if (g.module_type) {
            EXPECT_EQ(keys.count("type"), 0u) << g.name << ": `type` names the module type";
        }
    }
    EXPECT_GE(groups.size(), 6u + 10u);  // the description's own mappings and the shipped types
}

TEST(ParamDeclarations, ReadingAnEmptyMappingYieldsExactlyTheDefaults) {
    for (const auto& g : param_groups()) {
        auto fresh = g.make();
        auto read = g.make();
        ParamReader reader(nullptr, YAML::Node(YAML::NodeType::Map), g.name);
        read->declare(reader);
        reader.finish();
        EXPECT_EQ(snapshot(*read), snapshot(*fresh)) << g.name;
        // And the effective configuration shows every value key but those dumped only when set.
        std::set<std::string> shown;
        for (auto e = reader.effective().begin(); e != reader.effective().end(); ++e) shown.insert(e->first.Scalar());
        std::set<std::string> want;
        for (const auto& d : param_docs(g))
            if (!d.def.empty() && !d.dumped_when_set) want.insert(d.key);
        EXPECT_EQ(shown, want) << g.name;
    }
}

TEST(ParamDeclarations, HbmCalendarBucketIsAKeyShownOnlyWhenSet) {
    const std::string f = source_path("configs/xpu.yaml");
    PlatformConfig plain = load_platform(f);
    const HbmConfig* hbm = config_of<HbmConfig>(*plain.module("hbm")->spec);
    ASSERT_NE(hbm, nullptr);
    EXPECT_EQ(hbm->bucket, Tick(64'000));
    EXPECT_FALSE(plain.effective["chip"]["modules"]["hbm"]["calendar_bucket_ns"].IsDefined());

    PlatformConfig set = load_platform(f, {"chip.modules.hbm.calendar_bucket_ns=128"});
    EXPECT_EQ(config_of<HbmConfig>(*set.module("hbm")->spec)->bucket, Tick(128'000));
    EXPECT_EQ(set.effective["chip"]["modules"]["hbm"]["calendar_bucket_ns"].as<double>(), 128.0);
    EXPECT_EQ(config_of<MatrixUnitConfig>(*set.module("hbm")->spec), nullptr);  // typed access checks the type
}

TEST(ParamReference, DocsPlatformMdCarriesTheReferenceOfEveryDeclaredKey) {
    EXPECT_EQ(docs_reference(), param_reference_markdown())
        << "docs/platform.md's key reference differs from the declarations: run scripts/update_param_docs.sh BUILD_DIR";
}

TEST(ParamReference, TextListsTheDescriptionsOwnKeysAndEveryType) {
    const std::string text = param_reference_text();
    for (const char* line : {"\nsim: ", "\n  quantum_ns (number, 0.001..1e+09 ns, default 1000): ", "\ntopology.link: ",
                             "\n  buffer_bytes (size, 1B..1TiB, default 256KiB): ", "\nMatrixUnit: ",
                             "\n  rows (integer, 1..4096 rows, default 128): "})
        EXPECT_NE(text.find(line), std::string::npos) << line << "\nnot in\n" << text;
}

// A model outside the shipped list: one registration line (here an existing model under
// another name, so that the test does not depend on XpuModule's interface). A registrar can
// also be a static object of the file that defines the model; here it lives in the test's own
// process only, so that the other tests see the shipped types alone.
TEST(ModuleTypeRegistry, ATypeRegisteredOutsideTheShippedListLoadsBuildsAndIsListed) {
    ModuleTypeRegistrar test_array{model_type<MatrixUnit, MatrixUnitConfig>(
        "TestArray", "a MatrixUnit registered by a test", {[](MatrixUnitConfig& k, const BuildContext& c) { k.cycle = c.cycle; }})};
    ASSERT_NE(find_module_type("TestArray"), nullptr);
    EXPECT_THROW(register_module_type(model_type<MatrixUnit, MatrixUnitConfig>("TestArray", "again")), std::logic_error);
    // tiny.yaml's matrix unit, now of the registered type.
    PlatformConfig cfg =
        load_platform(source_path("tests/data/configs/tiny.yaml"), {"chip.modules.core0.mxu0={type: TestArray, rows: 64}"});
    const ModuleDecl* mxu = cfg.module("core0.mxu0");
    ASSERT_NE(mxu, nullptr);
    EXPECT_EQ(mxu->type, "TestArray");
    EXPECT_EQ(config_of<MatrixUnitConfig>(*mxu->spec)->rows, 64u);
    EXPECT_EQ(cfg.effective["chip"]["modules"]["core0"]["mxu0"]["cols"].as<unsigned>(), 128u);
    Platform p(cfg, nullptr);
    ASSERT_NE(p.find("xpu.chip0.core0.mxu0"), nullptr);
    EXPECT_STREQ(p.find("xpu.chip0.core0.mxu0")->kind(), "MatrixUnit");
    EXPECT_NE(param_reference_text().find("\nTestArray: a MatrixUnit registered by a test\n  rows ("), std::string::npos);
}

#include "platform/param_catalog.h"

#include <sstream>

#include "models/sim_time.h"
#include "platform/module_types.h"
#include "platform/param_reader.h"
#include "platform/platform_config.h"

namespace xpu::platform {

namespace {

template <class Params>
ParamGroup description_group(std::string name, std::string doc) {
    return {std::move(name), std::move(doc), false, [] { return std::make_unique<ParamsOf<Params>>(); }};
}

std::string integer_range(std::uint64_t lo, std::uint64_t hi) { return std::to_string(lo) + ".." + std::to_string(hi); }

std::string real_range(double lo, double hi) { return param_number_text(lo) + ".." + param_number_text(hi); }

}  // namespace

std::vector<ParamGroup> param_groups() {
    std::vector<ParamGroup> groups = {
        description_group<DescriptionParams>("top level", "the keys of a platform description"),
        description_group<SimParams>("sim", "simulation settings"),
        description_group<ChipParams>("chip", "one chip, instantiated `chips` times"),
        description_group<AddressMapParams>("chip.address_map[i]",
                                            "a window of global addresses served by a memory (its size: the memory's)"),
        description_group<TopologyParams>("topology", "how the chips connect"),
        description_group<IciLinkParams>("topology.link", "every inter-chip link (IciLink), per direction"),
        description_group<IciSwitchParams>("topology.switch", "the crossbar of a switched topology (IciSwitch)"),
    };
    for (const auto& t : module_types())
        groups.push_back({t.name, t.doc, true, [make = t.make]() -> std::unique_ptr<ParamSet> { return make(); }});
    return groups;
}

void ParamCatalog::u16(const char* key, std::uint16_t& v, unsigned lo, unsigned hi, const char* unit, const char* doc) {
    docs_.push_back({key, "integer", integer_range(lo, hi), unit, std::to_string(v), doc, true});
}

void ParamCatalog::u32(const char* key, unsigned& v, unsigned lo, unsigned hi, const char* unit, const char* doc) {
    docs_.push_back({key, "integer", integer_range(lo, hi), unit, std::to_string(v), doc, true});
}

void ParamCatalog::u64(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char* unit,
                       const char* doc) {
    docs_.push_back({key, "integer", integer_range(lo, hi), unit, std::to_string(v), doc, true});
}

void ParamCatalog::bytes(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char* doc) {
    docs_.push_back({key, "size", param_size_text(lo) + ".." + param_size_text(hi), "bytes", param_size_text(v), doc, true});
}

void ParamCatalog::real(const char* key, double& v, double lo, double hi, const char* unit, const char* doc) {
    docs_.push_back({key, "number", real_range(lo, hi), unit, param_number_text(v), doc, true});
}

void ParamCatalog::ticks_ns(const char* key, Tick& v, double lo_ns, double hi_ns, const char* doc, Dump dump) {
    docs_.push_back({key, "number", real_range(lo_ns, hi_ns), "ns", param_number_text(ticks_to_ns(v)), doc, true,
                     dump == Dump::WhenSet});
}

void ParamCatalog::boolean(const char* key, bool& v, const char* doc) {
    docs_.push_back({key, "bool", "", "", v ? "true" : "false", doc});
}

void ParamCatalog::text(const char* key, std::string& v, const char* doc) {
    docs_.push_back({key, "string", "", "", v.empty() ? "\"\"" : v, doc});
}

void ParamCatalog::choice(const char* key, std::string& v, const std::vector<std::string>& options, const char* doc) {
    std::string range;
    for (const auto& o : options) range += (range.empty() ? "" : " | ") + o;
    docs_.push_back({key, "choice", range, "", v, doc});
}

void ParamCatalog::section(const char* key, const char* kind, const char* doc) {
    docs_.push_back({key, kind, "", "", "", doc});
}

std::vector<ParamDoc> param_docs(const ParamGroup& g) {
    ParamCatalog c;
    g.make()->declare(c);
    return c.docs();
}

namespace {

constexpr const char* kWhenSetNote = "; in --dump-config only when set";

// "integer, 1..4096 rows, default 128" (what the text reference puts in parentheses).
std::string summary(const ParamDoc& d) {
    std::string s = d.type;
    if (!d.range.empty()) s += ", " + d.range + (d.unit.empty() || d.type == "size" ? "" : " " + d.unit);
    if (!d.def.empty()) s += ", default " + d.def;
    if (d.dumped_when_set) s += kWhenSetNote;
    return s;
}

std::string cell(std::string s) {
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
}

}  // namespace

std::string param_reference_text() {
    std::ostringstream os;
    bool types_heading = false;
    for (const auto& g : param_groups()) {
        if (g.module_type && !types_heading) {
            os << "\nmodule types (chip.modules.NAME: {type: TYPE, ...}):\n";
            types_heading = true;
        }
        os << g.name << ": " << g.doc << "\n";
        for (const auto& d : param_docs(g)) os << "  " << d.key << " (" << summary(d) << "): " << d.doc << "\n";
    }
    return os.str();
}

std::string param_reference_markdown() {
    std::ostringstream os;
    for (const auto& g : param_groups()) {
        os << "\n### " << (g.module_type ? "type: " : "") << "`" << g.name << "`\n\n" << g.doc << "\n\n";
        const auto docs = param_docs(g);
        if (docs.empty()) {
            os << "No keys.\n";
            continue;
        }
        os << "| key | type | range | unit | default | meaning |\n|---|---|---|---|---|---|\n";
        for (const auto& d : docs)
            os << "| `" << d.key << "` | " << cell(d.type) << " | " << cell(d.range) << " | " << cell(d.unit) << " | "
               << cell(d.def) << " | " << cell(d.doc) << (d.dumped_when_set ? kWhenSetNote : "") << " |\n";
    }
    return os.str();
}

}  // namespace xpu::platform

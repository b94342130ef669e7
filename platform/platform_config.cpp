#include "platform/platform_config.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "models/address.h"
#include "models/hbm_controller.h"
#include "models/ici.h"
#include "models/sim_time.h"
#include "platform/module_types.h"
#include "platform/param_reader.h"
#include "platform/yaml_source.h"

namespace xpu::platform {

std::string SocketName::text() const {
    std::string s = module + "." + socket;
    if (index >= 0) s += "[" + std::to_string(index) + "]";
    return s;
}

const ModuleDecl* PlatformConfig::module(const std::string& path) const {
    for (const auto& m : modules)
        if (m.path == path) return &m;
    return nullptr;
}

void DescriptionParams::declare(ParamVisitor& v) {
    v.u32("xpusim", xpusim, 1, 1, "version", "platform description format version");
    v.text("name", name, "platform name");
    v.u32("chips", chips, 1, 4096, "chips", "number of chips (each an instance of `chip`)");
    v.section("sim", "mapping", "simulation settings (sim: below)");
    v.section("chip", "mapping", "the description of one chip (chip: below); required");
    v.section("topology", "mapping", "how the chips connect (topology: below); required with more than one chip");
}

void SimParams::declare(ParamVisitor& v) {
    v.real("quantum_ns", quantum_ns, 0.001, 1e9, "ns",
           "temporal decoupling quantum: how far a model's local time may lead the kernel");
}

void ChipParams::declare(ParamVisitor& v) {
    v.real("clock_ghz", clock_ghz, 0.001, 100, "GHz", "chip clock, GHz");
    v.section("modules", "mapping",
              "module instances: a mapping with `type: TYPE` and that type's keys (below) is a module, "
              "one without `type` a container of modules; required");
    v.section("address_map", "list of mappings", "global address windows (chip.address_map[i]: below)");
    v.section("bindings", "list of strings", "socket bindings, 'MODULE.SOCKET[i] -> MODULE.SOCKET'");
}

void AddressMapParams::declare(ParamVisitor& v) {
    v.text("space", space, "vmem, hbm, flags or remote");
    v.text("target", target, "module instance serving the range");
    v.u64("base", base, 0, UINT64_MAX, "address", "global base address");
}

void TopologyParams::declare(ParamVisitor& v) {
    v.text("kind", kind, "ring, torus2d, torus3d or switch");
    v.section("dims", "list of integers",
              "dimension sizes 1..4096: [X] for a ring or a switch, [X, Y], [X, Y, Z]; product = chips");
    v.section("link", "mapping", "the inter-chip links (topology.link: below); with a switch, each chip's uplink");
    v.section("switch", "mapping", "kind switch: the crossbar (topology.switch: below)");
    v.u32("links_per_neighbour", links_per_neighbour, 1, 16, "links", "parallel links per direction to each neighbour");
}

namespace {

bool valid_name(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Walks chip.modules: a mapping with `type` is a module, any other mapping is a container.
// Bounds on chip.modules: YAML aliases can make a small file describe a huge (2^depth) tree.
constexpr unsigned kMaxModuleDepth = 16;
constexpr std::size_t kMaxModuleNodes = 100000;

void collect_modules(const YamlSource& src, const YAML::Node& node, const std::string& prefix,
                     const std::string& key_path, PlatformConfig& cfg, YAML::Node effective,
                     unsigned depth = 0, std::size_t* visited = nullptr) {
    std::size_t count = 0;
    if (!visited) visited = &count;
    if (!node.IsMap()) src.fail(node, key_path, "expected a mapping of module instances");
    if (depth > kMaxModuleDepth)
        src.fail(node, key_path, "containers nested more than " + std::to_string(kMaxModuleDepth) + " deep");
    for (auto it = node.begin(); it != node.end(); ++it) {
        if (++*visited > kMaxModuleNodes)
            src.fail(it->first, key_path, "more than " + std::to_string(kMaxModuleNodes) +
                                              " modules and containers (aliases expanding to a huge tree?)");
        std::string name = it->first.Scalar();
        std::string kp = key_path + "." + name;
        if (!valid_name(name))
            src.fail(it->first, kp, "expected an instance name of letters, digits and '_' (it becomes a SystemC name)");
        const YAML::Node body = it->second;  // a copy of the handle: it->second is a temporary of the iterator
        std::string path = prefix.empty() ? name : prefix + "." + name;
        if (!body.IsMap()) src.fail(body, kp, "expected a mapping: a module with `type: ...`, or a container of modules");
        YAML::Node t = body["type"];
        if (!t.IsDefined()) {
            YAML::Node sub(YAML::NodeType::Map);
            collect_modules(src, body, path, kp, cfg, sub, depth + 1, visited);
            effective[name] = sub;
            continue;
        }
        if (!t.IsScalar()) src.fail(t, kp + ".type", "expected a module type name");
        const ModuleType* type = find_module_type(t.Scalar());
        if (!type) {
            std::string known;
            for (const auto& mt : module_types()) known += (known.empty() ? "" : ", ") + mt.name;
            src.fail(t, kp + ".type", "unknown module type '" + t.Scalar() + "' (known: " + known + ")");
        }
        ModuleDecl d;
        d.path = path;
        d.type = type->name;
        d.spec = type->make();
        d.where = src.where(body);
        ParamReader p(&src, body, kp);
        p.skip("type");
        d.spec->declare(p);
        p.finish();
        YAML::Node eff(YAML::NodeType::Map);
        eff["type"] = d.type;
        for (auto e = p.effective().begin(); e != p.effective().end(); ++e) eff[e->first.Scalar()] = e->second;
        effective[name] = eff;
        cfg.modules.push_back(std::move(d));
    }
}

SocketName parse_socket(const YamlSource& src, const YAML::Node& n, const std::string& kp, std::string s) {
    auto trim = [](std::string& x) {
        while (!x.empty() && x.front() == ' ') x.erase(x.begin());
        while (!x.empty() && x.back() == ' ') x.pop_back();
    };
    trim(s);
    SocketName out;
    if (!s.empty() && s.back() == ']') {
        auto br = s.rfind('[');
        std::uint64_t idx;
        if (br == std::string::npos || !parse_u64(s.substr(br + 1, s.size() - br - 2), idx) || idx > 4095)
            src.fail(n, kp, "bad socket index in '" + s + "' (expected socket[N])");
        out.index = static_cast<int>(idx);
        s = s.substr(0, br);
    }
    auto dot = s.rfind('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == s.size())
        src.fail(n, kp, "expected MODULE.SOCKET, got '" + s + "'");
    out.module = s.substr(0, dot);
    out.socket = s.substr(dot + 1);
    return out;
}

// Reads the mapping `node` at `path` into `params`; its effective values go to `effective`.
template <class Params>
void read_params(const YamlSource& src, const YAML::Node& node, const std::string& path, Params& params,
                 YAML::Node effective) {
    ParamReader p(&src, node, path);
    params.declare(p);
    p.finish();
    for (auto e = p.effective().begin(); e != p.effective().end(); ++e) effective[e->first.Scalar()] = e->second;
}

// topology.dims: as many sizes as the kind has dimensions, multiplying to the chip count.
void read_dims(const YamlSource& src, const YAML::Node& topo, unsigned chips, Topology& t) {
    const unsigned want = t.kind == "ring" || t.kind == "switch" ? 1 : t.kind == "torus2d" ? 2 : t.kind == "torus3d" ? 3 : 0;
    YAML::Node dims = topo["dims"];
    if (!dims.IsDefined() || !dims.IsSequence() || dims.size() != want)
        src.fail(dims.IsDefined() ? dims : topo, "topology.dims",
                 "expected a list of " + std::to_string(want) + " dimension size(s) for a " + t.kind);
    // 64-bit: three sizes of up to 4096 multiply to 2^36, which a 32-bit product would wrap
    // (to a count that may equal `chips`, and a builder indexing chips past the end).
    std::uint64_t product = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        std::uint64_t d = 0;
        if (!dims[i].IsScalar() || !parse_u64(dims[i].Scalar(), d) || d < 1 || d > 4096)
            src.fail(dims[i], "topology.dims[" + std::to_string(i) + "]", "expected a dimension size 1..4096");
        t.dims.push_back(static_cast<unsigned>(d));
        product *= d;
    }
    if (product != chips)
        src.fail(dims, "topology.dims", "the dimensions multiply to " + std::to_string(product) + " chips, but chips is " +
                                            std::to_string(chips));
}

// How the chips connect (multi-chip platforms).
void read_topology(const YamlSource& src, const YAML::Node& root, PlatformConfig& cfg) {
    YAML::Node topo = root["topology"];
    if (!topo.IsDefined()) {
        if (cfg.chips > 1)
            src.fail(root, "topology", "missing: " + std::to_string(cfg.chips) + " chips need a topology (ring, torus2d, torus3d or switch)");
        return;
    }
    Topology& t = cfg.topology;
    YAML::Node eff(YAML::NodeType::Map);
    {
        ParamReader tp(&src, topo, "topology");
        t.declare(tp);
        tp.finish();
        if (t.kind != "ring" && t.kind != "torus2d" && t.kind != "torus3d" && t.kind != "switch")
            tp.fail("kind", "expected ring, torus2d, torus3d or switch, got '" + t.kind + "'");
    }
    read_dims(src, topo, cfg.chips, t);
    YAML::Node eff_link(YAML::NodeType::Map);
    read_params(src, topo["link"], "topology.link", t.link, eff_link);

    eff["kind"] = t.kind;
    YAML::Node ed(YAML::NodeType::Sequence);
    ed.SetStyle(YAML::EmitterStyle::Flow);
    for (unsigned d : t.dims) ed.push_back(d);
    eff["dims"] = ed;
    eff["links_per_neighbour"] = t.links_per_neighbour;
    eff["link"] = eff_link;
    if (t.kind == "switch") {
        YAML::Node eff_switch(YAML::NodeType::Map);
        read_params(src, topo["switch"], "topology.switch", t.crossbar, eff_switch);
        eff["switch"] = eff_switch;
    } else if (topo["switch"].IsDefined()) {
        src.fail(topo["switch"], "topology.switch", "only a topology of kind switch has a crossbar");
    }
    cfg.effective["topology"] = eff;
}

Window window_of(const std::string& space) {
    if (space == "vmem") return Window::Vmem;
    if (space == "flags") return Window::Flags;
    if (space == "remote") return Window::Remote;
    return Window::Hbm;
}

// One entry of chip.address_map, checked against the modules; its effective form to `eff_am`.
void read_address_map_entry(const YamlSource& src, const YAML::Node& e, const std::string& kp, PlatformConfig& cfg,
                            YAML::Node eff_am) {
    ParamReader p(&src, e, kp);
    AddressMapParams a;
    a.declare(p);
    p.finish();
    if (a.space != "vmem" && a.space != "hbm" && a.space != "flags" && a.space != "remote")
        p.fail("space", "expected vmem, hbm, flags or remote, got '" + a.space + "'");
    AddressMapEntry m;
    m.window = window_of(a.space);
    m.target = a.target;
    m.base = a.base;
    m.where = src.where(e);
    const ModuleDecl* t = cfg.module(a.target);
    if (!t) p.fail("target", "no module '" + a.target + "' in chip.modules");
    if (!t->spec->capacity()) p.fail("target", "'" + a.target + "' is a " + t->type + ", not a memory");
    const std::string want = m.window == Window::Flags ? "SyncFlags" : m.window == Window::Remote ? "IciPort" : "";
    if (!want.empty() && t->type != want)
        p.fail("target", "space " + a.space + " needs a " + want + ", '" + a.target + "' is a " + t->type);
    if (const std::uint64_t size = *t->spec->capacity(); size > 0 && a.base > UINT64_MAX - (size - 1)) {
        std::ostringstream os;
        os << "0x" << std::hex << a.base << std::dec << " + " << size << " bytes of '" << a.target
           << "' runs past the end of the 64-bit address space (expected base <= 0x" << std::hex << (UINT64_MAX - (size - 1)) << ")";
        p.fail("base", os.str());
    }
    if (m.window == Window::Remote && a.base != kRemoteWindow)
        p.fail("base", "the remote window starts at 0x8000000000000000 (bit 63: see docs/platform.md)");
    cfg.address_map.push_back(m);
    YAML::Node x(YAML::NodeType::Map);
    x.SetStyle(YAML::EmitterStyle::Flow);
    x["space"] = a.space;
    x["target"] = a.target;
    std::ostringstream hex;
    hex << "0x" << std::hex << a.base;
    x["base"] = hex.str();
    eff_am.push_back(x);
}

// Ranges must not overlap.
void check_overlaps(const PlatformConfig& cfg) {
    for (std::size_t i = 0; i < cfg.address_map.size(); ++i)
        for (std::size_t j = 0; j < i; ++j) {
            const auto& a = cfg.address_map[i];
            const auto& b = cfg.address_map[j];
            std::uint64_t asz = *cfg.module(a.target)->spec->capacity(), bsz = *cfg.module(b.target)->spec->capacity();
            // Do [base, base + size) overlap? (Computed without overflowing 2^64.)
            if (a.base >= b.base ? a.base - b.base < bsz : b.base - a.base < asz)
                throw ConfigError(a.where + ": chip.address_map[" + std::to_string(i) + "]: range of '" + a.target +
                                  "' overlaps that of '" + b.target + "' (" + b.where + ")");
        }
}

YAML::Node read_address_map(const YamlSource& src, const YAML::Node& chip, PlatformConfig& cfg) {
    YAML::Node am = chip["address_map"];
    YAML::Node eff_am(YAML::NodeType::Sequence);
    if (am.IsDefined()) {
        if (!am.IsSequence()) src.fail(am, "chip.address_map", "expected a list of {space, target, base}");
        for (std::size_t i = 0; i < am.size(); ++i)
            read_address_map_entry(src, am[i], "chip.address_map[" + std::to_string(i) + "]", cfg, eff_am);
    }
    check_overlaps(cfg);
    return eff_am;
}

// Bindings: "from.socket[i] -> to.socket".
YAML::Node read_bindings(const YamlSource& src, const YAML::Node& chip, PlatformConfig& cfg) {
    YAML::Node bs = chip["bindings"];
    YAML::Node eff_bs(YAML::NodeType::Sequence);
    if (!bs.IsDefined()) return eff_bs;
    if (!bs.IsSequence()) src.fail(bs, "chip.bindings", "expected a list of 'MODULE.SOCKET -> MODULE.SOCKET'");
    for (std::size_t i = 0; i < bs.size(); ++i) {
        YAML::Node b = bs[i];
        std::string kp = "chip.bindings[" + std::to_string(i) + "]";
        if (!b.IsScalar()) src.fail(b, kp, "expected 'MODULE.SOCKET -> MODULE.SOCKET'");
        const std::string& s = b.Scalar();
        auto arrow = s.find("->");
        if (arrow == std::string::npos) src.fail(b, kp, "expected 'MODULE.SOCKET -> MODULE.SOCKET', got '" + s + "'");
        BindingDecl d;
        d.from = parse_socket(src, b, kp, s.substr(0, arrow));
        d.to = parse_socket(src, b, kp, s.substr(arrow + 2));
        d.where = src.where(b);
        d.text = s;
        for (const SocketName* sn : {&d.from, &d.to})
            if (!cfg.module(sn->module))
                src.fail(b, kp, "no module '" + sn->module + "' in chip.modules (binding '" + s + "')");
        cfg.bindings.push_back(d);
        eff_bs.push_back(s);
    }
    return eff_bs;
}

// The chip: its clock, modules, address map and bindings.
void read_chip(const YamlSource& src, const YAML::Node& root, PlatformConfig& cfg) {
    YAML::Node chip = root["chip"];
    if (!chip.IsDefined()) src.fail(root, "chip", "missing: the description of one chip (modules, address_map, bindings)");
    YAML::Node eff_chip(YAML::NodeType::Map);
    read_params(src, chip, "chip", static_cast<ChipParams&>(cfg), eff_chip);

    YAML::Node mods = chip["modules"];
    if (!mods.IsDefined()) src.fail(chip, "chip.modules", "missing: the chip's module instances");
    YAML::Node eff_mods(YAML::NodeType::Map);
    collect_modules(src, mods, "", "chip.modules", cfg, eff_mods);
    eff_chip["modules"] = eff_mods;
    eff_chip["address_map"] = read_address_map(src, chip, cfg);
    eff_chip["bindings"] = read_bindings(src, chip, cfg);
    cfg.effective["chip"] = eff_chip;
}

// Each core id at most once per chip, and at least one.
void check_cores(const YamlSource& src, const YAML::Node& root, const PlatformConfig& cfg) {
    std::map<unsigned, std::string> cores;
    for (const auto& m : cfg.modules)
        if (auto id = m.spec->core_id()) {
            auto [it, fresh] = cores.emplace(*id, m.path);
            if (!fresh)
                throw ConfigError(m.where + ": chip.modules." + m.path + ".core: core id " + std::to_string(*id) +
                                  " is already used by " + it->second);
        }
    if (cores.empty())
        throw ConfigError(src.where(root["chip"]["modules"]) + ": chip.modules: a chip needs at least one ScalarCore to run a trace");
}

// The memory the bandwidth calendars of a multi-chip platform need, checked before anything is
// allocated. Each link setting is in range alone, but together they set how far ahead of the
// kernel traffic is booked: a full link buffer takes buffer x wire factor / bandwidth to drain,
// and the writes it carries reach the destination's HBM channels that far ahead, each channel
// holding a calendar bucket per `calendar_bucket_ns` of it (a 0.001 GB/s link: 0.3 s ahead, 8
// million buckets per channel). The error names the key that drives the estimate.
void check_calendar_memory(const YamlSource& src, const YAML::Node& root, const PlatformConfig& cfg) {
    if (cfg.chips < 2) return;
    constexpr double kLimit = 2.0 * (1u << 30);
    const IciLinkParams& l = cfg.topology.link;
    const double rate = l.bandwidth_gbps / 1000.0;  // bytes per ps
    const double ahead_bytes = static_cast<double>(std::min<std::uint64_t>(l.buffer_bytes, 64ull << 20) + l.packet_bytes) * l.wire_factor();
    const double horizon_ps = ahead_bytes / rate;
    double per_chip = 0;
    for (const auto& m : cfg.modules)
        if (const auto* h = config_of<HbmConfig>(*m.spec))
            per_chip += h->channels * BandwidthCalendar::memory_for(h->channel_bandwidth_gbps / 1000.0, h->bucket,
                                                                    horizon_ps * h->channel_bandwidth_gbps / 1000.0);
    const double links = static_cast<double>(cfg.chips) * 2.0 * static_cast<double>(cfg.topology.dims.size()) * cfg.topology.links_per_neighbour;
    const double total = per_chip * cfg.chips + links * l.calendar_memory();
    if (total <= kLimit) return;
    const bool overhead = l.wire_factor() > 2;
    const char* key = overhead ? "packet_overhead_bytes" : l.buffer_bytes > (1u << 20) ? "buffer_bytes" : "bandwidth_gbps";
    std::ostringstream os;
    os.precision(3);
    os << "with bandwidth_gbps " << l.bandwidth_gbps << ", buffer_bytes " << l.buffer_bytes << ", packet_bytes " << l.packet_bytes
       << " and packet_overhead_bytes " << l.packet_overhead_bytes << ", a full link buffer books traffic "
       << horizon_ps / 1e6 << " us ahead, which the bandwidth calendars of " << cfg.chips << " chips (HBM channels and links) "
       << "would hold in about " << total / (1u << 30) << " GiB (limit " << kLimit / (1u << 30)
       << " GiB); expected a faster link, a smaller buffer_bytes or an overhead that is a small share of packet_bytes";
    YAML::Node link = root["topology"]["link"];
    src.fail(link.IsMap() && link[key].IsDefined() ? link[key] : root["topology"], std::string("topology.link.") + key, os.str());
}

PlatformConfig load_platform_impl(const std::string& file, const std::vector<std::string>& sets) {
    YamlSource src = YamlSource::load(file);
    for (const auto& s : sets) src.apply_set(s);
    YAML::Node root = src.root();
    PlatformConfig cfg;
    cfg.file = file;
    cfg.effective = YAML::Node(YAML::NodeType::Map);
    read_params(src, root, "", static_cast<DescriptionParams&>(cfg), cfg.effective);
    read_topology(src, root, cfg);
    YAML::Node eff_sim(YAML::NodeType::Map);
    read_params(src, root["sim"], "sim", static_cast<SimParams&>(cfg), eff_sim);
    cfg.effective["sim"] = eff_sim;
    read_chip(src, root, cfg);
    check_cores(src, root, cfg);
    check_calendar_memory(src, root, cfg);
    return cfg;
}

}  // namespace

PlatformConfig load_platform(const std::string& file, const std::vector<std::string>& sets) {
    // Every problem is a ConfigError; a yaml-cpp exception escaping the checks above (a node of
    // an unexpected kind somewhere) becomes one too, with the position yaml-cpp knows.
    try {
        return load_platform_impl(file, sets);
    } catch (const YAML::Exception& e) {
        std::string where = file;
        if (e.mark.line >= 0) where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
        throw ConfigError(where + ": unexpected YAML structure: " + e.msg);
    }
}

std::string dump_config(const PlatformConfig& cfg) {
    YAML::Emitter out;
    out << cfg.effective;
    return std::string("# effective configuration of ") + cfg.file + "\n" + out.c_str() + "\n";
}

}  // namespace xpu::platform

#include "platform/platform_config.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "models/address.h"
#include "models/sim_time.h"
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
        d.spec->params(p);
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

}  // namespace

static PlatformConfig load_platform_impl(const std::string& file, const std::vector<std::string>& sets) {
    YamlSource src = YamlSource::load(file);
    for (const auto& s : sets) src.apply_set(s);
    YAML::Node root = src.root();
    PlatformConfig cfg;
    cfg.file = file;
    cfg.effective = YAML::Node(YAML::NodeType::Map);

    ParamReader top(&src, root, "");
    unsigned version = 1;
    top.u32("xpusim", version, 1, 1, "platform description format version");
    top.text("name", cfg.name, "platform name");
    top.u32("chips", cfg.chips, 1, 4096, "number of chips (each an instance of `chip`)");
    top.skip("sim");
    top.skip("chip");
    top.skip("topology");
    top.finish();
    for (auto e = top.effective().begin(); e != top.effective().end(); ++e)
        cfg.effective[e->first.Scalar()] = e->second;

    // Topology: how the chips connect (multi-chip platforms).
    YAML::Node topo = root["topology"];
    if (topo.IsDefined()) {
        ParamReader tp(&src, topo, "topology");
        Topology& t = cfg.topology;
        tp.text("kind", t.kind, "ring, torus2d or torus3d");
        tp.skip("dims");
        tp.skip("link");
        tp.u32("links_per_neighbour", t.links_per_neighbour, 1, 16, "parallel links per direction to each neighbour");
        tp.finish();
        const unsigned want = t.kind == "ring" ? 1 : t.kind == "torus2d" ? 2 : t.kind == "torus3d" ? 3 : 0;
        if (!want) tp.fail("kind", "expected ring, torus2d or torus3d, got '" + t.kind + "'");
        YAML::Node dims = topo["dims"];
        if (!dims.IsDefined() || !dims.IsSequence() || dims.size() != want)
            src.fail(dims.IsDefined() ? dims : topo, "topology.dims",
                     "expected a list of " + std::to_string(want) + " dimension size(s) for a " + t.kind);
        unsigned product = 1;
        for (std::size_t i = 0; i < dims.size(); ++i) {
            std::uint64_t d = 0;
            if (!dims[i].IsScalar() || !parse_u64(dims[i].Scalar(), d) || d < 1 || d > 4096)
                src.fail(dims[i], "topology.dims[" + std::to_string(i) + "]", "expected a dimension size 1..4096");
            t.dims.push_back(static_cast<unsigned>(d));
            product *= static_cast<unsigned>(d);
        }
        if (product != cfg.chips)
            src.fail(dims, "topology.dims", "the dimensions multiply to " + std::to_string(product) + " chips, but chips is " +
                                                std::to_string(cfg.chips));
        ParamReader lk(&src, topo["link"], "topology.link");
        double ns = ticks_to_ns(t.link.latency);
        lk.real("bandwidth_gbps", t.link.bandwidth_gbps, 0.001, 1e6, "GB/s per direction of one link");
        lk.real("latency_ns", ns, 0, 1e6, "per hop");
        lk.u32("packet_bytes", t.link.packet_bytes, 1, 1u << 24, "payload bytes per packet");
        lk.u32("packet_overhead_bytes", t.link.packet_overhead_bytes, 0, 1u << 20, "header/CRC bytes per packet");
        lk.bytes("buffer_bytes", t.link.buffer_bytes, 1, 1ull << 40, "bytes in flight on a link before back-pressure");
        lk.finish();
        t.link.latency = ns_to_ticks(ns);
        YAML::Node eff(YAML::NodeType::Map);
        eff["kind"] = t.kind;
        YAML::Node ed(YAML::NodeType::Sequence);
        ed.SetStyle(YAML::EmitterStyle::Flow);
        for (unsigned d : t.dims) ed.push_back(d);
        eff["dims"] = ed;
        eff["links_per_neighbour"] = t.links_per_neighbour;
        eff["link"] = lk.effective();
        cfg.effective["topology"] = eff;
    } else if (cfg.chips > 1) {
        src.fail(root, "topology", "missing: " + std::to_string(cfg.chips) + " chips need a topology (ring, torus2d or torus3d)");
    }

    ParamReader sim(&src, root["sim"], "sim");
    sim.real("quantum_ns", cfg.quantum_ns, 0.001, 1e9,
             "temporal decoupling quantum: how far a model's local time may lead the kernel");
    sim.finish();
    cfg.effective["sim"] = sim.effective();

    YAML::Node chip = root["chip"];
    if (!chip.IsDefined()) src.fail(root, "chip", "missing: the description of one chip (modules, address_map, bindings)");
    ParamReader cp(&src, chip, "chip");
    cp.real("clock_ghz", cfg.clock_ghz, 0.001, 100, "chip clock, GHz");
    cp.skip("modules");
    cp.skip("address_map");
    cp.skip("bindings");
    cp.finish();
    YAML::Node eff_chip(YAML::NodeType::Map);
    eff_chip["clock_ghz"] = cfg.clock_ghz;

    YAML::Node mods = chip["modules"];
    if (!mods.IsDefined()) src.fail(chip, "chip.modules", "missing: the chip's module instances");
    YAML::Node eff_mods(YAML::NodeType::Map);
    collect_modules(src, mods, "", "chip.modules", cfg, eff_mods);
    eff_chip["modules"] = eff_mods;

    // Address map.
    YAML::Node am = chip["address_map"];
    YAML::Node eff_am(YAML::NodeType::Sequence);
    if (am.IsDefined()) {
        if (!am.IsSequence()) src.fail(am, "chip.address_map", "expected a list of {space, target, base}");
        for (std::size_t i = 0; i < am.size(); ++i) {
            YAML::Node e = am[i];
            std::string kp = "chip.address_map[" + std::to_string(i) + "]";
            ParamReader p(&src, e, kp);
            std::string space, target;
            std::uint64_t base = 0;
            p.text("space", space, "vmem, hbm, flags or remote");
            p.text("target", target, "module instance serving the range");
            p.u64("base", base, 0, UINT64_MAX, "global base address");
            p.finish();
            AddressMapEntry m;
            if (space == "vmem") m.window = Window::Vmem;
            else if (space == "hbm") m.window = Window::Hbm;
            else if (space == "flags") m.window = Window::Flags;
            else if (space == "remote") m.window = Window::Remote;
            else p.fail("space", "expected vmem, hbm, flags or remote, got '" + space + "'");
            m.target = target;
            m.base = base;
            m.where = src.where(e);
            const ModuleDecl* t = cfg.module(target);
            if (!t) p.fail("target", "no module '" + target + "' in chip.modules");
            if (!t->spec->capacity()) p.fail("target", "'" + target + "' is a " + t->type + ", not a memory");
            const std::string want = m.window == Window::Flags ? "SyncFlags" : m.window == Window::Remote ? "IciPort" : "";
            if (!want.empty() && t->type != want)
                p.fail("target", "space " + space + " needs a " + want + ", '" + target + "' is a " + t->type);
            if (m.window == Window::Remote && base != kRemoteWindow)
                p.fail("base", "the remote window starts at 0x8000000000000000 (bit 63: see docs/platform.md)");
            cfg.address_map.push_back(m);
            YAML::Node x(YAML::NodeType::Map);
            x.SetStyle(YAML::EmitterStyle::Flow);
            x["space"] = space;
            x["target"] = target;
            std::ostringstream hex;
            hex << "0x" << std::hex << base;
            x["base"] = hex.str();
            eff_am.push_back(x);
        }
    }
    // Ranges must not overlap.
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
    eff_chip["address_map"] = eff_am;

    // Bindings: "from.socket[i] -> to.socket".
    YAML::Node bs = chip["bindings"];
    YAML::Node eff_bs(YAML::NodeType::Sequence);
    if (bs.IsDefined()) {
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
    }
    eff_chip["bindings"] = eff_bs;
    cfg.effective["chip"] = eff_chip;

    // Each core id at most once per chip.
    std::map<unsigned, std::string> cores;
    for (const auto& m : cfg.modules)
        if (auto id = m.spec->core_id()) {
            auto [it, fresh] = cores.emplace(*id, m.path);
            if (!fresh)
                throw ConfigError(m.where + ": chip.modules." + m.path + ".core: core id " + std::to_string(*id) +
                                  " is already used by " + it->second);
        }
    if (cores.empty())
        throw ConfigError(src.where(mods) + ": chip.modules: a chip needs at least one ScalarCore to run a trace");
    return cfg;
}

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

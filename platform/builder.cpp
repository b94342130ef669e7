#include "platform/builder.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "models/ici.h"
#include "models/sim_time.h"

namespace xpu::platform {

namespace {

// A plain SystemC module whose children are constructed by `body` while it is on the
// construction stack: this is how modules get hierarchical names (xpu.chip0.core0.mxu0).
struct Container : sc_core::sc_module {
    Container(const sc_core::sc_module_name& n, const std::function<void()>& body) : sc_core::sc_module(n) {
        body();
    }
};

struct Tree {
    std::map<std::string, Tree> children;  // std::map: deterministic construction order
    const ModuleDecl* decl = nullptr;
};

}  // namespace

namespace {

// The container of a module: its path up to the last dot ("core0" for core0.scalar, "" at the top).
std::string container_of(const std::string& path) {
    const auto dot = path.rfind('.');
    return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

// The VMEM of the core declared by `core` (space_bases' rule, builder.h), among the map's vmem
// entries `vmems` (two or more); nullptr if neither the bindings nor the nesting decide.
const AddressMapEntry* vmem_of(const PlatformConfig& cfg, const ModuleDecl& core, const std::vector<const AddressMapEntry*>& vmems) {
    auto mapped = [&](const std::string& target) -> const AddressMapEntry* {
        for (const auto* e : vmems)
            if (e->target == target) return e;
        return nullptr;
    };
    // The mapped VMEMs its vector units' mem sockets are bound to.
    std::set<const AddressMapEntry*> bound;
    for (const auto& b : cfg.bindings) {
        if (b.from.module != core.path || b.from.socket != "vpu") continue;
        for (const auto& m : cfg.bindings)
            if (m.from.module == b.to.module && m.from.socket == "mem")
                if (const auto* e = mapped(m.to.module)) bound.insert(e);
    }
    if (bound.size() == 1) return *bound.begin();
    // The mapped VMEM in its container.
    const AddressMapEntry* beside = nullptr;
    for (const auto* e : vmems)
        if (container_of(e->target) == container_of(core.path)) {
            if (beside) return nullptr;
            beside = e;
        }
    return beside;
}

}  // namespace

SpaceBases space_bases(const PlatformConfig& cfg) {
    SpaceBases s;
    std::vector<const AddressMapEntry*> vmems;
    for (const auto& e : cfg.address_map) {
        if (e.window == Window::Flags) s.flags = e.base;
        if (e.window == Window::Vmem) vmems.push_back(&e);
        if (e.window != Window::Vmem && e.window != Window::Hbm) continue;
        auto k = static_cast<unsigned>(e.window == Window::Vmem ? Space::Vmem : Space::Hbm);
        if (!s.has[k] || e.base < s.base[k]) s.base[k] = e.base;
        s.has[k] = true;
    }
    std::vector<const ModuleDecl*> cores;
    for (const auto& m : cfg.modules)
        if (m.spec->core_id()) cores.push_back(&m);
    const std::uint64_t lowest = s.base[static_cast<unsigned>(Space::Vmem)];
    for (const ModuleDecl* c : cores) {
        CoreVmem v{lowest, vmems.size() == 1 ? vmems.front()->target : std::string()};
        if (vmems.size() > 1) {
            if (const AddressMapEntry* e = vmem_of(cfg, *c, vmems)) {
                v = {e->base, e->target};
            } else if (cores.size() > 1) {
                std::string names;
                for (const auto* e : vmems) names += (names.empty() ? "" : ", ") + e->target;
                throw ConfigError(c->where + ": chip.modules." + c->path + " (core " + std::to_string(*c->spec->core_id()) +
                                  "): cannot tell which VMEM its vmem: operands address: the address map has " +
                                  std::to_string(vmems.size()) + " vmem entries (" + names +
                                  ") and a chip with several cores needs one per core (expected exactly one of them "
                                  "bound to the mem socket of the core's vector units, or exactly one in its container '" +
                                  container_of(c->path) + "')");
            }
        }
        s.vmem_of_core[*c->spec->core_id()] = v;
    }
    return s;
}

std::uint64_t SpaceBases::vmem_base(std::uint16_t core) const {
    auto it = vmem_of_core.find(core);
    return it == vmem_of_core.end() ? base[static_cast<unsigned>(Space::Vmem)] : it->second.base;
}

std::vector<std::uint64_t> SpaceBases::vmem_bases() const {
    std::vector<std::uint64_t> out;
    if (vmem_of_core.empty()) return out;
    for (unsigned k = 0; k <= vmem_of_core.rbegin()->first; ++k) out.push_back(vmem_base(static_cast<std::uint16_t>(k)));
    return out;
}

BindingOrder binding_order(const PlatformConfig& cfg) {
    BindingOrder by_initiator;
    for (const auto& b : cfg.bindings) by_initiator[b.from.module + "." + b.from.socket].push_back(&b);
    for (auto& [sock, list] : by_initiator) {
        bool explicit_idx = list.front()->from.index >= 0;
        for (const auto* b : list)
            if ((b->from.index >= 0) != explicit_idx)
                throw ConfigError(b->where + ": binding '" + b->text + "': give every binding of " + sock +
                                  " an index [i], or none");
        if (!explicit_idx) continue;
        std::stable_sort(list.begin(), list.end(),
                         [](const BindingDecl* a, const BindingDecl* b) { return a->from.index < b->from.index; });
        for (std::size_t i = 0; i < list.size(); ++i)
            if (list[i]->from.index != static_cast<int>(i))
                throw ConfigError(list[i]->where + ": binding '" + list[i]->text + "': indices of " + sock +
                                  " must be 0.." + std::to_string(list.size() - 1) + ", each once");
    }
    return by_initiator;
}

std::vector<std::string> bound_targets(const BindingOrder& order, const std::string& module, const std::string& socket) {
    std::vector<std::string> out;
    auto it = order.find(module + "." + socket);
    if (it != order.end())
        for (const BindingDecl* b : it->second) out.push_back(b->to.module);
    return out;
}

// What the description implies for the modules of every chip, derived once.
struct Platform::Plan {
    const trace::TraceFile* trace = nullptr;
    SpaceBases spaces;
    unsigned cores_per_chip = 0;
    BindingOrder order;                                            // initiator socket -> its bindings
    std::map<std::string, std::vector<AddressRange>> routes;       // router path -> ranges of its out[i]
    std::map<std::string, std::uint16_t> injector_core;            // injector path -> the core it feeds
    std::map<std::string, std::uint16_t> unit_core;                // unit path -> the core whose vpu/mxu/dma socket binds it
    std::map<std::pair<unsigned, unsigned>, std::size_t> stream_of;  // (chip, core) -> trace stream
    Tree tree;                                                     // the description's nesting
};

namespace {

// Which address ranges each router's out[i] reaches: the address-map entries of the module
// bound there. (Any module whose `out` socket reaches mapped memories is a router.)
std::map<std::string, std::vector<AddressRange>> routes_of(const PlatformConfig& cfg, const BindingOrder& order) {
    std::map<const BindingDecl*, unsigned> index_of;
    for (const auto& entry : order)
        for (std::size_t i = 0; i < entry.second.size(); ++i) index_of[entry.second[i]] = static_cast<unsigned>(i);
    std::map<std::string, std::vector<AddressRange>> routes;
    for (const auto& b : cfg.bindings) {
        if (b.from.socket != "out") continue;
        const ModuleDecl* from = cfg.module(b.from.module);
        for (const auto& e : cfg.address_map)
            if (e.target == b.to.module)
                routes[from->path].push_back({e.base, *cfg.module(e.target)->spec->capacity(), index_of[&b]});
    }
    return routes;
}

// Which injector feeds which core: the target of the core's imem binding.
std::map<std::string, std::uint16_t> injector_cores(const PlatformConfig& cfg) {
    std::map<std::string, std::uint16_t> injector_core;
    for (const auto& b : cfg.bindings) {
        const ModuleDecl* from = cfg.module(b.from.module);
        if (from->spec->core_id() && b.from.socket == "imem") injector_core[b.to.module] = *from->spec->core_id();
    }
    return injector_core;
}

// Which core commands each unit: the core whose vpu, mxu or dma socket is bound to it (a unit
// bound to several cores: the first binding's).
std::map<std::string, std::uint16_t> unit_cores(const PlatformConfig& cfg) {
    std::map<std::string, std::uint16_t> unit_core;
    for (const auto& b : cfg.bindings) {
        const ModuleDecl* from = cfg.module(b.from.module);
        if (from->spec->core_id() && (b.from.socket == "vpu" || b.from.socket == "mxu" || b.from.socket == "dma"))
            unit_core.emplace(b.to.module, *from->spec->core_id());
    }
    return unit_core;
}

// The trace stream of each (chip, core); ConfigError if a stream has no core to run on.
std::map<std::pair<unsigned, unsigned>, std::size_t> streams_of(const PlatformConfig& cfg, const trace::TraceFile* trace) {
    std::map<std::pair<unsigned, unsigned>, std::size_t> stream_of;
    if (!trace) return stream_of;
    std::set<unsigned> core_ids;
    for (const auto& m : cfg.modules)
        if (auto id = m.spec->core_id()) core_ids.insert(*id);
    for (std::size_t i = 0; i < trace->streams().size(); ++i) {
        const auto& s = trace->streams()[i];
        if (s.chip >= cfg.chips || !core_ids.count(s.core))
            throw ConfigError(trace->path() + ": stream " + std::to_string(i) + " (chip " + std::to_string(s.chip) +
                              ", core " + std::to_string(s.core) + ") has no core to run on: " + cfg.file + " has " +
                              std::to_string(cfg.chips) + " chip(s) with " + std::to_string(core_ids.size()) +
                              " core(s) each");
        stream_of[{s.chip, s.core}] = i;
    }
    return stream_of;
}

Tree tree_of(const PlatformConfig& cfg) {
    Tree tree;
    for (const auto& m : cfg.modules) {
        Tree* t = &tree;
        std::size_t pos = 0;
        while (true) {
            auto dot = m.path.find('.', pos);
            t = &t->children[m.path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos)];
            if (dot == std::string::npos) break;
            pos = dot + 1;
        }
        t->decl = &m;
    }
    return tree;
}

std::string sockets_of(XpuModule* m) {
    std::string s;
    for (const auto& p : m->ports()) s += (s.empty() ? "" : ", ") + p.name + (p.initiator ? " (initiator)" : " (target)");
    return s;
}

}  // namespace

Platform::~Platform() = default;

XpuModule* Platform::find(const std::string& full_name) const {
    for (auto* m : modules_)
        if (full_name == m->name()) return m;
    return nullptr;
}

void Platform::set_recorder(Recorder* r) {
    for (auto* m : modules_) m->set_recorder(r);
}

Platform::Platform(const PlatformConfig& cfg, const trace::TraceFile* trace, const std::function<bool()>& stop_requested) {
    auto check_stop = [&] {
        if (stop_requested && stop_requested()) throw BuildInterrupted{};
    };
    // A build that fails or is interrupted leaves what it made to the process's end: SystemC
    // unregisters each object from a list as it is destroyed, quadratic in their number (a
    // 4096-chip platform took seconds to tear down after a Ctrl-C), and a process can elaborate
    // only once anyway. Kept reachable, so leak checkers see no leak.
    try {
        check_time_resolution();
        // Temporal decoupling: the TLM-2.0 global quantum, set here once for every initiator
        // (models/quantum.h).
        tlm_utils::tlm_quantumkeeper::set_global_quantum(to_sc(ns_to_ticks(cfg.quantum_ns)));
        Plan plan;
        plan.trace = trace;
        plan.spaces = space_bases(cfg);
        spaces_ = plan.spaces;
        for (const auto& m : cfg.modules)
            if (m.spec->core_id()) ++plan.cores_per_chip;
        plan.order = binding_order(cfg);
        plan.routes = routes_of(cfg, plan.order);
        plan.injector_core = injector_cores(cfg);
        plan.unit_core = unit_cores(cfg);
        plan.stream_of = streams_of(cfg, trace);
        plan.tree = tree_of(cfg);
        chip_modules_.resize(cfg.chips);
        chip_by_path_.resize(cfg.chips);

        owned_.push_back(std::make_unique<Container>("xpu", [&] {
            for (unsigned c = 0; c < cfg.chips; ++c) {
                check_stop();
                owned_.push_back(std::make_unique<Container>(("chip" + std::to_string(c)).c_str(), [&] { build_chip(cfg, plan, c); }));
            }
            check_stop();
            if (cfg.chips > 1) owned_.push_back(std::make_unique<Container>("links", [&] { build_links(cfg); }));
        }));
        check_stop();
        if (cfg.chips > 1) connect_links(cfg);
        for (unsigned chip = 0; chip < cfg.chips; ++chip) {
            check_stop();
            bind_chip(cfg, plan, chip);
        }
    } catch (...) {
        static auto* kept = new std::vector<std::unique_ptr<sc_core::sc_module>>;
        for (auto& m : owned_) kept->push_back(std::move(m));
        throw;
    }
}

// Instantiates one chip's modules (inside its container), in the description's nesting.
void Platform::build_chip(const PlatformConfig& cfg, const Plan& plan, unsigned chip) {
    std::function<void(const Tree&)> build = [&](const Tree& node) {
        for (const auto& entry : node.children) {
            // Not a structured binding: C++17 does not let a lambda capture one (clang rejects it).
            const std::string& name = entry.first;
            const Tree& child = entry.second;
            if (!child.decl) {
                owned_.push_back(std::make_unique<Container>(name.c_str(), [&] { build(child); }));
                continue;
            }
            const ModuleDecl& d = *child.decl;
            BuildContext ctx;
            ctx.chip = static_cast<std::uint16_t>(chip);
            ctx.cycle = cycle_ticks(cfg.clock_ghz);
            ctx.space_base = plan.spaces.base;
            ctx.core_vmem_base = plan.spaces.vmem_bases();
            ctx.vmem_base = ctx.space_base[static_cast<unsigned>(Space::Vmem)];
            if (auto it = plan.unit_core.find(d.path); it != plan.unit_core.end()) ctx.vmem_base = plan.spaces.vmem_base(it->second);
            ctx.flags_base = plan.spaces.flags;
            ctx.dims = cfg.topology.dims;
            ctx.links_per_neighbour = cfg.topology.links_per_neighbour;
            ctx.switched = cfg.topology.kind == "switch";
            ctx.trace = plan.trace;
            ctx.cores = plan.cores_per_chip;
            if (auto it = plan.routes.find(d.path); it != plan.routes.end()) ctx.routes = it->second;
            for (const auto& e : cfg.address_map)
                if (e.target == d.path) ctx.base = e.base;
            if (auto it = plan.injector_core.find(d.path); it != plan.injector_core.end()) {
                auto s = plan.stream_of.find({chip, it->second});
                if (s != plan.stream_of.end()) ctx.stream = s->second;
            } else if (auto core = d.spec->core_id()) {
                auto s = plan.stream_of.find({chip, *core});
                if (s != plan.stream_of.end()) ctx.stream = s->second;
            }
            auto mod = d.spec->build(name, ctx);
            XpuModule* raw = mod.get();
            raw->set_chip(static_cast<int>(chip));
            modules_.push_back(raw);
            chip_modules_[chip].push_back(raw);
            if (auto* core = dynamic_cast<ScalarCore*>(raw)) cores_.push_back(core);
            chip_by_path_[chip][d.path] = raw;
            owned_.push_back(std::move(mod));
        }
    };
    build(plan.tree);
}

// Inter-chip links: per chip, per dimension, per direction (+, -), links_per_neighbour each,
// in the order of the IciPort's links[] socket (see IciPort::route).
void Platform::build_links(const PlatformConfig& cfg) {
    const auto& dims = cfg.topology.dims;
    if (cfg.topology.kind == "switch") {  // one uplink per chip into one crossbar (models/ici.h)
        IciSwitchConfig sc;
        static_cast<IciSwitchParams&>(sc) = cfg.topology.crossbar;
        sc.ports = cfg.chips;
        sc.packet_bytes = cfg.topology.link.packet_bytes;
        sc.packet_overhead_bytes = cfg.topology.link.packet_overhead_bytes;
        auto sw = std::make_unique<IciSwitch>("switch", sc);
        switch_ = sw.get();
        modules_.push_back(sw.get());
        owned_.push_back(std::move(sw));
        for (unsigned c = 0; c < cfg.chips; ++c) {
            auto link = std::make_unique<IciLink>(("chip" + std::to_string(c) + "_up").c_str(), cfg.topology.link);
            link->set_from_chip(static_cast<int>(c));
            link_plan_.push_back({c, c, link.get()});
            modules_.push_back(link.get());
            owned_.push_back(std::move(link));
        }
        return;
    }
    for (unsigned c = 0; c < cfg.chips; ++c) {
        std::vector<unsigned> coord;
        unsigned rest = c;
        for (unsigned d : dims) {
            coord.push_back(rest % d);
            rest /= d;
        }
        for (std::size_t d = 0; d < dims.size(); ++d)
            for (int dir = 0; dir < 2; ++dir)
                for (unsigned j = 0; j < cfg.topology.links_per_neighbour; ++j) {
                    std::vector<unsigned> nc = coord;
                    nc[d] = (coord[d] + (dir == 0 ? 1 : dims[d] - 1)) % dims[d];
                    unsigned to = 0, mul = 1;
                    for (std::size_t k = 0; k < dims.size(); ++k) {
                        to += nc[k] * mul;
                        mul *= dims[k];
                    }
                    std::string name = "chip" + std::to_string(c) + "_" + "xyz"[d] + (dir == 0 ? "p" : "m");
                    if (cfg.topology.links_per_neighbour > 1) name += std::to_string(j);
                    auto link = std::make_unique<IciLink>(name.c_str(), cfg.topology.link);
                    link->set_from_chip(static_cast<int>(c));  // on no chip: chip() stays -1
                    link_plan_.push_back({c, to, link.get()});
                    modules_.push_back(link.get());
                    owned_.push_back(std::move(link));
                }
    }
}

// Binds each link between the IciPorts of the chips it joins (their links[] and in sockets).
void Platform::connect_links(const PlatformConfig& cfg) {
    std::vector<XpuModule*> ports(cfg.chips, nullptr);
    for (auto* m : modules_)
        if (m->role() == Role::IciPort) {
            if (ports[static_cast<unsigned>(m->chip())])
                throw ConfigError(cfg.file + ": chip.modules: a chip has more than one IciPort; the links need exactly one");
            ports[static_cast<unsigned>(m->chip())] = m;
        }
    if (!ports[0])
        throw ConfigError(cfg.file + ": chip.modules: " + std::to_string(cfg.chips) +
                          " chips need an IciPort per chip (type: IciPort) to connect their links");
    if (switch_) {  // chip c: links[0] -> its uplink -> the crossbar -> out[c] -> its in
        for (const auto& lp : link_plan_) {
            SocketPort* out = ports[lp.from]->port("links");
            SocketPort* in = ports[lp.from]->port("in");
            if (!out || !in || !out->initiator || in->initiator)
                throw ConfigError(cfg.file + ": chip.modules: " + ports[lp.from]->kind() +
                                  " plays an IciPort but lacks its links (initiator) or in (target) socket");
            out->bind(*lp.link->port("in")->target);
            lp.link->port("out")->bind(*switch_->port("in")->target);
            ++out->bound;
            ++lp.link->port("in")->bound;
            ++lp.link->port("out")->bound;
            ++switch_->port("in")->bound;
        }
        for (unsigned c = 0; c < cfg.chips; ++c) {
            SocketPort* in = ports[c]->port("in");
            switch_->port("out")->bind(*in->target);
            ++switch_->port("out")->bound;
            ++in->bound;
        }
        return;
    }
    for (const auto& lp : link_plan_) {
        SocketPort* out = ports[lp.from]->port("links");
        SocketPort* in = ports[lp.to]->port("in");
        if (!out || !in || !out->initiator || in->initiator)
            throw ConfigError(cfg.file + ": chip.modules: " + (out && out->initiator ? ports[lp.to] : ports[lp.from])->kind() +
                              " plays an IciPort but lacks its links (initiator) or in (target) socket");
        out->bind(*lp.link->port("in")->target);
        lp.link->port("out")->bind(*in->target);
        ++out->bound;
        ++in->bound;
        ++lp.link->port("in")->bound;
        ++lp.link->port("out")->bound;
    }
}

// Binds one chip's sockets in the order the description gives (multi sockets: in index
// order), then checks that every required socket of the chip is bound.
void Platform::bind_chip(const PlatformConfig& cfg, const Plan& plan, unsigned chip) {
    const auto& by_path = chip_by_path_[chip];
    for (const auto& [sock, list] : plan.order)
        for (const BindingDecl* b : list) {
            XpuModule* from = by_path.at(b->from.module);
            XpuModule* to = by_path.at(b->to.module);
            SocketPort* fp = from->port(b->from.socket);
            SocketPort* tp = to->port(b->to.socket);
            auto where = [&] { return b->where + ": binding '" + b->text + "': "; };  // made only for an error
            if (!fp) throw ConfigError(where() + b->from.module + " (" + from->kind() + ") has no socket '" + b->from.socket + "' (sockets: " + sockets_of(from) + ")");
            if (!tp) throw ConfigError(where() + b->to.module + " (" + to->kind() + ") has no socket '" + b->to.socket + "' (sockets: " + sockets_of(to) + ")");
            if (!fp->initiator) throw ConfigError(where() + b->from.text() + " is a target socket; a binding goes initiator -> target");
            if (tp->initiator) throw ConfigError(where() + b->to.text() + " is an initiator socket; a binding goes initiator -> target");
            if (!fp->multi && (fp->bound || b->from.index > 0))
                throw ConfigError(where() + b->from.text() + " takes a single binding");
            if (!tp->multi && tp->bound) throw ConfigError(where() + b->to.text() + " is already bound; it takes a single binding");
            fp->bind(*tp->target);
            ++fp->bound;
            ++tp->bound;
        }
    for (auto* m : chip_modules_[chip]) {
        for (const auto& p : m->ports())
            if (p.required && !p.bound)
                throw ConfigError(cfg.file + ": " + std::string(m->name()) + " (" + m->kind() + "): socket '" + p.name +
                                  "' is not bound; add a binding for it to chip.bindings");
    }
}

}  // namespace xpu::platform

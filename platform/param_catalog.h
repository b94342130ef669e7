// The reference of every key a platform description may hold, built from the declarations
// themselves (models/params.h): sim_main --list-types prints it, and docs/platform.md carries its
// Markdown form, which a test keeps identical to what the declarations say.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/params.h"

namespace xpu::platform {

// Something whose parameters can be declared to a visitor: a params struct or a module spec.
class ParamSet {
public:
    virtual ~ParamSet() = default;
    virtual void declare(ParamVisitor& v) = 0;
};

// A ParamSet holding one params struct at its defaults.
template <class Params>
class ParamsOf : public ParamSet {
public:
    void declare(ParamVisitor& v) override { params.declare(v); }
    Params params;
};

// One mapping of the description and the keys it takes: the top level, `sim`, `chip`,
// `topology`... or the keys of one module type.
struct ParamGroup {
    std::string name;  // "sim", "topology.link", "MatrixUnit"
    std::string doc;
    bool module_type = false;
    std::function<std::unique_ptr<ParamSet>()> make;  // at its defaults
};

// Every group: the description's own mappings first, then the module types in registry order.
std::vector<ParamGroup> param_groups();

// One declared key as the reference shows it.
struct ParamDoc {
    std::string key;
    std::string type;   // integer, size, number, bool, string; or what a section holds
    std::string range;  // "1..4096", "1KiB..1024TiB"; empty for bool, string and sections
    std::string unit;   // empty for sizes (bytes by type), bool, string and sections
    std::string def;    // the default as the description writes it; empty for sections
    std::string doc;
    bool numeric = false;
    bool dumped_when_set = false;  // --dump-config shows it only when set (Dump::WhenSet)
};

// Collects the declarations of a ParamSet.
class ParamCatalog : public ParamVisitor {
public:
    void u16(const char* key, std::uint16_t& v, unsigned lo, unsigned hi, const char* unit, const char* doc) override;
    void u32(const char* key, unsigned& v, unsigned lo, unsigned hi, const char* unit, const char* doc) override;
    void u64(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char* unit,
             const char* doc) override;
    void bytes(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char* doc) override;
    void real(const char* key, double& v, double lo, double hi, const char* unit, const char* doc) override;
    void ticks_ns(const char* key, Tick& v, double lo_ns, double hi_ns, const char* doc, Dump dump) override;
    void boolean(const char* key, bool& v, const char* doc) override;
    void text(const char* key, std::string& v, const char* doc) override;
    void choice(const char* key, std::string& v, const std::vector<std::string>& options, const char* doc) override;
    void section(const char* key, const char* kind, const char* doc) override;

    const std::vector<ParamDoc>& docs() const { return docs_; }

private:
    std::vector<ParamDoc> docs_;
};

std::vector<ParamDoc> param_docs(const ParamGroup& g);

// sim_main --list-types: "GROUP: doc" then "  key (type, range unit, default D): doc" per key.
std::string param_reference_text();
// The same as Markdown tables (the reference section of docs/platform.md).
std::string param_reference_markdown();

}  // namespace xpu::platform

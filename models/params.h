// Each model's user parameters, declared once. A model's XParams struct holds its parameters
// with their defaults (the field initialisers), and its declare() names every field with its
// key, range, unit and meaning, one line each. A ParamVisitor walks those declarations: the
// platform reads a YAML mapping with one (platform/param_reader.h), writes the reference of
// every key with another (sim_main --list-types, docs/platform.md), and tests check them with
// their own. The models never see YAML; an architect instantiating a model by hand sets the fields.
//
// Values the builder derives (clock period, quantum, bases, routes...) are not parameters: they
// live in the model's XConfig, which derives from XParams.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/instruction.h"

namespace xpu {

// Whether the effective configuration (--dump-config) shows a parameter the description leaves
// at its default. Hardware parameters are always shown, so that the dump describes the whole
// chip; a knob of the simulator's own resolution may be shown only when set.
enum class Dump { Always, WhenSet };

class ParamVisitor {
public:
    virtual ~ParamVisitor() = default;
    // Integers; `unit` is what is counted ("cycles", "instructions", "bytes/cycle").
    virtual void u16(const char* key, std::uint16_t& v, unsigned lo, unsigned hi, const char* unit, const char* doc) = 0;
    virtual void u32(const char* key, unsigned& v, unsigned lo, unsigned hi, const char* unit, const char* doc) = 0;
    virtual void u64(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char* unit,
                     const char* doc) = 0;
    // A size in bytes, written as a count or with a unit (32MiB).
    virtual void bytes(const char* key, std::uint64_t& v, std::uint64_t lo, std::uint64_t hi, const char* doc) = 0;
    virtual void real(const char* key, double& v, double lo, double hi, const char* unit, const char* doc) = 0;
    // A duration given in ns (the key says so: latency_ns) and kept in ps.
    virtual void ticks_ns(const char* key, Tick& v, double lo_ns, double hi_ns, const char* doc,
                          Dump dump = Dump::Always) = 0;
    virtual void boolean(const char* key, bool& v, const char* doc) = 0;
    virtual void text(const char* key, std::string& v, const char* doc) = 0;
    // A word out of a fixed set ("ws", "os", "is"); the reader rejects any other. By default a
    // plain text (for visitors that do not check or document values).
    virtual void choice(const char* key, std::string& v, const std::vector<std::string>& options, const char* doc) {
        (void)options;
        text(key, v, doc);
    }
    // A key whose value is a mapping or a list that its owner reads itself (chip.modules,
    // topology.dims): declared so that the reference lists it and it is not an unknown key.
    // `kind` says what it holds ("mapping", "list of integers").
    virtual void section(const char* key, const char* kind, const char* doc) = 0;
};

}  // namespace xpu

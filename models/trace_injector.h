// TraceInjector: the instruction memory of one core, replaying one stream of a recorded trace.
// The core pulls instructions in batches over TLM (target socket `port`): a READ whose data
// pointer is an array of Instruction and whose length is its capacity in bytes; the injector
// fills it and sets the length to what it wrote (0 = end of stream). With a FetchInPlace
// extension on the payload (models/fetch_in_place.h) it lends its reader's instructions in place
// instead and sets the length to what it lent. Memory is bounded by one batch here plus one
// trace block in the reader (or the check's piece it reads), whatever the trace length.
#pragma once

#include <memory>
#include <string>


#include "models/lt_target_socket.h"
#include "models/params.h"
#include "models/xpu_module.h"
#include "traces/trace_reader.h"

namespace xpu {

// No user parameters: what it plays is derived from the bindings.
// What a platform description sets: the module type's keys (declare(), docs/platform.md).
struct TraceInjectorParams {
    void declare(ParamVisitor&) {}
};

// What the builder derives.
struct TraceInjectorConfig : TraceInjectorParams {
    const trace::TraceFile* trace = nullptr;  // opened by the caller, outlives the module
    std::size_t stream = 0;                    // index in trace->streams()
};

class TraceInjector : public XpuModule {
public:
    LtTargetSocket<TraceInjector> port;

    TraceInjector(const sc_core::sc_module_name& n, const TraceInjectorConfig& cfg);
    const char* kind() const override { return "TraceInjector"; }
    Role role() const override { return Role::Injector; }
    std::vector<Stat> stats() const override;
    std::uint64_t delivered() const { return delivered_; }
    std::uint64_t expected() const;

private:
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    TraceInjectorConfig cfg_;
    std::unique_ptr<trace::StreamReader> reader_;
    std::uint64_t delivered_ = 0;
};

}  // namespace xpu

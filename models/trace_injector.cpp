#include "models/trace_injector.h"

#include "models/fetch_in_place.h"

namespace xpu {

TraceInjector::TraceInjector(const sc_core::sc_module_name& n, const TraceInjectorConfig& cfg)
    : XpuModule(n), port("port"), cfg_(cfg) {
    port.register_b_transport(this, &TraceInjector::b_transport);
    expose_target("port", port, false);
}

std::uint64_t TraceInjector::expected() const {
    return cfg_.trace ? cfg_.trace->streams().at(cfg_.stream).instructions : 0;
}

void TraceInjector::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time&) {
    if (!reader_) {
        if (!cfg_.trace) {  // an injector with no stream is a core with nothing to run
            gp.set_data_length(0);
            gp.set_response_status(tlm::TLM_OK_RESPONSE);
            return;
        }
        reader_ = std::make_unique<trace::StreamReader>(*cfg_.trace, cfg_.stream);
    }
    auto* out = reinterpret_cast<Instruction*>(gp.get_data_ptr());
    std::size_t cap = gp.get_data_length() / sizeof(Instruction);
    std::size_t n = 0;
    auto* lend = gp.get_extension<FetchInPlace>();  // the core reads ours in place: no copy
    try {
        if (lend) {
            lend->first = nullptr;
            lend->count = cap ? reader_->read_in_place(lend->first, cap) : 0;
            n = lend->count;
        } else {
            n = reader_->read(out, cap);
        }
    } catch (const trace::TraceError& e) {
        SC_REPORT_ERROR("xpusim/trace", e.what());
        gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
        return;
    }
    delivered_ += n;
    gp.set_data_length(static_cast<unsigned>(n * sizeof(Instruction)));
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

std::vector<Stat> TraceInjector::stats() const {
    return {{"instructions_delivered", static_cast<double>(delivered_), true,
             "instructions handed to the core", "instructions"}};
}

}  // namespace xpu

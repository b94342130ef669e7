// Helpers for tests that simulate: write a trace from code, run it on a platform description
// (with --set style overrides), and keep every event the models report.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/recorder.h"
#include "platform/simulation.h"
#include "traces/gen/collective.h"
#include "traces/gen/emit.h"
#include "traces/gen/gemm.h"
#include "traces/gen/transformer.h"

namespace xpu::test {

// Everything a run reported, in the order the models reported it.
struct Recording : Recorder {
    struct Instr {
        InstrEvent ev;
        Instruction in;  // a copy: the event's pointer is only valid during the call
    };
    std::vector<Instr> instructions;
    std::vector<DmaEvent> dmas;
    std::vector<FlagEvent> flags;
    std::vector<MemEvent> mems;
    void on_instruction(const InstrEvent& e) override { instructions.push_back({e, *e.in}); }
    void on_dma(const DmaEvent& e) override { dmas.push_back(e); }
    void on_flag(const FlagEvent& e) override { flags.push_back(e); }
    void on_mem(const MemEvent& e) override { mems.push_back(e); }
};

std::string source_path(const std::string& rel);  // XPU_SOURCE_DIR/rel
std::string temp_path(const std::string& name);   // a fresh file name in the test's temp folder
std::string file_bytes(const std::string& path);  // the whole file ("" if it cannot be read)

// Writes a one-stream trace (chip 0, core 0) whose instructions `body` emits; adds halt.
std::string write_trace(const std::string& name, const std::function<void(gen::Emitter&)>& body);

// Workload traces written by the generator's library, in the test's temp folder.
struct GemmTrace {
    std::string path;
    std::uint64_t flops = 0, hbm_read = 0, hbm_written = 0;
};
GemmTrace gemm_trace(const std::string& name, const gen::GemmParams& p);
std::string transformer_trace(const std::string& name, const gen::TransformerParams& p,
                              gen::TransformerSummary* summary = nullptr);
std::string collective_trace(const std::string& name, const gen::CollectiveParams& p);

struct Run {
    platform::PlatformConfig cfg;
    std::unique_ptr<platform::Simulation> sim;
    Recording rec;
    platform::RunResult result;
};
// Loads configs/xpu.yaml (or `platform`) with `sets`, runs `trace`, records everything.
std::unique_ptr<Run> simulate(const std::string& trace, const std::vector<std::string>& sets = {},
                              const std::string& platform = "configs/xpu.yaml", bool record = true);

// Cycle time of a loaded platform, in ps (what every model of the chip was given).
Tick cycle_of(const Run& r);

}  // namespace xpu::test

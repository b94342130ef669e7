// MatrixUnit: a systolic array of rows (R) x cols (C) MAC cells (the MXU), weight-stationary by
// default; `dataflow` picks what stays in the cells.
//
// Timing (cycles), the classic analytic model rather than per-PE simulation (SCALE-Sim's fold
// model: scalesim/compute/systolic_compute_{ws,os,is}.py). The ISA is the same for every
// dataflow: mpush stages a weight tile (k x n), matmul streams M LHS rows against it, mpop moves
// results out; what differs is what the array holds and so what a fold is.
//
// ws (weight-stationary, default): the k x n weight tile (k <= R, n <= C) is the fold.
//   mpush  loads it: `rows` cycles (one row of weights enters per cycle).
//   matmul streams M LHS rows: the array takes a new row each cycle (M cycles of occupancy);
//          with rows_per_cycle = r > 1 (a what-if array r times as fast), pushes take
//          ceil(rows / r) and matmuls ceil(M / r) cycles of occupancy, fill and drain unchanged;
//          the last result leaves M + rows + cols - 2 cycles after the first row entered
//          (fill through the rows, skew across the cols, drain).
//   A fold (push + matmul) without double buffering: M + 2R + C - 2 cycles.
// os (output-stationary): each cell holds one output; a fold is an R x C output tile (R of the
//   M rows, the n <= C columns) with the whole k (any size) streamed through it:
//   k + R + C - 2 cycles (k operands in, skewed over R + C - 2, outputs drained), ceil(M / R)
//   folds per matmul; mpush only stages the operand that streams from the top (no array time).
// is (input-stationary): the LHS tile is held, k <= R of its K down the rows and C of its M rows
//   across the columns; the n weight columns (any number) stream through it: R cycles to load the
//   inputs, then n + R + C - 2: n + 2R + C - 2 per fold, ceil(M / C) folds per matmul; mpush only
//   stages the streamed operand.
// Weights, LHS rows and results travel separate in-order paths; a matmul uses the tile pushed last
// before it in program order. With double buffering the next weight tile loads into a shadow
// buffer while the current one streams, so back-to-back folds cost max(M, rows) cycles each; without it a push waits for
// the array to drain, and each fold costs rows + (M + rows + cols - 2) cycles, exactly the
// fold model of SCALE-Sim-style analytic simulators. os and is without double buffering: the
// folds of a matmul, and successive matmuls, follow each other with nothing overlapped (fold
// after fold, SCALE-Sim's model); with it, a fold starts once the previous one has streamed its
// operands (os: k cycles apart; is: max(n, R) apart, the next inputs loading meanwhile), and the
// last one drains.
#pragma once

#include <string>


#include "models/lt_target_socket.h"
#include "models/busy_tracker.h"
#include "models/ceil_div.h"
#include "models/params.h"
#include "models/unit_command.h"
#include "models/xpu_module.h"

namespace xpu {

// What a platform description sets: the module type's keys (declare(), docs/platform.md).
struct MatrixUnitParams {
    unsigned rows = 128;
    unsigned cols = 128;
    bool double_buffer = true;
    unsigned queue_depth = 32;  // the lookahead that hides weight loads
    unsigned pop_rows_per_cycle = 8;
    unsigned pop_latency = 4;
    unsigned rows_per_cycle = 1;  // LHS rows streamed and weight rows loaded per cycle
    std::string dataflow = "ws";  // ws | os | is

    void declare(ParamVisitor& v) {
        v.u32("rows", rows, 1, 4096, "rows", "systolic array rows (weight rows, the K of a tile)");
        v.u32("cols", cols, 1, 4096, "columns", "systolic array columns (the N of a tile)");
        v.boolean("double_buffer", double_buffer, "shadow weight buffer: load the next tile while streaming");
        v.u32("queue_depth", queue_depth, 1, 4096, "instructions", "instructions waiting in the unit");
        v.u32("pop_rows_per_cycle", pop_rows_per_cycle, 1, 4096, "rows/cycle", "result rows popped per cycle");
        v.u32("pop_latency", pop_latency, 0, 1000, "cycles", "pop latency, cycles");
        v.u32("rows_per_cycle", rows_per_cycle, 1, 64, "rows/cycle",
              "LHS rows streamed and weight rows loaded per cycle: 1 in a classic systolic array, N for an array "
              "N times as fast at the same shape (fill and drain unchanged); the what-if for matrix throughput");
        v.choice("dataflow", dataflow, {"ws", "os", "is"},
                 "what stays in the cells: ws weights (a fold: M + 2R + C - 2 cycles), os outputs (K + R + C - 2), "
                 "is inputs (N + 2R + C - 2), SCALE-Sim's fold models");
    }
};

// The parameters and what the builder derives.
struct MatrixUnitConfig : MatrixUnitParams {
    Tick cycle = 1000;
};

class MatrixUnit : public XpuModule {
public:
    LtTargetSocket<MatrixUnit> cmd;

    MatrixUnit(const sc_core::sc_module_name& n, const MatrixUnitConfig& cfg);
    const char* kind() const override { return "MatrixUnit"; }
    Role role() const override { return Role::Matrix; }
    ModuleFacts facts() const override {
        ModuleFacts f;
        f.flops = static_cast<double>(flops_);
        f.peak_flops_per_s = peak_flops_per_s();
        return f;
    }
    std::optional<Tick> busy_time() const override { return busy_.total(); }
    std::vector<Stat> stats() const override;
    // Peak multiply-accumulates per second of this unit, for roofline bounds.
    double peak_flops_per_s() const {
        return 2.0 * cfg_.rows * cfg_.cols * cfg_.rows_per_cycle * (1e12 / static_cast<double>(cfg_.cycle));
    }
    std::uint64_t flops() const { return flops_; }

private:
    enum class Flow { Ws, Os, Is };
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    bool fits(std::uint64_t k, std::uint64_t n) const;
    const char* fit_rule(bool matmul) const;

    MatrixUnitConfig cfg_;
    QueueSlots queue_;
    Flow flow_;
    CeilDiv per_row_cycle_, per_pop_cycle_;  // ceil(rows / rows_per_cycle), ceil(rows / pop_rows_per_cycle)
    Tick last_start_ = 0;        // of the LHS path (matmul)
    Tick weight_port_free_ = 0;  // the weight-load path
    Tick shadow_free_ = 0;       // when the buffer a push writes may be overwritten
    Tick weights_ready_ = 0;     // the newest pushed tile is loaded
    bool weights_used_ = true;   // a matmul has already consumed the newest tile
    Tick stream_free_ = 0;       // the next LHS row may enter
    Tick drain_done_ = 0;        // every issued matmul has left the array
    Tick pop_free_ = 0;
    BusyTracker busy_;
    Tick stream_busy_ = 0, load_busy_ = 0;
    std::uint64_t pushes_ = 0, matmuls_ = 0, pops_ = 0, flops_ = 0;
};

}  // namespace xpu

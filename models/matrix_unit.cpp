#include "models/matrix_unit.h"

#include "models/sim_time.h"

namespace xpu {

MatrixUnit::MatrixUnit(const sc_core::sc_module_name& n, const MatrixUnitConfig& cfg)
    : XpuModule(n), cmd("cmd"), cfg_(cfg), queue_(cfg.queue_depth),
      flow_(cfg.dataflow == "os" ? Flow::Os : cfg.dataflow == "is" ? Flow::Is : Flow::Ws),
      per_row_cycle_(cfg.rows_per_cycle),
      per_pop_cycle_(cfg.pop_rows_per_cycle) {
    cmd.register_b_transport(this, &MatrixUnit::b_transport);
    expose_target("cmd", cmd, false);
}

// What fits one instruction: ws holds a k x n weight tile; os streams k (any) against n <= C
// output columns; is holds k <= R of the inputs and streams n (any) weight columns.
bool MatrixUnit::fits(std::uint64_t k, std::uint64_t n) const {
    switch (flow_) {
        case Flow::Os: return n <= cfg_.cols;
        case Flow::Is: return k <= cfg_.rows;
        default: return k <= cfg_.rows && n <= cfg_.cols;
    }
}

const char* MatrixUnit::fit_rule(bool matmul) const {
    switch (flow_) {
        case Flow::Os: return matmul ? "matmul shape the array cannot take (need m > 0, output-stationary: n <= cols)"
                                     : "operand tile the array cannot take (output-stationary: n <= cols)";
        case Flow::Is: return matmul ? "matmul shape the array cannot take (need m > 0, input-stationary: k <= rows)"
                                     : "operand tile the array cannot take (input-stationary: k <= rows)";
        default: return matmul ? "matmul shape the array cannot take (need m > 0, k <= rows, n <= cols)"
                               : "weight tile larger than the systolic array (k <= rows, n <= cols)";
    }
}

void MatrixUnit::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    auto* c = gp.get_extension<UnitCommand>();
    const Instruction& in = *c->in;
    const Tick now = now_ticks(), offered = now + delay.value();  // annotated time (unit_command.h)
    const Tick cyc = cfg_.cycle;
    Tick accept = queue_.accept(offered);
    // Three in-order paths: weights in (mpush), LHS rows in (matmul), results out (mpop).
    // A push waits only for its buffer, a pop only for its accumulator (the core's
    // scoreboard) and earlier pops; neither waits for queued matmuls to start.
    Tick earliest = max_tick(accept, last_start_);
    Tick start = 0, occupied_until = 0, complete = 0;

    switch (in.op) {
        case Opcode::MPush: {
            if (in.has(kShape) && !fits(in.k, in.n)) {
                c->error = fit_rule(false);
                gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
                return;
            }
            if (flow_ != Flow::Ws) {  // os, is: the pushed operand streams during the matmul
                start = complete = occupied_until = max_tick(accept, weight_port_free_);
                weights_ready_ = start;
                weights_used_ = false;
                ++pushes_;
                break;
            }
            start = max_tick(accept, weight_port_free_);
            // Without a shadow buffer the array must be empty before its weights change.
            start = max_tick(start, cfg_.double_buffer ? shadow_free_ : drain_done_);
            occupied_until = start + ((cfg_.rows + cfg_.rows_per_cycle - 1) / cfg_.rows_per_cycle) * cyc;
            complete = occupied_until;
            weight_port_free_ = occupied_until;
            weights_ready_ = occupied_until;
            shadow_free_ = occupied_until;
            weights_used_ = false;
            load_busy_ += occupied_until - start;
            ++pushes_;
            break;
        }
        case Opcode::MatMul: {
            if (!in.has(kShape) || in.m == 0 || !fits(in.k, in.n)) {
                c->error = fit_rule(true);
                gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
                return;
            }
            if (flow_ != Flow::Ws) {
                const Tick r = cfg_.rows_per_cycle, R = cfg_.rows, C = cfg_.cols;
                const Tick skew = R + C - 2;
                // os: ceil(M / R) folds streaming k; is: ceil(M / C) folds, R to load each input
                // tile, then n streamed.
                const Tick folds = flow_ == Flow::Os ? (in.m + R - 1) / R : (in.m + C - 1) / C;
                const Tick fill = flow_ == Flow::Is ? (R + r - 1) / r : 0;
                const Tick stream = ((flow_ == Flow::Os ? Tick(in.k) : Tick(in.n)) + r - 1) / r;
                const Tick fold = fill + stream + skew;
                start = max_tick(max_tick(earliest, weights_ready_), stream_free_);
                if (!cfg_.double_buffer) {
                    start = max_tick(start, drain_done_);  // fold after fold, nothing overlapped
                    occupied_until = start + folds * fold * cyc;
                    complete = occupied_until;
                } else {
                    const Tick spacing = flow_ == Flow::Os ? stream : std::max(stream, fill);
                    occupied_until = start + (fill + folds * spacing) * cyc;
                    complete = start + ((folds - 1) * spacing + fold) * cyc;
                }
                stream_free_ = occupied_until;
                drain_done_ = max_tick(drain_done_, complete);
                weights_used_ = true;
                stream_busy_ += occupied_until - start;
                flops_ += 2ull * in.m * in.n * in.k;
                ++matmuls_;
                break;
            }
            start = max_tick(max_tick(earliest, weights_ready_), stream_free_);
            occupied_until = start + per_row_cycle_(in.m) * cyc;
            complete = occupied_until + Tick(cfg_.rows + cfg_.cols - 2) * cyc;  // the last row drains
            stream_free_ = occupied_until;
            drain_done_ = max_tick(drain_done_, complete);
            if (!weights_used_) {  // these weights are now in the array: the shadow is free
                shadow_free_ = max_tick(shadow_free_, start);
                weights_used_ = true;
            }
            stream_busy_ += occupied_until - start;
            flops_ += 2ull * in.m * in.n * in.k;
            ++matmuls_;
            break;
        }
        case Opcode::MPop: {
            std::uint64_t rows = in.has(kShape) && in.m ? in.m : cfg_.pop_rows_per_cycle;
            start = max_tick(accept, pop_free_);  // the result path: in order among pops
            occupied_until = start + per_pop_cycle_(rows) * cyc;
            complete = occupied_until + cfg_.pop_latency * cyc;
            pop_free_ = occupied_until;
            ++pops_;
            break;
        }
        default:
            c->error = "not a matrix opcode";
            gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
            return;
    }
    queue_.started(start);
    if (in.op == Opcode::MatMul) last_start_ = start;
    busy_.add(start, occupied_until);  // weight, LHS and result paths interleave
    busy_.settle(accept);              // later instructions are accepted no earlier
    c->accept = accept;
    // The command is taken at accept: the annotation moves on to it (unchanged when it was
    // taken at its offer, the common case: no conversion to sc_time then).
    if (accept != offered) delay = to_sc(accept - now);
    c->start = start;
    c->operands_read = occupied_until;
    c->complete = complete;
    if (recorder_) recorder_->on_unit_op({name(), c->chip, c->core, c->index, in.op, accept, start, occupied_until, complete});
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

std::vector<Stat> MatrixUnit::stats() const {
    auto d = [](auto v) { return static_cast<double>(v); };
    return {
        {"pushes", d(pushes_), true, "weight tiles loaded", "tiles"},
        {"matmuls", d(matmuls_), true, "LHS streams", "instructions"},
        {"pops", d(pops_), true, "result pops", "instructions"},
        {"flops", d(flops_), true, "2 x multiply-accumulates performed", "flop"},
        {"stream_busy_ns", ticks_to_ns(stream_busy_), false, "time LHS rows were entering the array", "ns"},
        {"weight_load_busy_ns", ticks_to_ns(load_busy_), false, "time spent loading weights", "ns"},
        {"peak_tflops", peak_flops_per_s() / 1e12, false, "2 x rows x cols x clock", "TFLOP/s"},
    };
}

}  // namespace xpu

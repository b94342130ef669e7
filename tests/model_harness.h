// A harness to test one model alone (DRAMSys-style): no YAML, no platform builder. A test
// instantiates the model with its plain config struct, binds a StubInitiator to its target
// socket and StubTargets to its initiator sockets, schedules payloads (with the project's
// extensions: UnitCommand for units, TxnOrigin for memory traffic) at chosen kernel times with
// chosen `delay` annotations, runs the kernel, and checks the times the model returned and the
// calls it made against closed forms.
//
// One elaboration per process (SystemC 2.3): every TEST builds its own modules.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "models/recorder.h"
#include "models/unit_command.h"

namespace xpu::test {

// What one b_transport call of a StubInitiator saw.
struct Sent {
    Tick called = 0;     // kernel time of the call
    Tick delay_in = 0;   // the annotation given
    Tick returned = 0;   // kernel time at return (a blocking target may have waited)
    Tick delay_out = 0;  // the annotation on return
    tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
    // The absolute time the target's answer stands for (LT: kernel time + annotation).
    Tick offered() const { return called + delay_in; }
    Tick answered() const { return returned + delay_out; }
};

// A payload and its extensions, owned together (the payload frees its extensions).
struct Payload {
    tlm::tlm_generic_payload gp;
    UnitCommand* cmd = nullptr;    // set for unit commands
    Instruction in;                // the instruction a UnitCommand points at
    FlagCommand flag;              // the data of a flag write
};

// A unit command (vector, matrix, DMA): IGNORE command, UnitCommand extension pointing at `in`.
std::unique_ptr<Payload> unit_command(const Instruction& in, std::uint64_t index = 0);
// A memory transaction: `bytes` at `addr`, no data (timing only, as the models send them), with
// a TxnOrigin naming `initiator` (and a MemAccept, as the DMA engine sends them).
std::unique_ptr<Payload> mem_request(tlm::tlm_command cmd, std::uint64_t addr, unsigned bytes,
                                     const char* initiator = "stub");

// An initiator that sends a script of payloads: each at a kernel time, with a delay annotation,
// in the order they were scheduled (a time already past is sent at once).
class StubInitiator : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<StubInitiator> socket;

    explicit StubInitiator(const sc_core::sc_module_name& n);
    // Schedules `p` to be sent at kernel time `at` with annotation `delay`; returns its index
    // in sent(). The payload must outlive the simulation.
    std::size_t send(Payload& p, Tick at, Tick delay = 0);
    const std::vector<Sent>& sent() const { return sent_; }
    const Sent& sent(std::size_t i) const { return sent_.at(i); }

private:
    struct Item {
        Payload* p;
        Tick at, delay;
    };
    void run();
    std::vector<Item> script_;
    std::vector<Sent> sent_;
};

// What a StubTarget received.
struct Received {
    Tick now = 0;         // kernel time of the call
    Tick delay = 0;       // its annotation: the transaction arrives at now + delay
    tlm::tlm_command command = tlm::TLM_IGNORE_COMMAND;
    std::uint64_t addr = 0;
    unsigned bytes = 0;
    std::string initiator;  // from the TxnOrigin extension ("" without one)
    bool reduce = false;    // carried ReduceWrite
    bool is_flag = false;   // a flag write (data is a FlagCommand)
    FlagCommand flag;
    Tick arrival() const { return now + delay; }
};

// A target that accepts everything: adds `latency` to the annotation (0: done on arrival) and
// records every call. Any number of initiators may bind to it.
class StubTarget : public sc_core::sc_module {
public:
    tlm_utils::multi_passthrough_target_socket<StubTarget, 32, tlm::tlm_base_protocol_types, 0,
                                               sc_core::SC_ZERO_OR_MORE_BOUND>
        socket;

    explicit StubTarget(const sc_core::sc_module_name& n, Tick latency = 0);
    const std::vector<Received>& received() const { return received_; }
    const Received& received(std::size_t i) const { return received_.at(i); }

private:
    void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    Tick latency_;
    std::vector<Received> received_;
};

// An instruction memory for a ScalarCore's `imem` socket: serves `program` in batches (the
// TraceInjector protocol, models/trace_injector.h), then an empty batch (end of stream).
class StubImem : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<StubImem> socket;
    StubImem(const sc_core::sc_module_name& n, std::vector<Instruction> program);

private:
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    std::vector<Instruction> program_;
    std::size_t next_ = 0;
};

// A unit for a core's vpu/mxu/dma sockets: takes every command at its offer time
// (sc_time_stamp() + delay, unit_command.h), completes it `latency` later, and records the
// kernel time and annotation of each call.
class StubUnit : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<StubUnit> socket;
    struct Call {
        Tick now = 0, delay = 0;
        std::uint64_t index = 0;
        Tick offered() const { return now + delay; }
    };
    explicit StubUnit(const sc_core::sc_module_name& n, Tick latency = 0);
    const std::vector<Call>& calls() const { return calls_; }

private:
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    Tick latency_;
    std::vector<Call> calls_;
};

// Every event the models report, kept (copies: event pointers live only during the call).
struct Capture : Recorder {
    std::vector<DmaEvent> dmas;
    std::vector<FlagEvent> flags;
    std::vector<MemEvent> mems;
    std::vector<std::string> mem_initiators;  // mems[i].initiator, copied
    std::vector<UnitOpEvent> unit_ops;
    std::vector<HbmChannelEvent> hbm_pieces;
    void on_dma(const DmaEvent& e) override { dmas.push_back(e); }
    void on_flag(const FlagEvent& e) override { flags.push_back(e); }
    void on_mem(const MemEvent& e) override {
        mems.push_back(e);
        mem_initiators.emplace_back(e.initiator ? e.initiator : "");
    }
    void on_unit_op(const UnitOpEvent& e) override { unit_ops.push_back(e); }
    void on_hbm_channel(const HbmChannelEvent& e) override { hbm_pieces.push_back(e); }
};

// Instructions, built by hand (the fields a unit reads, with their presence bits).
Instruction matrix_op(Opcode op, std::uint32_t m, std::uint32_t n, std::uint32_t k);
Instruction vector_op(Opcode op, std::uint32_t count);
Instruction dma_op(MemRef src, MemRef dst, std::uint64_t bytes, std::uint16_t flag, std::int64_t value);

}  // namespace xpu::test

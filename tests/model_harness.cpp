#include "tests/model_harness.h"

#include "models/sim_time.h"

namespace xpu::test {

std::unique_ptr<Payload> unit_command(const Instruction& in, std::uint64_t index) {
    auto p = std::make_unique<Payload>();
    p->in = in;
    p->cmd = new UnitCommand;
    p->cmd->in = &p->in;
    p->cmd->index = index;
    p->gp.set_command(tlm::TLM_IGNORE_COMMAND);
    p->gp.set_extension(p->cmd);  // the payload owns it from here
    return p;
}

std::unique_ptr<Payload> mem_request(tlm::tlm_command cmd, std::uint64_t addr, unsigned bytes,
                                     const char* initiator) {
    auto p = std::make_unique<Payload>();
    p->gp.set_command(cmd);
    p->gp.set_address(addr);
    p->gp.set_data_ptr(nullptr);  // timing only, as the models send them
    p->gp.set_data_length(bytes);
    p->gp.set_streaming_width(bytes);
    auto* o = new TxnOrigin;
    o->initiator = initiator;
    p->gp.set_extension(o);
    p->gp.set_extension(new MemAccept);
    return p;
}

StubInitiator::StubInitiator(const sc_core::sc_module_name& n) : sc_core::sc_module(n), socket("socket") {
    SC_HAS_PROCESS(StubInitiator);
    SC_THREAD(run);
}

std::size_t StubInitiator::send(Payload& p, Tick at, Tick delay) {
    script_.push_back({&p, at, delay});
    return script_.size() - 1;
}

void StubInitiator::run() {
    sent_.resize(script_.size());
    for (std::size_t i = 0; i < script_.size(); ++i) {
        const Item& it = script_[i];
        wait(until(it.at));
        Sent& s = sent_[i];
        s.called = now_ticks();
        s.delay_in = it.delay;
        sc_core::sc_time d = to_sc(it.delay);
        it.p->gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        socket->b_transport(it.p->gp, d);
        s.returned = now_ticks();
        s.delay_out = d.value();
        s.status = it.p->gp.get_response_status();
    }
}

StubTarget::StubTarget(const sc_core::sc_module_name& n, Tick latency)
    : sc_core::sc_module(n), socket("socket"), latency_(latency) {
    socket.register_b_transport(this, &StubTarget::b_transport);
}

void StubTarget::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    Received r;
    r.now = now_ticks();
    r.delay = delay.value();
    r.command = gp.get_command();
    r.addr = gp.get_address();
    r.bytes = gp.get_data_length();
    if (const auto* o = gp.get_extension<TxnOrigin>()) r.initiator = o->initiator;
    r.reduce = gp.get_extension<ReduceWrite>() != nullptr;
    if (gp.get_data_ptr() && gp.get_data_length() == sizeof(FlagCommand)) {
        r.is_flag = true;
        r.flag = *reinterpret_cast<const FlagCommand*>(gp.get_data_ptr());
    }
    received_.push_back(r);
    delay += to_sc(latency_);
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

StubImem::StubImem(const sc_core::sc_module_name& n, std::vector<Instruction> program)
    : sc_core::sc_module(n), socket("socket"), program_(std::move(program)) {
    socket.register_b_transport(this, &StubImem::b_transport);
}

void StubImem::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time&) {
    auto* out = reinterpret_cast<Instruction*>(gp.get_data_ptr());
    const std::size_t room = gp.get_data_length() / sizeof(Instruction);
    std::size_t n = 0;
    while (n < room && next_ < program_.size()) out[n++] = program_[next_++];
    gp.set_data_length(static_cast<unsigned>(n * sizeof(Instruction)));
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

StubUnit::StubUnit(const sc_core::sc_module_name& n, Tick latency)
    : sc_core::sc_module(n), socket("socket"), latency_(latency) {
    socket.register_b_transport(this, &StubUnit::b_transport);
}

void StubUnit::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    auto* c = gp.get_extension<UnitCommand>();
    const Tick offered = now_ticks() + delay.value();
    calls_.push_back({now_ticks(), delay.value(), c->index});
    c->accept = c->start = c->operands_read = offered;
    c->complete = offered + latency_;
    gp.set_response_status(tlm::TLM_OK_RESPONSE);  // delay unchanged: taken at the offer
}

Instruction matrix_op(Opcode op, std::uint32_t m, std::uint32_t n, std::uint32_t k) {
    Instruction in;
    in.op = op;
    in.m = m;
    in.n = n;
    in.k = k;
    in.set(kShape);
    return in;
}

Instruction vector_op(Opcode op, std::uint32_t count) {
    Instruction in;
    in.op = op;
    in.count = count;
    in.set(kCount);
    return in;
}

Instruction dma_op(MemRef src, MemRef dst, std::uint64_t bytes, std::uint16_t flag, std::int64_t value) {
    Instruction in;
    in.op = Opcode::Dma;
    in.mem_src = src;
    in.mem_dst = dst;
    in.bytes = bytes;
    in.flag = flag;
    in.value = value;
    in.set(kMemSrc | kMemDst | kBytes | kFlag | kValue);
    return in;
}

}  // namespace xpu::test

// FetchInPlace: a core's instruction fetch that reads the instruction memory's own buffer.
//
// The fetch protocol (models/trace_injector.h) is a READ of an array of Instruction: the
// injector copies a batch into the core's buffer. With this extension on the payload, an
// injector that holds its instructions decoded (the trace's check hands them over: docs/
// architecture.md, "Decoded once") lends them instead: it points `first` at `count` of its own
// instructions, valid until the core's next fetch, and copies nothing. On a 10 M-instruction
// GEMM the copy was 96 bytes written and read back per instruction on the run's core.
// An instruction memory that does not know the extension leaves it empty and fills the
// payload's data as before: the core then reads its own buffer.
#pragma once

#include <cstddef>

#include <tlm>

#include "traces/instruction.h"

namespace xpu {

struct FetchInPlace : tlm::tlm_extension<FetchInPlace> {
    const Instruction* first = nullptr;  // out: the lent instructions (null: none lent)
    std::size_t count = 0;               // out: how many

    tlm::tlm_extension_base* clone() const override { return new FetchInPlace(*this); }
    void copy_from(const tlm::tlm_extension_base& e) override { *this = static_cast<const FetchInPlace&>(e); }
};

}  // namespace xpu

// The DMA engines of the DMAs a suggestion moves. A DMA's engine was chosen for the place the
// program issued it from; a hoist changes which DMAs are issued together. An engine serves its
// descriptors one after another, so when a hoist puts several DMAs back to back on the engines
// they had, one engine may queue the data needed first behind data needed later while another
// engine has nothing to do (gemm --late-dma on tpu-v6e-4: after the hoist, a K step's four tile
// loads sat on two engines, the next step's on the other two). balance_dma_engines gives such
// runs what a compiler issuing them there would: the engines in turn, in the order issued.
#pragma once

#include <cstddef>

#include "analysis/analysis.h"

namespace xpu::analysis {

struct SuggestContext;

// Every run of DMAs that the patched program of `s` issues back to back (no other instruction
// between them), with at least two DMAs and one of them moved by `s`, is given engines as a list
// scheduler would: each DMA in the order issued on the engine estimated to finish it first (its
// own on a tie). The estimate follows the patched program with each engine's queue: a DMA
// starts when its engine is free and the program has reached it (the issue time, in the run,
// of the last instruction before it that keeps its place), and takes its bytes at the engine's
// rate plus the fixed part of a DMA (DmaTiming::shortest). Engines: those the stream's own DMAs
// use in the original trace. Left alone: runs with a DMA to or from another chip, a DMA an edit
// splits into pieces, or two DMAs touching the same bytes (where the order of one engine's
// queue may be what keeps them apart). The new engines are edits of `s`. Returns how many DMAs
// changed engine.
std::size_t balance_dma_engines(const SuggestContext& sc, Suggestion& s);

}  // namespace xpu::analysis

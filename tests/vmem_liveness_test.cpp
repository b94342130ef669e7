// Tests of the VMEM liveness library (traces/vmem_liveness.*, docs/waveforms.md "VMEM bytes
// allocated"): hand-built streams whose intervals are known by construction, and random
// streams against a byte-by-byte reference.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include "traces/vmem_liveness.h"

using namespace xpu;
using xpu::trace::VmemLive;
using xpu::trace::vmem_liveness;

namespace {

Instruction vst(std::uint64_t addr, std::uint64_t bytes) {
    Instruction in;
    in.op = Opcode::VStore;
    in.set(kSrc0 | kMemDst | kBytes);
    in.src[0] = kVectorRegBase + 1;
    in.mem_dst = {Space::Vmem, kLocalChip, addr};
    in.bytes = bytes;
    return in;
}

Instruction vld(std::uint64_t addr, std::uint64_t bytes) {
    Instruction in;
    in.op = Opcode::VLoad;
    in.set(kDst | kMemSrc | kBytes);
    in.dst = kVectorRegBase + 1;
    in.mem_src = {Space::Vmem, kLocalChip, addr};
    in.bytes = bytes;
    return in;
}

Instruction dma(MemRef src, MemRef dst, std::uint64_t bytes, bool reduce = false) {
    Instruction in;
    in.op = Opcode::Dma;
    in.set(kMemSrc | kMemDst | kBytes | kFlag);
    in.mem_src = src;
    in.mem_dst = dst;
    in.bytes = bytes;
    in.flag = 1;
    if (reduce) {
        in.set(kDtype);
        in.dtype = DType::F32;
    }
    return in;
}

MemRef vm(std::uint64_t a, std::uint16_t chip = kLocalChip) { return {Space::Vmem, chip, a}; }
MemRef hbm(std::uint64_t a) { return {Space::Hbm, kLocalChip, a}; }

Instruction valu() {
    Instruction in;
    in.op = Opcode::VAlu;
    in.set(kDst | kSrc0 | kCount);
    in.dst = kVectorRegBase + 2;
    in.src[0] = kVectorRegBase + 1;
    in.count = 1024;
    return in;
}

using L = std::vector<VmemLive>;
VmemLive live(std::uint64_t a, std::uint64_t n, std::uint64_t w, std::uint64_t r, bool read) { return {a, n, w, r, read}; }

std::string show(const L& v) {
    std::string s;
    for (const auto& l : v)
        s += "{" + std::to_string(l.addr) + "," + std::to_string(l.bytes) + ",w" + std::to_string(l.writer) + ",r" +
             std::to_string(l.last_reader) + (l.read ? ",read}" : ",unread}") + " ";
    return s;
}

}  // namespace

TEST(VmemLiveness, AWriteNobodyReadsLivesUntilItCompletes) {
    L got = vmem_liveness({valu(), vst(0x1000, 4096), valu()});
    EXPECT_EQ(got, (L{live(0x1000, 4096, 1, 1, false)})) << show(got);
}

// A DMA fills 8 KiB, two vld read its halves, a DMA writes the whole back to HBM: one range,
// live from the first DMA to the second (the halves' pieces merge again once both are read by it).
TEST(VmemLiveness, ADmaReadOfTheWholeRangeIsItsLastReader) {
    L got = vmem_liveness({dma(hbm(0), vm(0), 8192), vld(0, 4096), vld(4096, 4096), dma(vm(0), hbm(0x10000), 8192)});
    EXPECT_EQ(got, (L{live(0, 8192, 0, 3, true)})) << show(got);
}

// Halves read by different instructions die at different times: two ranges.
TEST(VmemLiveness, PiecesReadByDifferentInstructionsAreSeparateRanges) {
    L got = vmem_liveness({dma(hbm(0), vm(0), 8192), vld(0, 4096), valu(), vld(4096, 4096)});
    EXPECT_EQ(got, (L{live(0, 4096, 0, 1, true), live(4096, 4096, 0, 3, true)})) << show(got);
}

// vst [0, 8K), vld all of it, vst [4K, 12K) over its upper half, vld [0, 12K): the lower half
// of the first write lives on to the second vld; its upper half dies with the first vld.
TEST(VmemLiveness, APartialOverwriteSplitsTheRange) {
    L got = vmem_liveness({vst(0, 8192), vld(0, 8192), vst(4096, 8192), vld(0, 12288)});
    EXPECT_EQ(got, (L{live(0, 4096, 0, 3, true), live(4096, 4096, 0, 1, true), live(4096, 8192, 2, 3, true)})) << show(got);
}

// A write inside an earlier one: the middle of the first is overwritten unread, its two ends
// live on to the vld that reads everything.
TEST(VmemLiveness, AWriteInsideALiveRange) {
    L got = vmem_liveness({vst(0, 12288), vst(4096, 4096), vld(0, 12288)});
    EXPECT_EQ(got, (L{live(0, 4096, 0, 2, true), live(4096, 4096, 0, 0, false), live(8192, 4096, 0, 2, true),
                      live(4096, 4096, 1, 2, true)}))
        << show(got);
    // Overwritten unread everywhere: one range (all of it lives until the first write completes).
    got = vmem_liveness({vst(0, 12288), vst(4096, 4096)});
    EXPECT_EQ(got, (L{live(0, 12288, 0, 0, false), live(4096, 4096, 1, 1, false)})) << show(got);
}

// A VMEM-to-VMEM DMA reads its source, then writes its destination (overlapping here).
TEST(VmemLiveness, AVmemToVmemDmaReadsThenWrites) {
    L got = vmem_liveness({vst(0, 4096), dma(vm(0), vm(2048), 4096)});
    EXPECT_EQ(got, (L{live(0, 4096, 0, 1, true), live(2048, 4096, 1, 1, false)})) << show(got);
}

// Reads of bytes the stream never wrote allocate nothing; a read straddling a written range
// counts for the written part only.
TEST(VmemLiveness, ReadsOfUnwrittenBytesAllocateNothing) {
    EXPECT_TRUE(vmem_liveness({vld(0, 4096), dma(vm(0), hbm(0), 4096)}).empty());
    L got = vmem_liveness({vst(4096, 4096), vld(0, 16384)});
    EXPECT_EQ(got, (L{live(4096, 4096, 0, 1, true)})) << show(got);
}

// Operands on another chip are that chip's VMEM; HBM-to-HBM DMAs touch no VMEM. With the
// stream's chip given, operands naming it are local.
TEST(VmemLiveness, RemoteAndHbmOperandsAreNotThisVmem) {
    EXPECT_TRUE(vmem_liveness({dma(hbm(0), vm(0, 3), 4096), dma(hbm(0), hbm(0x8000), 4096)}).empty());
    L got = vmem_liveness({dma(hbm(0), vm(0, 3), 4096), vld(0, 4096)}, 3);
    EXPECT_EQ(got, (L{live(0, 4096, 0, 1, true)})) << show(got);
    EXPECT_FALSE(trace::touches_vmem(dma(hbm(0), hbm(0x8000), 4096)));
    EXPECT_TRUE(trace::touches_vmem(dma(hbm(0), vm(0), 4096)));
    EXPECT_FALSE(trace::touches_vmem(valu()));
}

// A reducing DMA (dtype) into VMEM rewrites in place: bytes already written stay under their
// writer with the DMA as a reader; bytes nobody wrote are a new range of the DMA.
TEST(VmemLiveness, AReducingDmaReadsAndRewritesInPlace) {
    L got = vmem_liveness({vst(0, 4096), dma(hbm(0), vm(2048), 4096, true), vld(0, 6144)});
    EXPECT_EQ(got, (L{live(0, 4096, 0, 2, true), live(4096, 2048, 1, 2, true)})) << show(got);
}

// The incremental form gives the same intervals with the caller's indices.
TEST(VmemLiveness, IncrementalFormTakesTheCallersIndices) {
    trace::VmemLiveness l;
    l.add(100, vst(0, 4096));
    l.add(105, vst(4096, 4096));
    EXPECT_EQ(l.live_bytes(), 8192u);
    l.add(110, vld(0, 6144));
    l.add(120, vst(0, 1024));
    EXPECT_EQ(l.live_bytes(), 8192u);
    L got = l.finish();
    // [0, 1K) of the first write was overwritten after its read: alike the rest of it, merged.
    EXPECT_EQ(got, (L{live(0, 4096, 100, 110, true), live(4096, 2048, 105, 110, true), live(6144, 2048, 105, 105, false),
                      live(0, 1024, 120, 120, false)}))
        << show(got);
    EXPECT_EQ(l.live_bytes(), 0u);
    EXPECT_TRUE(l.finish().empty());
}

// Random streams against a byte-by-byte reference: every byte ever written appears in exactly
// the interval of its (writer, last reader) pair.
TEST(VmemLiveness, RandomStreamsMatchAByteByByteReference) {
    std::mt19937 rng(7);
    for (int round = 0; round < 200; ++round) {
        constexpr std::uint64_t kSpace = 512, kUnit = 8;
        std::vector<Instruction> s;
        const int n = 1 + static_cast<int>(rng() % 40);
        for (int i = 0; i < n; ++i) {
            const std::uint64_t a = (rng() % (kSpace / kUnit)) * kUnit, len = (1 + rng() % 12) * kUnit;
            switch (rng() % 6) {
                case 0: s.push_back(vst(a, len)); break;
                case 1: s.push_back(vld(a, len)); break;
                case 2: s.push_back(dma(hbm(0), vm(a), len)); break;
                case 3: s.push_back(dma(vm(a), hbm(0), len)); break;
                case 4: s.push_back(dma(vm(a), vm((rng() % (kSpace / kUnit)) * kUnit), len)); break;
                default: s.push_back(dma(hbm(0), vm(a), len, true)); break;
            }
        }
        // Reference: per byte, its writer, last reader and whether read; (byte, w, r, read) out.
        struct B {
            bool live = false;
            std::uint64_t w = 0, r = 0;
            bool read = false;
        };
        std::vector<B> mem(kSpace + 16 * kUnit);
        std::multiset<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, bool>> want, got;
        for (std::uint64_t i = 0; i < s.size(); ++i) {
            const trace::VmemAccess acc = trace::vmem_access(s[i]);
            if (acc.reads)
                for (std::uint64_t b = acc.read_addr; b < acc.read_addr + acc.read_bytes; ++b)
                    if (mem[b].live) mem[b].r = i, mem[b].read = true;
            if (acc.writes)
                for (std::uint64_t b = acc.write_addr; b < acc.write_addr + acc.write_bytes; ++b) {
                    if (acc.reduces && mem[b].live) {
                        mem[b].r = i, mem[b].read = true;
                        continue;
                    }
                    if (mem[b].live) want.insert({b, mem[b].w, mem[b].read ? mem[b].r : mem[b].w, mem[b].read});
                    mem[b] = {true, i, i, false};
                }
        }
        for (std::uint64_t b = 0; b < mem.size(); ++b)
            if (mem[b].live) want.insert({b, mem[b].w, mem[b].read ? mem[b].r : mem[b].w, mem[b].read});
        L out = vmem_liveness(s);
        for (std::size_t k = 0; k < out.size(); ++k) {
            const VmemLive& l = out[k];
            ASSERT_GT(l.bytes, 0u);
            if (!l.read) {
                EXPECT_EQ(l.last_reader, l.writer);
            }
            if (k) {  // sorted by (writer, addr), merged where contiguous and alike
                const VmemLive& p = out[k - 1];
                ASSERT_TRUE(p.writer < l.writer || (p.writer == l.writer && p.addr + p.bytes <= l.addr));
                EXPECT_FALSE(p.writer == l.writer && p.addr + p.bytes == l.addr && p.last_reader == l.last_reader &&
                             p.read == l.read);
            }
            for (std::uint64_t b = l.addr; b < l.addr + l.bytes; ++b) got.insert({b, l.writer, l.last_reader, l.read});
        }
        ASSERT_EQ(got, want) << "round " << round << ": " << show(out);
    }
}

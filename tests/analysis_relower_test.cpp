// Recognising a collective xpu_tracegen wrote, and lowering it again (analysis/relower.h): what
// makes collective_algorithm a change the verification replays. The reference is the generator
// itself: a recognised program must be the one it writes for the parameters found, and the
// relowering must be its trace for the other algorithm, byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include "analysis/patch.h"
#include "analysis/relower.h"
#include "traces/gen/target.h"
#include "traces/trace_reader.h"

using namespace xpu;
using namespace xpu::analysis;
namespace fs = std::filesystem;

namespace {

// The test's files, in a folder of its own removed when the process ends.
struct TempDir {
    fs::path d = fs::temp_directory_path() / ("xpusim-relower-test-" + std::to_string(::getpid()));
    TempDir() { fs::create_directories(d); }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(d, ec);
    }
};
std::string temp_path(const std::string& name) {
    static const TempDir dir;
    return (dir.d / name).string();
}

struct Program {
    std::vector<Stream> streams;
    std::vector<std::string> strings;
};

Program read_program(const std::string& path) {
    const trace::TraceFile f = trace::TraceFile::open(path);
    Program p;
    p.strings = f.strings();
    for (std::size_t i = 0; i < f.streams().size(); ++i) {
        Stream st;
        st.chip = f.streams()[i].chip;
        st.core = f.streams()[i].core;
        trace::StreamReader r(f, i);
        Instruction buf[256];
        for (std::size_t n; (n = r.read(buf, 256)) > 0;) st.code.insert(st.code.end(), buf, buf + n);
        p.streams.push_back(std::move(st));
    }
    return p;
}

Program generated(const gen::CollectiveParams& p, const std::string& name) {
    const std::string path = temp_path(name);
    write_collective(p, path);
    return read_program(path);
}

std::string bytes_of(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

gen::CollectiveParams params(const std::string& op, const std::string& algo, unsigned chips, std::uint64_t bytes, unsigned chunks = 1,
                             std::vector<unsigned> dims = {}) {
    gen::CollectiveParams p;
    p.op = op;
    p.algo = algo;
    p.chips = chips;
    p.bytes = bytes;
    p.chunks = chunks;
    p.set_torus_dims(dims);
    return p;
}

}  // namespace

// Every algorithm, operation, piece count, torus shape (asymmetric ones too: 2x8 is not 8x2),
// element type of a reduction, DMA engine count and the planted serial steps: the parameters
// found are the ones the trace was written with, and (the recogniser's own check) the generator
// writes the same program for them.
TEST(Relower, RecognisesTheCollectivesTheGeneratorWrote) {
    std::vector<gen::CollectiveParams> cases = {
        params("all-reduce", "ring", 4, 1 << 20, 4),
        params("all-reduce", "ring", 16, 4 << 20, 4),
        params("all-gather", "ring", 8, 3 * 8 * 4096),
        params("reduce-scatter", "bidir-ring", 4, 1 << 20, 2),
        params("all-reduce", "torus2d", 16, 4 << 20, 4, {4, 4}),
        params("all-gather", "torus2d", 16, 16 * 2 * 1000, 1, {2, 8}),
        params("all-gather", "torus3d", 64, 5 << 20, 1, {4, 4, 4}),
        params("reduce-scatter", "torus3d", 16, 16 * 3 * 64, 3, {2, 2, 4}),
        params("all-reduce", "bidir-torus2d", 16, 2 << 20, 2, {4, 4}),
        params("all-gather", "direct", 8, 8 * 64 * 3),
    };
    cases.push_back(params("all-reduce", "ring", 4, 1 << 20, 2));
    cases.back().serial = true;
    cases.push_back(params("reduce-scatter", "ring", 8, 8 * 4 * 512, 1));
    cases.back().tiles.dtype = DType::F32;
    cases.push_back(params("all-reduce", "ring", 4, 4 * 16384));
    cases.back().tiles.dma_engines = 2;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const gen::CollectiveParams& want = cases[i];
        SCOPED_TRACE(tracegen_command(want, "P.yaml") + (want.tiles.dma_engines != 4 ? " (2 engines)" : ""));
        const Program prog = generated(want, "case" + std::to_string(i) + ".bin");
        const auto got = recognise_collective(prog.streams, prog.strings);
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(got->op, want.op);
        EXPECT_EQ(got->algo, want.algo);
        EXPECT_EQ(got->chips, want.chips);
        EXPECT_EQ(got->bytes, want.bytes);
        EXPECT_EQ(std::max(1u, got->chunks), std::max(1u, want.chunks));
        EXPECT_EQ(got->dims_x, want.dims_x);
        EXPECT_EQ(got->dims_y, want.dims_y);
        EXPECT_EQ(got->dims_z, want.dims_z);
        EXPECT_EQ(got->serial, want.serial);
        EXPECT_EQ(got->tiles.dma_engines, want.tiles.dma_engines);
        if (want.op != "all-gather") {
            EXPECT_EQ(got->tiles.dtype, want.tiles.dtype) << "a reducing DMA names its type";
        }
        const Program again = generated(*got, "again" + std::to_string(i) + ".bin");
        ASSERT_EQ(again.streams.size(), prog.streams.size());
        for (std::size_t s = 0; s < prog.streams.size(); ++s) EXPECT_TRUE(again.streams[s].code == prog.streams[s].code);
        EXPECT_EQ(again.strings, prog.strings);
    }
}

// A 2-chip ring all-reduce has 2 DMAs per chip, on engines 0 and 1: written alike for 2 engines
// or more. The platform's count is taken where it writes the program (what `--platform` tiles
// for: the relowering then uses every engine the chip has), else the fewest.
TEST(Relower, ThePlatformsDmaEnginesFirst) {
    const Program prog = generated(params("all-reduce", "ring", 2, 1 << 20), "two.bin");
    auto engines = [&](unsigned platform) {
        const auto p = recognise_collective(prog.streams, prog.strings, platform);
        return p ? p->tiles.dma_engines : 0u;
    };
    EXPECT_EQ(engines(4), 4u);
    EXPECT_EQ(engines(6), 6u);
    EXPECT_EQ(engines(0), 2u) << "no platform: the fewest";
    EXPECT_EQ(engines(1), 2u) << "a platform of 1 engine cannot have written it";
}

// Anything but the generator's very program keeps the advice: one DMA's bytes changed, one
// instruction dropped, an annotation of another operation, the streams out of order, one chip.
TEST(Relower, AnythingButTheGeneratorsProgramIsNotRecognised) {
    const Program base = generated(params("all-reduce", "ring", 4, 1 << 20, 2), "base.bin");
    ASSERT_TRUE(recognise_collective(base.streams, base.strings).has_value());

    Program p = base;
    for (Instruction& in : p.streams[2].code)
        if (in.op == Opcode::Dma) {
            in.bytes += 64;
            break;
        }
    EXPECT_FALSE(recognise_collective(p.streams, p.strings).has_value()) << "a DMA's bytes changed";

    p = base;
    p.streams[1].code.erase(p.streams[1].code.begin() + 1);
    EXPECT_FALSE(recognise_collective(p.streams, p.strings).has_value()) << "an instruction dropped";

    p = base;
    p.strings.push_back("layer0/mlp/all_reduce");
    EXPECT_FALSE(recognise_collective(p.streams, p.strings).has_value()) << "an annotation of another op";

    p = base;
    std::swap(p.streams[0], p.streams[1]);
    EXPECT_FALSE(recognise_collective(p.streams, p.strings).has_value()) << "streams out of chip order";

    p = base;
    p.streams.resize(1);
    EXPECT_FALSE(recognise_collective(p.streams, p.strings).has_value()) << "one chip";
}

// The relowering writes the generator's trace of the other algorithm (same tensor, chips,
// pieces and dimensions), byte for byte, and counts its instructions as the generator does; a
// tensor the other algorithm cannot split is no relowering.
TEST(Relower, TheRelowerIsTheGeneratorsTraceOfTheOtherAlgorithm) {
    const gen::CollectiveParams ring = params("all-gather", "torus2d", 16, 4 << 20, 2, {4, 4});
    gen::CollectiveParams other = ring;
    other.algo = "bidir-torus2d";
    const auto r = relower(other, "P.yaml");
    ASSERT_TRUE(r);
    const std::string a = temp_path("relowered.bin"), b = temp_path("generated.bin");
    RunData run;  // only counted: the instructions the relowering replaces
    Suggestion s;
    s.relowering = r;
    const PatchCount c = write_patched_trace(run, s, a);
    const std::uint64_t n = write_collective(other, b);
    EXPECT_EQ(bytes_of(a), bytes_of(b));
    EXPECT_EQ(r->instructions, n);
    EXPECT_EQ(c.inserted, n);
    EXPECT_EQ(r->command, "xpu_tracegen collective --op all-gather --chips 16 --bytes 4194304 --algo bidir-torus2d --dims 4x4 --chunks 2");
    // 16 chips x 1 ring x 1 piece x 2 bytes divides 16 * 2 * 3 bytes; two rings of them do not.
    EXPECT_FALSE(relower(params("all-gather", "bidir-ring", 16, 16 * 2 * 3), "P.yaml"));
}

// A ring over every chip of a torus is lowered again on the platform's torus: its dimensions are
// the description's topology.dims where topology.kind is a torus (gen::read_target), X first, and
// nothing on a ring; a list that is not of positive numbers is an error naming the key.
TEST(Relower, TheTorusIsThePlatformsTopology) {
    const std::string cfg = std::string(XPU_SOURCE_DIR) + "/configs/";
    EXPECT_EQ(gen::read_target(cfg + "xpu-torus4x4.yaml").torus_dims, (std::vector<unsigned>{4, 4}));
    EXPECT_EQ(gen::read_target(cfg + "xpu-torus4x4x4.yaml").torus_dims, (std::vector<unsigned>{4, 4, 4}));
    EXPECT_TRUE(gen::read_target(cfg + "xpu-ring4.yaml").torus_dims.empty()) << "a ring";
    EXPECT_TRUE(gen::read_target(cfg + "xpu.yaml").torus_dims.empty()) << "one chip";
    std::string text = bytes_of(cfg + "xpu-torus4x4.yaml");
    const std::size_t at = text.find("dims: [4, 4]");
    ASSERT_NE(at, std::string::npos);
    for (const char* bad : {"dims: [4, x]", "dims: [4, 0]"}) {
        std::string t = text;
        t.replace(at, 12, bad);
        const std::string path = temp_path("bad.yaml");
        std::ofstream(path) << t;
        try {
            gen::read_target(path);
            ADD_FAILURE() << bad << " was read";
        } catch (const gen::TargetError& e) {
            EXPECT_NE(std::string(e.what()).find("topology.dims"), std::string::npos) << e.what();
        }
    }
}

// The lowerings the search measures (relowering_alternatives): every algorithm the generator has
// that fits the platform (ring, bidir-ring, direct; the torus ones of the platform's torus, over
// all its chips), each at the trace's pieces per shard and four times as many, never the trace's
// own lowering, never the planted serial steps.
TEST(Relower, TheSearchTriesEveryLoweringThePlatformFits) {
    auto names = [](const std::vector<gen::CollectiveParams>& v) {
        std::vector<std::string> out;
        for (const auto& p : v) {
            out.push_back(p.algo + " x" + std::to_string(p.chunks) + (p.dims_x ? " " + std::to_string(p.dims_x) + "x" + std::to_string(p.dims_y) +
                                                                              (p.dims_z ? "x" + std::to_string(p.dims_z) : "")
                                                                        : ""));
            EXPECT_FALSE(p.serial) << out.back();
        }
        return out;
    };
    using V = std::vector<std::string>;
    gen::CollectiveParams ring = params("all-reduce", "ring", 4, 1 << 20);
    EXPECT_EQ(names(relowering_alternatives(ring, {})),
              (V{"ring x4", "bidir-ring x1", "bidir-ring x4", "direct x1", "direct x4"}));
    // A ring over the 16 chips of a 4x4 torus, planted serial: the torus ones too, and its own
    // algorithm without the serial steps.
    gen::CollectiveParams ring16 = params("all-gather", "ring", 16, 1 << 20);
    ring16.chunks = 2;
    ring16.serial = true;
    EXPECT_EQ(names(relowering_alternatives(ring16, {4, 4})),
              (V{"ring x2", "ring x8", "bidir-ring x2", "bidir-ring x8", "direct x2", "direct x8", "torus2d x2 4x4", "torus2d x8 4x4",
                 "bidir-torus2d x2 4x4", "bidir-torus2d x8 4x4"}));
    // Not every chip of the platform's torus: no torus algorithm.
    EXPECT_EQ(relowering_alternatives(params("all-reduce", "ring", 8, 1 << 20), {4, 4}).size(), 5u);
    // A torus3d collective keeps its dimensions where the platform names none.
    gen::CollectiveParams t3 = params("all-gather", "torus3d", 64, 1 << 20);
    t3.set_torus_dims({4, 4, 4});
    const V t3alts = names(relowering_alternatives(t3, {}));
    EXPECT_EQ(t3alts.size(), 9u);
    EXPECT_NE(std::find(t3alts.begin(), t3alts.end(), "bidir-torus3d x1 4x4x4"), t3alts.end());
    EXPECT_EQ(std::find(t3alts.begin(), t3alts.end(), "torus3d x1 4x4x4"), t3alts.end()) << "its own lowering";
}

// Multi-chip collectives against the alpha-beta model, and conservation over links and chips.
//
// The alpha-beta model of a ring collective: N - 1 steps, each sending one shard of S/N bytes
// to the next chip and waiting for the shard from the previous one, costs
//     T = (N - 1) x (alpha + wire(S/N) / B)
// where B is the link bandwidth, wire(x) adds the per-packet overhead (x + ceil(x/packet) x
// overhead, per DMA chunk), and alpha is the fixed cost of one step on this platform, summed
// from the configured parts along the path of a step (no fitted constant; docs/architecture.md,
// "What a collective step costs"):
//   DMA setup, the interconnect hop, the first chunk's HBM read (latency + its transfer over
//   the channels it spans), the interconnect and the port, one link latency, the far port and
//   interconnect, the last chunk's HBM write at the destination (twice for a reducing write:
//   read-modify-write) and latency, once its last byte has arrived (links are cut-through, but
//   memory writes what is there: models/unit_command.h, LinkTail).
// The completion flag is posted behind the data on the same route and takes effect when the
// data has landed: it adds no second link latency (it did before: +110-140% at 16-64 KiB
// against ASTRA-sim's analytical backend, issue 15).
// All-reduce = reduce-scatter + all-gather. A bidirectional ring runs two rings on half the
// data each over the two link directions; a torus runs the ring algorithm along X on S, then
// along Y on S/X (and Z on S/(XY)) for a reduce-scatter, the reverse for an all-gather; the
// bidirectional torus runs that on each half of the data, in opposite directions. A switch adds
// its crossbar latency to alpha and serialises at the slower of uplink and egress port.
// Within 2% from 16 KiB to 256 MiB (why it holds: every fixed cost on a step's path is in
// alpha, every byte in beta; what the model leaves out is the core's few cycles between a flag
// and the next DMA).
//
// With every on-chip cost set to zero (DMA setup, interconnect, port and HBM latencies, HBM and
// DMA bandwidth unbounded, no packet overhead), alpha is the link latency alone: the form of
// ASTRA-sim's congestion-unaware analytical backend (collective time = steps x (hop latency +
// message / link bandwidth), astra-sim/astra-network-analytical), checked in AstraSimForm.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "models/sim_time.h"
#include "platform/run_breakdown.h"
#include "tests/sim_fixture.h"
#include "traces/gen/collective.h"
#include "traces/gen/transformer.h"
#include "traces/trace_writer.h"

using namespace xpu;
using namespace xpu::test;

namespace {

struct Platform {
    double link_gbps, link_latency_ns, hbm_channel_gbps, hbm_latency_ns, noc_ns, port_ns, cycle_ns;
    unsigned packet, overhead, interleave, channels, chunk, setup_cycles;
};

double num(const YAML::Node& n) { return n.as<double>(); }

// Every figure from the loaded platform's effective configuration.
Platform platform_of(const platform::PlatformConfig& cfg) {
    const YAML::Node m = cfg.effective["chip"]["modules"];
    const YAML::Node link = cfg.effective["topology"]["link"];
    Platform p;
    p.link_gbps = num(link["bandwidth_gbps"]);
    p.link_latency_ns = num(link["latency_ns"]);
    p.packet = link["packet_bytes"].as<unsigned>();
    p.overhead = link["packet_overhead_bytes"].as<unsigned>();
    p.hbm_channel_gbps = num(m["hbm"]["channel_bandwidth_gbps"]);
    p.hbm_latency_ns = num(m["hbm"]["latency_ns"]);
    p.interleave = m["hbm"]["interleave_bytes"].as<unsigned>();
    p.channels = m["hbm"]["channels"].as<unsigned>();
    p.noc_ns = num(m["noc"]["latency_ns"]);
    p.port_ns = num(m["ici"]["latency_ns"]);
    p.chunk = m["dma0"]["chunk_bytes"].as<unsigned>();
    p.setup_cycles = m["dma0"]["setup_latency"].as<unsigned>();
    p.cycle_ns = 1.0 / cfg.clock_ghz;
    return p;
}

struct Model {
    Platform p;
    double wire(double x) const { return x + std::ceil(x / p.packet) * p.overhead; }
    // Time for one DMA chunk at HBM: the busiest channel it touches.
    double hbm(std::uint64_t bytes) const {
        std::map<unsigned, std::uint64_t> per;
        for (std::uint64_t off = 0; off < bytes; off += p.interleave)
            per[static_cast<unsigned>((off / p.interleave) % p.channels)] += std::min<std::uint64_t>(p.interleave, bytes - off);
        double worst = 0;
        for (auto& [c, b] : per) worst = std::max(worst, std::ceil(b * 1000.0 / p.hbm_channel_gbps) / 1000.0);
        return worst;
    }
    double switch_ns = 0, switch_gbps = 0;  // topology switch: crossbar latency and egress port
    double beta_gbps() const { return switch_gbps > 0 ? std::min(p.link_gbps, switch_gbps) : p.link_gbps; }
    double step(std::uint64_t shard, bool reduce) const {
        const std::uint64_t first = std::min<std::uint64_t>(p.chunk, shard);
        const std::uint64_t last = shard - (((shard + p.chunk - 1) / p.chunk) - 1) * p.chunk;
        const double alpha = p.setup_cycles * p.cycle_ns + p.noc_ns + p.hbm_latency_ns + hbm(first) + p.noc_ns + p.port_ns +
                             p.link_latency_ns + switch_ns + p.port_ns + p.noc_ns + (reduce ? 2 : 1) * hbm(last) +
                             p.hbm_latency_ns;
        return alpha + wire(shard) / beta_gbps();
    }
    double ring(unsigned n, std::uint64_t bytes, bool reduce) const { return (n - 1) * step(bytes / n, reduce); }
    double collective(const std::string& op, unsigned n, std::uint64_t bytes) const {
        double t = 0;
        if (op != "all-gather") t += ring(n, bytes, true);
        if (op != "reduce-scatter") t += ring(n, bytes, false);
        return t;
    }
    // Rings along each dimension in turn, each on the block the previous ones left.
    double torus(const std::string& op, const std::vector<unsigned>& dims, std::uint64_t bytes) const {
        double t = 0;
        std::uint64_t b = bytes;
        for (unsigned d : dims) {
            if (op != "all-gather") t += ring(d, b, true);
            if (op != "reduce-scatter") t += ring(d, b, false);
            b /= d;
        }
        return t;
    }
};

// Within 2% of the model (every size here is >= 16 KiB); the figures are printed for the docs.
void check(double simulated, double model, std::uint64_t, const std::string& what) {
    std::printf("%s: simulated %.1f ns, model %.1f ns, %+.2f%%\n", what.c_str(), simulated, model,
                100.0 * (simulated / model - 1.0));
    EXPECT_NEAR(simulated / model, 1.0, 0.02) << what << ": simulated " << simulated << " ns, model " << model << " ns";
}

struct Case {
    std::string op;
    unsigned chips;
    std::uint64_t bytes;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.op << " " << c.chips << " chips " << c.bytes << " B"; }

class RingCollective : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(RingCollective, MatchesAlphaBeta) {
    const Case& c = GetParam();
    gen::CollectiveParams p;
    p.op = c.op;
    p.algo = "ring";
    p.chips = c.chips;
    p.bytes = c.bytes;
    auto run = simulate(collective_trace("coll.bin", p),
                        {"chips=" + std::to_string(c.chips), "topology.dims=[" + std::to_string(c.chips) + "]"},
                        "configs/xpu-ring4.yaml", false);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    Model m{platform_of(run->cfg)};
    check(run->result.simulated_ns, m.collective(c.op, c.chips, c.bytes), c.bytes,
          c.op + " ring, " + std::to_string(c.chips) + " chips, " + std::to_string(c.bytes) + " bytes");
}

static std::vector<Case> ring_cases() {
    std::vector<Case> v;
    for (const char* op : {"all-gather", "reduce-scatter", "all-reduce"})
        for (unsigned n : {4u, 8u, 16u, 64u})
            for (std::uint64_t b : {16384ull, 65536ull, 1ull << 20, 16ull << 20, 256ull << 20}) v.push_back({op, n, b});
    return v;
}

INSTANTIATE_TEST_SUITE_P(AlphaBeta, RingCollective, ::testing::ValuesIn(ring_cases()), [](const auto& info) {
    std::string op = info.param.op;
    for (auto& ch : op)
        if (ch == '-') ch = '_';
    return op + "_" + std::to_string(info.param.chips) + "chips_" + std::to_string(info.param.bytes) + "B";
});

struct TopoCase {
    std::string op, algo, config;
    std::vector<unsigned> dims;
    std::uint64_t bytes;
};

void PrintTo(const TopoCase& c, std::ostream* os) { *os << c.op << " " << c.algo << " " << c.bytes << " B"; }

class TopologyCollective : public ::testing::TestWithParam<TopoCase> {};

std::string topo_name(const TopoCase& c) {
    std::string n = c.op + "_" + c.algo + "_";
    for (std::size_t i = 0; i < c.dims.size(); ++i) n += (i ? "x" : "") + std::to_string(c.dims[i]);
    n += "_" + std::to_string(c.bytes) + "B";
    for (auto& ch : n)
        if (ch == '-') ch = '_';
    return n;
}

// Bidirectional ring, 2D and 3D tori (one and both directions), a switch: the model above.
TEST_P(TopologyCollective, MatchesAlphaBeta) {
    const TopoCase& c = GetParam();
    gen::CollectiveParams p;
    p.op = c.op;
    p.algo = c.algo;
    p.bytes = c.bytes;
    p.chips = 1;
    for (unsigned d : c.dims) p.chips *= d;
    std::vector<std::string> sets;
    std::string dims = "[";
    for (std::size_t i = 0; i < c.dims.size(); ++i) dims += (i ? ", " : "") + std::to_string(c.dims[i]);
    dims += "]";
    const bool torus = c.algo.find("torus") != std::string::npos;
    if (torus) {
        p.dims_x = c.dims[0];
        p.dims_y = c.dims[1];
        if (c.dims.size() > 2) p.dims_z = c.dims[2];
    }
    sets = {"chips=" + std::to_string(p.chips), "topology.dims=" + dims};
    auto run = simulate(collective_trace("coll.bin", p), sets, c.config, false);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    Model m{platform_of(run->cfg)};
    if (c.config.find("switch") != std::string::npos) {
        m.switch_ns = num(run->cfg.effective["topology"]["switch"]["latency_ns"]);
        m.switch_gbps = num(run->cfg.effective["topology"]["switch"]["bandwidth_gbps"]);
    }
    const bool bidir = c.algo.rfind("bidir", 0) == 0;
    const std::uint64_t part = bidir ? c.bytes / 2 : c.bytes;  // each direction carries half
    const double model = torus ? m.torus(c.op, c.dims, part) : m.collective(c.op, p.chips, part);
    check(run->result.simulated_ns, model, c.bytes, topo_name(c));
}

static std::vector<TopoCase> topo_cases() {
    std::vector<TopoCase> v;
    for (const char* op : {"all-gather", "reduce-scatter", "all-reduce"}) {
        for (std::uint64_t b : {16384ull, 1ull << 20, 64ull << 20}) {
            v.push_back({op, "bidir-ring", "configs/xpu-ring4.yaml", {8}, b});
            v.push_back({op, "ring", "configs/xpu-switch8.yaml", {8}, b});
        }
        for (std::uint64_t b : {16384ull * 4, 1ull << 20, 16ull << 20}) {
            v.push_back({op, "torus2d", "configs/xpu-torus4x4.yaml", {4, 4}, b});
            v.push_back({op, "bidir-torus2d", "configs/xpu-torus4x4.yaml", {4, 4}, b});
            v.push_back({op, "torus3d", "configs/xpu-torus4x4x4.yaml", {2, 2, 4}, b});
            v.push_back({op, "bidir-torus3d", "configs/xpu-torus4x4x4.yaml", {4, 4, 4}, b});
        }
    }
    return v;
}

INSTANTIATE_TEST_SUITE_P(AlphaBeta, TopologyCollective, ::testing::ValuesIn(topo_cases()),
                         [](const auto& info) { return topo_name(info.param); });

// The 8x8 torus of the shipped config, an all-gather of 16 MiB.
TEST(Collective, Torus2dAllGatherMatchesRingsAlongEachDimension) {
    gen::CollectiveParams p;
    p.op = "all-gather";
    p.algo = "torus2d";
    p.chips = 64;
    p.dims_x = p.dims_y = 8;
    p.bytes = 16ull << 20;
    auto run = simulate(collective_trace("coll.bin", p), {}, "configs/xpu-torus8x8.yaml", false);
    Model m{platform_of(run->cfg)};
    check(run->result.simulated_ns, m.torus("all-gather", {8, 8}, p.bytes), p.bytes, "torus2d all-gather 8x8");
}

// ASTRA-sim's congestion-unaware analytical form: with every on-chip cost zeroed, a ring
// collective is steps x (link latency + shard / link bandwidth), nothing else.
class AstraSimForm : public ::testing::TestWithParam<Case> {};

TEST_P(AstraSimForm, OnChipCostsZeroedLeaveLinkLatencyAndBandwidth) {
    const Case& c = GetParam();
    gen::CollectiveParams p;
    p.op = c.op;
    p.algo = "ring";
    p.chips = c.chips;
    p.bytes = c.bytes;
    const std::vector<std::string> zero = {
        "chips=" + std::to_string(c.chips), "topology.dims=[" + std::to_string(c.chips) + "]",
        "topology.link.packet_overhead_bytes=0", "chip.modules.hbm.latency_ns=0",
        "chip.modules.hbm.channel_bandwidth_gbps=1000000", "chip.modules.noc.latency_ns=0",
        "chip.modules.ici.latency_ns=0"};
    std::vector<std::string> sets = zero;
    for (int d = 0; d < 4; ++d)
        for (const char* k : {"setup_latency=0", "bandwidth_gbps=10000000"})
            sets.push_back("chip.modules.dma" + std::to_string(d) + "." + k);
    auto run = simulate(collective_trace("coll.bin", p), sets, "configs/xpu-ring4.yaml", false);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    const Platform pl = platform_of(run->cfg);
    const unsigned steps = (c.op == "all-reduce" ? 2 : 1) * (c.chips - 1);
    const double astra = steps * (pl.link_latency_ns + (c.bytes / c.chips) / pl.link_gbps);
    check(run->result.simulated_ns, astra, c.bytes, "ASTRA-sim form, " + c.op + " " + std::to_string(c.chips) + " chips");
}

static std::vector<Case> astra_cases() {
    std::vector<Case> v;
    for (const char* op : {"all-gather", "reduce-scatter", "all-reduce"})
        for (unsigned n : {4u, 16u})
            for (std::uint64_t b : {16384ull, 65536ull, 1ull << 20, 64ull << 20}) v.push_back({op, n, b});
    return v;
}

INSTANTIATE_TEST_SUITE_P(Collective, AstraSimForm, ::testing::ValuesIn(astra_cases()), [](const auto& info) {
    std::string op = info.param.op;
    for (auto& ch : op)
        if (ch == '-') ch = '_';
    return op + "_" + std::to_string(info.param.chips) + "chips_" + std::to_string(info.param.bytes) + "B";
});

// Side by side with ASTRA-sim's congestion-unaware analytical backend, run (not its closed form):
// astra-sim/astra-sim 518bd51 with astra-sim/astra-network-analytical 599a047 (the head: the
// pinned e8c5119 is not in the snapshot), chakra f37c2bb, astra-memory-analytical head, built
// outside this repository on Debian's protobuf, fmt, spdlog and yaml-cpp (docs/validation.md,
// "Collectives against ASTRA-sim"), as scripts/collectives_vs_astrasim.sh runs it: one Chakra
// COMM_COLL_NODE per NPU, a Ring (or Ring x Ring) of 50e9 B/s (given as 46.566 of its 2^30 B/s
// "GB/s") and 500 ns per hop, one ring per dimension, one chunk, localBWAware, endpoint-delay 1;
// its figure the largest "sys[i], Wall time" in ns. Ours: the same collective with every on-chip
// cost zeroed (AstraSimForm's settings): a chip as ASTRA-sim's analytical backend models one.
// Goal (issue 15): within 2%. Why it holds: both are (steps) x (hop latency + message / link
// bandwidth) on the same links; ours adds only the flags' serialisation and ASTRA-sim its
// endpoint delay of 1 per message.
namespace {
struct AstraFigure {
    const char* op;
    unsigned x, y;  // ring of x chips (y 0), or an x by y torus
    std::uint64_t bytes;
    double astra_ns;
};
void PrintTo(const AstraFigure& f, std::ostream* os) {
    *os << f.op << " " << f.x << (f.y ? "x" + std::to_string(f.y) : std::string(" ring")) << " " << f.bytes << " B";
}
// op, ring of x chips (y 0) or x by y torus, bytes, ASTRA-sim's ns (a subset of the 105 rows of
// docs/validation.md: every size from 16 KiB to 1 MiB, 16 MiB and 256 MiB on the smaller rings;
// the 64-chip 256 MiB rows take ~50 s each to simulate here).
const AstraFigure kAstraSim[] = {
    {"all-gather", 4, 0, 16384, 1747},
    {"all-gather", 4, 0, 65536, 2485},
    {"all-gather", 4, 0, 1048576, 17230},
    {"all-gather", 4, 0, 16777216, 253162},
    {"all-gather", 4, 0, 268435456, 4028035},
    {"all-gather", 8, 0, 16384, 3788},
    {"all-gather", 8, 0, 65536, 4649},
    {"all-gather", 8, 0, 1048576, 21855},
    {"all-gather", 16, 0, 16384, 7816},
    {"all-gather", 16, 0, 65536, 8731},
    {"all-gather", 16, 0, 1048576, 27166},
    {"all-gather", 16, 0, 16777216, 322081},
    {"all-gather", 32, 0, 16384, 15842},
    {"all-gather", 32, 0, 65536, 16772},
    {"all-gather", 32, 0, 1048576, 35837},
    {"all-gather", 64, 0, 16384, 31879},
    {"all-gather", 64, 0, 65536, 32824},
    {"all-gather", 64, 0, 1048576, 52165},
    {"all-gather", 4, 4, 16384, 3311},
    {"all-gather", 4, 4, 1048576, 22664},
    {"all-gather", 4, 4, 16777216, 317579},
    {"all-gather", 8, 8, 16384, 7331},
    {"all-gather", 8, 8, 1048576, 27652},
    {"all-gather", 8, 8, 16777216, 337311},
    {"reduce-scatter", 4, 0, 16384, 1747},
    {"reduce-scatter", 4, 0, 65536, 2485},
    {"reduce-scatter", 4, 0, 1048576, 17230},
    {"reduce-scatter", 4, 0, 16777216, 253198},
    {"reduce-scatter", 4, 0, 268435456, 4028638},
    {"reduce-scatter", 8, 0, 16384, 3788},
    {"reduce-scatter", 8, 0, 65536, 4649},
    {"reduce-scatter", 8, 0, 1048576, 21855},
    {"reduce-scatter", 16, 0, 16384, 7816},
    {"reduce-scatter", 16, 0, 65536, 8731},
    {"reduce-scatter", 16, 0, 1048576, 27166},
    {"reduce-scatter", 16, 0, 16777216, 322126},
    {"reduce-scatter", 32, 0, 16384, 15842},
    {"reduce-scatter", 32, 0, 65536, 16772},
    {"reduce-scatter", 32, 0, 1048576, 35837},
    {"reduce-scatter", 64, 0, 16384, 31879},
    {"reduce-scatter", 64, 0, 65536, 32824},
    {"reduce-scatter", 64, 0, 1048576, 52165},
    {"reduce-scatter", 4, 4, 16384, 3311},
    {"reduce-scatter", 4, 4, 1048576, 22664},
    {"reduce-scatter", 4, 4, 16777216, 317624},
    {"reduce-scatter", 8, 8, 16384, 7331},
    {"reduce-scatter", 8, 8, 1048576, 27652},
    {"reduce-scatter", 8, 8, 16777216, 337353},
    {"all-reduce", 4, 0, 16384, 3493},
    {"all-reduce", 4, 0, 65536, 4969},
    {"all-reduce", 4, 0, 1048576, 34459},
    {"all-reduce", 4, 0, 16777216, 506359},
    {"all-reduce", 4, 0, 268435456, 8056672},
    {"all-reduce", 8, 0, 16384, 7575},
    {"all-reduce", 8, 0, 65536, 9297},
    {"all-reduce", 8, 0, 1048576, 43709},
    {"all-reduce", 16, 0, 16384, 15631},
    {"all-reduce", 16, 0, 65536, 17461},
    {"all-reduce", 16, 0, 1048576, 54331},
    {"all-reduce", 16, 0, 16777216, 644206},
    {"all-reduce", 32, 0, 16384, 31683},
    {"all-reduce", 32, 0, 65536, 33543},
    {"all-reduce", 32, 0, 1048576, 71673},
    {"all-reduce", 64, 0, 16384, 63757},
    {"all-reduce", 64, 0, 65536, 65647},
    {"all-reduce", 64, 0, 1048576, 104329},
    {"all-reduce", 4, 4, 16384, 6621},
    {"all-reduce", 4, 4, 1048576, 45327},
    {"all-reduce", 4, 4, 16777216, 635202},
    {"all-reduce", 8, 8, 16384, 14661},
    {"all-reduce", 8, 8, 1048576, 55303},
    {"all-reduce", 8, 8, 16777216, 674663},
};
}  // namespace

class AstraSimSideBySide : public ::testing::TestWithParam<AstraFigure> {};

TEST_P(AstraSimSideBySide, OnChipCostsZeroedWithin2Percent) {
    const AstraFigure& f = GetParam();
    gen::CollectiveParams p;
    p.op = f.op;
    p.bytes = f.bytes;
    p.chips = f.y ? f.x * f.y : f.x;
    p.algo = f.y ? "torus2d" : "ring";
    if (f.y) {
        p.dims_x = f.x;
        p.dims_y = f.y;
    }
    const std::string dims = f.y ? "[" + std::to_string(f.x) + ", " + std::to_string(f.y) + "]" : "[" + std::to_string(f.x) + "]";
    std::vector<std::string> sets = {"chips=" + std::to_string(p.chips), "topology.dims=" + dims,
                                     "topology.link.packet_overhead_bytes=0", "chip.modules.hbm.latency_ns=0",
                                     "chip.modules.hbm.channel_bandwidth_gbps=1000000", "chip.modules.noc.latency_ns=0",
                                     "chip.modules.ici.latency_ns=0"};
    for (int d = 0; d < 4; ++d)
        for (const char* k : {"setup_latency=0", "bandwidth_gbps=10000000"})
            sets.push_back("chip.modules.dma" + std::to_string(d) + "." + k);
    auto run = simulate(collective_trace("coll.bin", p), sets,
                        f.y ? "configs/xpu-torus4x4.yaml" : "configs/xpu-ring4.yaml", false);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    const Platform pl = platform_of(run->cfg);
    ASSERT_EQ(pl.link_gbps, 50.0);  // the figures were run on these links
    ASSERT_EQ(pl.link_latency_ns, 500.0);
    check(run->result.simulated_ns, f.astra_ns, f.bytes, std::string("ASTRA-sim run, ") + f.op);
}

INSTANTIATE_TEST_SUITE_P(Collective, AstraSimSideBySide, ::testing::ValuesIn(kAstraSim), [](const auto& info) {
    std::string n = info.param.op;
    for (auto& ch : n)
        if (ch == '-') ch = '_';
    n += "_" + std::to_string(info.param.x) + (info.param.y ? "x" + std::to_string(info.param.y) : std::string("ring"));
    return n + "_" + std::to_string(info.param.bytes) + "B";
});

// Posted completion flags: each remote DMA's flag takes effect at the destination no earlier
// than its data has landed (the DMA's completion) and right behind it (within the far port,
// interconnect and a flag's serialisation: no second link latency).
TEST(Collective, RemoteFlagFollowsItsDataWithoutASecondTraversal) {
    std::string path = temp_path("flag.bin");
    {
        trace::TraceWriter w(path);
        gen::Emitter e(w, w.add_stream(0, 0));
        e.annotate("push");
        e.dma_remote(0, Space::Hbm, 0, 1, Space::Hbm, 0, 64 << 10, 10);
        e.halt();
        gen::Emitter r(w, w.add_stream(1, 0));
        r.annotate("receive");
        r.swait(10, Cond::Ge, 1);
        r.halt();
        w.close();
    }
    auto run = simulate(path, {}, "configs/xpu-ring4.yaml", true);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    ASSERT_EQ(run->rec.dmas.size(), 1u);
    const Tick landed = run->rec.dmas[0].complete;
    Tick raised = 0;
    for (const auto& f : run->rec.flags)
        if (f.flag == 10 && f.new_value == 1) raised = f.time;
    EXPECT_GE(raised, landed);
    EXPECT_LT(raised, landed + 100'000) << "the flag crossed the link a second time";  // < 100 ns, a link is 500
}

// Conservation: every byte a chip sends arrives at its neighbour's HBM (a reducing write also
// reads it there), every remote DMA raises its flag exactly once on the destination, and no
// link carries more than its bandwidth (utilisation <= 100%).
TEST(Collective, BytesAndFlagsAreConservedAndLinksStayUnderPeak) {
    gen::CollectiveParams p;
    p.op = "all-reduce";
    p.algo = "ring";
    p.chips = 4;
    p.bytes = 1 << 20;
    p.chunks = 2;
    auto run = simulate(collective_trace("coll.bin", p), {}, "configs/xpu-ring4.yaml", true);
    ASSERT_TRUE(run->result.completed);
    std::uint64_t sent = 0, reducing = 0, dmas = 0;
    for (const auto& i : run->rec.instructions)
        if (i.in.op == Opcode::Dma) {
            ASSERT_NE(i.in.mem_dst.chip, kLocalChip);
            sent += i.in.bytes;
            if (i.in.has(kDtype)) reducing += i.in.bytes;
            ++dmas;
        }
    std::uint64_t hbm_written = 0, hbm_read = 0, flag_raises = 0;
    for (const auto& m : run->rec.mems)
        if (std::string(m.target).find(".hbm") != std::string::npos) (m.write ? hbm_written : hbm_read) += m.bytes;
    for (const auto& f : run->rec.flags) flag_raises += f.flag == 10 && f.new_value == f.old_value + 1;
    EXPECT_EQ(hbm_written, sent);
    // Per chip: what the others sent to it is what its HBM received.
    std::map<unsigned, std::uint64_t> to_chip, at_chip;
    for (const auto& i : run->rec.instructions)
        if (i.in.op == Opcode::Dma) to_chip[i.in.mem_dst.chip] += i.in.bytes;
    for (const auto& m : run->rec.mems) {
        std::string t = m.target;
        if (m.write && t.find(".hbm") != std::string::npos) at_chip[std::stoul(t.substr(8, t.find('.', 8) - 8))] += m.bytes;
    }
    EXPECT_EQ(to_chip, at_chip);
    // Per link: a ring step moves one chip's shard over one link; each link carries exactly
    // the bytes of the DMAs its chip sent, plus one flag write per DMA.
    std::map<std::string, std::uint64_t> link_bytes;
    for (const auto& m : run->rec.mems)
        if (std::string(m.target).find(".links.") != std::string::npos) link_bytes[m.target] += m.bytes;
    std::map<unsigned, std::uint64_t> from_chip, dmas_from;
    for (const auto& i : run->rec.instructions)
        if (i.in.op == Opcode::Dma) {
            from_chip[i.ev.chip] += i.in.bytes;
            ++dmas_from[i.ev.chip];
        }
    for (unsigned c = 0; c < 4; ++c)
        EXPECT_EQ(link_bytes["xpu.links.chip" + std::to_string(c) + "_xp"], from_chip[c] + dmas_from[c] * sizeof(FlagCommand))
            << "chip " << c;
    EXPECT_EQ(run->result.hbm_bytes_written, sent);
    EXPECT_EQ(run->result.hbm_bytes_read, sent + reducing);  // sources read, reductions read at the destination
    EXPECT_EQ(flag_raises, dmas);
    EXPECT_EQ(run->rec.dmas.size(), dmas);
    std::size_t links = 0;
    for (const auto& u : run->result.units)
        if (u.kind == "IciLink") {
            ++links;
            EXPECT_LE(u.utilization, 1.0) << u.name;
        }
    EXPECT_EQ(links, 8u);  // 4 chips x 2 directions
}

// Scale: a 256-chip (16x16 torus) all-reduce simulates to completion.
TEST(Collective, AllReduceOn256ChipsCompletes) {
    gen::CollectiveParams p;
    p.op = "all-reduce";
    p.algo = "torus2d";
    p.chips = 256;
    p.dims_x = p.dims_y = 16;
    p.bytes = 1 << 20;
    auto run = simulate(collective_trace("coll.bin", p), {}, "configs/xpu-torus16x16.yaml", false);
    EXPECT_TRUE(run->result.completed);
    EXPECT_EQ(run->result.streams, 256u);
    EXPECT_GT(run->result.simulated_ns, 0);
}

// A tensor-parallel llama2-7b decode layer over the 4-chip ring: four streams, attention and
// MLP outputs all-reduced by remote DMAs, runs to completion, and the per-chip HBM traffic is
// a quarter of the weights each (plus KV cache and activations).
TEST(Collective, TensorParallelDecodeRunsOnFourChips) {
    gen::TransformerParams p;
    ASSERT_TRUE(gen::model_preset("llama2-7b", p.model));
    p.decode = true;
    p.batch = 1;
    p.seq = 256;
    p.layers = 1;
    p.tp = 4;
    gen::TransformerSummary s;
    auto run = simulate(transformer_trace("tp4.bin", p, &s), {}, "configs/xpu-ring4.yaml", false);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    EXPECT_EQ(run->result.streams, 4u);
    EXPECT_GT(s.remote_bytes, 0u);
    // Every HBM byte the trace reads or writes locally, plus the reductions' reads at the
    // destination (one per reducing byte received), is counted by the controllers.
    EXPECT_GE(run->result.hbm_bytes_read, s.hbm_bytes_read);
    const std::uint64_t weights = (4096ull * 3 * 4096 + 4096ull * 4096 + 3ull * 4096 * 11008) * 2;
    EXPECT_GT(s.hbm_bytes_read, weights);  // all four chips together read every weight once
    EXPECT_LT(s.hbm_bytes_read, weights + weights / 5);
    // The breakdown the report prints: core time by op, and the share spent in collectives.
    auto b = platform::breakdown(run->sim->platform(), run->sim->trace().strings());
    ASSERT_EQ(b.chips.size(), 4u);
    for (const auto& c : b.chips) {
        EXPECT_GT(c.instructions, 0u);
        EXPECT_GT(c.link_bytes_sent, 0u);
    }
    EXPECT_GT(b.communication_share, 0.0);
    EXPECT_LT(b.communication_share, 1.0);
    double comm = 0, total = 0;
    for (const auto& o : b.ops) {
        total += o.share;
        if (platform::is_communication(o.op)) comm += o.share;
    }
    EXPECT_NEAR(total, 1.0, 1e-9);
    EXPECT_NEAR(comm, b.communication_share, 1e-9);
}

// Flow control: with room for only 8 KiB in flight, a 1 MiB remote DMA fills the link's
// buffer and the DMA engine is held back (the link reports back-pressure), yet the link still
// runs at its bandwidth and never above it.
TEST(Collective, AFullLinkBackPressuresItsSender) {
    std::string path = temp_path("push.bin");
    {
        trace::TraceWriter w(path);
        gen::Emitter e(w, w.add_stream(0, 0));
        e.annotate("push");
        e.dma_remote(0, Space::Hbm, 0, 1, Space::Hbm, 0, 1 << 20, 10);
        e.halt();
        gen::Emitter r(w, w.add_stream(1, 0));
        r.annotate("receive");
        r.swait(10, Cond::Ge, 1);
        r.halt();
        w.close();
    }
    auto run = simulate(path, {"topology.link.buffer_bytes=8KiB"}, "configs/xpu-ring4.yaml", true);
    ASSERT_TRUE(run->result.completed) << run->result.diagnosis;
    double backpressure = 0;
    for (auto* m : run->sim->platform().modules())
        if (std::string(m->name()) == "xpu.links.chip0_xp")
            for (const auto& s : m->stats())
                if (s.name == "backpressure_ns") backpressure = s.value;
    EXPECT_GT(backpressure, 0.0);
    ASSERT_EQ(run->rec.dmas.size(), 1u);
    const double ns = ticks_to_ns(run->rec.dmas[0].complete - run->rec.dmas[0].start);
    const double wire = (1 << 20) * (1.0 + 64.0 / 1024.0);  // payload + per-packet overhead
    EXPECT_GE(ns, wire / 50.0);                              // never above 50 GB/s
    EXPECT_LE(ns, wire / 50.0 * 1.05 + 1000.0);              // and still close to it
}

#include "analysis/relower.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "analysis/replay.h"
#include "analysis/verify.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace xpu::analysis {

namespace fs = std::filesystem;

namespace {

// A scratch folder of its own under the system's temporary directory, removed with it.
class Scratch {
public:
    Scratch() {  // none (ok() false) where there is no temporary directory: the suggestion stays advice
        std::error_code ec;
        const fs::path tmp = fs::temp_directory_path(ec);
        if (ec) return;
        std::string t = (tmp / "xpusim-relower-XXXXXX").string();
        if (::mkdtemp(t.data())) dir_ = t;
    }
    ~Scratch() {
        std::error_code ec;
        if (!dir_.empty()) fs::remove_all(dir_, ec);
    }
    bool ok() const { return !dir_.empty(); }
    std::string file(const std::string& name) const { return (fs::path(dir_) / name).string(); }

private:
    std::string dir_;
};

// What the probes compare: chip 0's DMAs, how many and their bytes.
struct DmaSums {
    std::uint64_t count = 0, bytes = 0;
};
void add_dmas(DmaSums& s, const Instruction* first, const Instruction* last) {
    for (const Instruction* in = first; in != last; ++in)
        if (in->op == Opcode::Dma) {
            ++s.count;
            s.bytes += in->bytes;
        }
}

// A probe: chip 0's DMAs in the generator's trace for p (none if it refuses the parameters).
std::optional<DmaSums> probe_chip0(const gen::CollectiveParams& p, const std::string& path) {
    try {
        write_collective(p, path);
        const trace::TraceFile f = trace::TraceFile::open(path);
        if (f.streams().empty()) return std::nullopt;
        DmaSums s;
        trace::StreamReader r(f, 0);
        Instruction buf[512];
        for (std::size_t got; (got = r.read(buf, 512)) > 0;) add_dmas(s, buf, buf + got);
        return s;
    } catch (const std::exception&) {  // parameters the generator refuses, or no room to write the probe
        return std::nullopt;
    }
}

// Whether the generator writes exactly `streams` and `strings` for p: the streams compared as they
// are read back, a block at a time (no second copy of the program in memory).
bool writes_the_program(const gen::CollectiveParams& p, const std::string& path, const std::vector<Stream>& streams,
                        const std::vector<std::string>& strings) {
    try {
        write_collective(p, path);
        const trace::TraceFile f = trace::TraceFile::open(path);
        if (f.strings() != strings || f.streams().size() != streams.size()) return false;
        for (std::size_t i = 0; i < streams.size(); ++i) {
            if (f.streams()[i].chip != streams[i].chip || f.streams()[i].core != streams[i].core) return false;
            trace::StreamReader r(f, i);
            Instruction buf[512];
            std::size_t at = 0;
            for (std::size_t got; (got = r.read(buf, 512)) > 0; at += got)
                if (at + got > streams[i].code.size() || !std::equal(buf, buf + got, streams[i].code.begin() + at)) return false;
            if (at != streams[i].code.size()) return false;
        }
        return true;
    } catch (const std::exception&) {  // parameters the generator refuses, or no room to write the trace
        return false;
    }
}

// Ordered factorisations of n into k factors of at least 2.
void factorisations(unsigned n, unsigned k, std::vector<unsigned>& cur, std::vector<std::vector<unsigned>>& out) {
    if (k == 1) {
        if (n >= 2) {
            cur.push_back(n);
            out.push_back(cur);
            cur.pop_back();
        }
        return;
    }
    for (unsigned f = 2; f <= n / 2; ++f)
        if (n % f == 0) {
            cur.push_back(f);
            factorisations(n / f, k - 1, cur, out);
            cur.pop_back();
        }
}

}  // namespace

std::uint64_t write_collective(const gen::CollectiveParams& p, const std::string& path) {
    trace::TraceWriter w(path);
    const gen::CollectiveSummary s = gen::emit_collective(w, p);
    w.close();
    return s.instructions;
}

std::vector<gen::CollectiveParams> relowering_alternatives(const gen::CollectiveParams& mine, const std::vector<unsigned>& torus_dims) {
    std::vector<std::string> algos = {"ring", "bidir-ring", "direct"};
    // The torus algorithms on the platform's torus (a collective over all its chips); a torus
    // collective run elsewhere keeps its own dimensions.
    std::vector<unsigned> dims = torus_dims;
    if (dims.empty() && mine.dims_x) dims = mine.torus_dims();
    unsigned product = 1;
    for (unsigned d : dims) product *= d;
    const bool torus = (dims.size() == 2 || dims.size() == 3) && product == mine.chips;
    if (torus) {
        const std::string d = dims.size() == 3 ? "3d" : "2d";
        for (const char* a : {"torus", "bidir-torus"}) algos.push_back(a + d);
    }
    std::vector<gen::CollectiveParams> out;
    for (const std::string& algo : algos)
        for (unsigned more : {1u, 4u}) {
            gen::CollectiveParams p = mine;
            p.algo = algo;
            p.set_torus_dims(algo.find("torus") != std::string::npos ? dims : std::vector<unsigned>{});
            p.chunks = std::max(1u, mine.chunks) * more;
            p.serial = false;
            if (p.algo == mine.algo && p.chunks == mine.chunks && p.serial == mine.serial && p.dims_x == mine.dims_x &&
                p.dims_y == mine.dims_y && p.dims_z == mine.dims_z)
                continue;  // the trace's own lowering
            out.push_back(p);
        }
    return out;
}

RelowerSearch fastest_relowering(const std::vector<gen::CollectiveParams>& alternatives, Tick run_end, std::uint64_t original,
                                 const std::string& platform_file, const std::string& shown_platform) {
    RelowerSearch r;
    const std::string sim = find_sim_main();
    Scratch scratch;
    std::error_code ec;
    if (sim.empty() || !scratch.ok() || run_end == 0) return r;
    // What the search may cost, in instructions simulated (a replay's time grows with them): each
    // alternative at most 4x the original's, all of them at most 6x (plus a floor, so that small
    // collectives try every one), the smallest first. A 256-chip ring over a 16x16 torus would
    // otherwise simulate 4.2 M instructions for one of them (about 20 s here); within these, a
    // 256-chip torus2d all-reduce's search adds ~2 replays of the original's length.
    const std::uint64_t each = 4 * original + 50'000, all = 6 * original + 200'000;
    struct Written {
        std::shared_ptr<Relowering> rl;
        std::string path;
        std::size_t listed;
    };
    std::vector<Written> written;
    for (std::size_t i = 0; i < alternatives.size(); ++i) {
        auto rl = std::make_shared<Relowering>();
        rl->params = alternatives[i];
        const std::string path = scratch.file("alternative" + std::to_string(i) + ".bin");
        try {
            rl->instructions = write_collective(rl->params, path);
        } catch (const std::exception&) {  // a tensor that lowering cannot split, or no room to write it
            fs::remove(path, ec);
            continue;
        }
        if (rl->instructions > each) {
            fs::remove(path, ec);
            continue;
        }
        rl->command = tracegen_command(rl->params, shown_platform);
        written.push_back({std::move(rl), path, i});
    }
    std::stable_sort(written.begin(), written.end(), [](const Written& a, const Written& b) { return a.rl->instructions < b.rl->instructions; });
    std::uint64_t spent = 0;
    std::size_t kept = 0;
    for (; kept < written.size() && spent + written[kept].rl->instructions <= all; ++kept) spent += written[kept].rl->instructions;
    r.left_out = alternatives.size() - kept;  // refused by the generator, or over the budget
    written.resize(kept);
    if (written.empty()) return r;
    std::vector<ReplayJob> jobs;
    for (const Written& w : written) jobs.push_back({w.path, {}});
    ReplayOptions ro;
    ro.sim_main = sim;
    ro.platform = platform_file;
    ro.work_dir = scratch.file("replays");
    fs::create_directories(ro.work_dir, ec);
    if (ec) return r;
    const std::vector<ReplayResult> res = replay_all(jobs, ro);
    const Tick floor = verify_floor(run_end);
    std::size_t best_listed = 0;
    for (std::size_t i = 0; i < written.size(); ++i) {
        const ReplayResult& x = res[i];
        if (!x.ok) continue;
        ++r.measured;
        const Tick end = ticks_of_replay_ns(x.simulated_ns);
        const bool better = !r.best || end < r.best_end || (end == r.best_end && written[i].listed < best_listed);
        if (end + floor < run_end && better) {
            written[i].rl->simulated_ns = x.simulated_ns;
            r.best = written[i].rl;
            r.best_end = end;
            best_listed = written[i].listed;
        }
    }
    r.ran = r.measured > 0;  // none replayed (no platform description there, say): nothing measured
    return r;
}

std::shared_ptr<const Relowering> relower(const gen::CollectiveParams& target, const std::string& platform) {
    auto r = std::make_shared<Relowering>();
    r->params = target;
    Scratch scratch;
    if (!scratch.ok()) return nullptr;
    try {
        r->instructions = write_collective(r->params, scratch.file("relowered.bin"));
    } catch (const std::exception&) {  // a tensor that algorithm cannot split, or no room to write it: advice
        return nullptr;
    }
    r->command = tracegen_command(r->params, platform);
    return r;
}

std::string tracegen_command(const gen::CollectiveParams& p, const std::string& platform) {
    std::ostringstream o;
    o << "xpu_tracegen collective --op " << p.op << " --chips " << p.chips << " --bytes " << p.bytes << " --algo " << p.algo;
    if (p.dims_x) o << " --dims " << p.dims_x << "x" << p.dims_y << (p.dims_z ? "x" + std::to_string(p.dims_z) : "");
    if (p.chunks > 1) o << " --chunks " << p.chunks;
    if (p.serial) o << " --serial-collective";
    if (p.tiles.dtype != DType::Bf16) o << " --dtype " << dtype_name(p.tiles.dtype);
    if (p.tiles.dma_engines != gen::TileConfig{}.dma_engines) o << " --platform " << platform;  // its DMA engines
    return o.str();
}

std::optional<gen::CollectiveParams> recognise_collective(const std::vector<Stream>& streams,
                                                           const std::vector<std::string>& strings, unsigned platform_engines) {
    // Chips 0..N-1, core 0 each, in order: the generator's streams.
    if (streams.size() < 2 || streams.size() > 4096) return std::nullopt;
    for (std::size_t i = 0; i < streams.size(); ++i)
        if (streams[i].chip != i || streams[i].core != 0 || streams[i].code.empty()) return std::nullopt;
    // Every annotation "OP/ALGO/...", one OP and one ALGO.
    std::string op, algo;
    for (const std::string& s : strings) {
        const auto a = s.find('/'), b = a == std::string::npos ? a : s.find('/', a + 1);
        if (b == std::string::npos) return std::nullopt;
        if (op.empty()) op = s.substr(0, a), algo = s.substr(a + 1, b - a - 1);
        if (s.compare(0, a, op) != 0 || s.compare(a + 1, b - a - 1, algo) != 0) return std::nullopt;
    }
    if (op.empty()) return std::nullopt;
    const bool torus = algo.find("torus") != std::string::npos;
    const unsigned chips = static_cast<unsigned>(streams.size());

    // What chip 0 tells: its DMAs, the engines they use, the chips it sends to, a reduction's type.
    DmaSums want;
    add_dmas(want, streams[0].code.data(), streams[0].code.data() + streams[0].code.size());
    if (!want.count) return std::nullopt;
    unsigned used_engines = 1;
    std::set<unsigned> dests;
    std::vector<DType> dtypes = {DType::Bf16, DType::Int8, DType::F32};
    for (const Stream& st : streams)
        for (const Instruction& in : st.code)
            if (in.op == Opcode::Dma) {
                used_engines = std::max(used_engines, static_cast<unsigned>(in.unit) + 1);
                if (&st == &streams[0] && in.mem_dst.chip != kLocalChip) dests.insert(in.mem_dst.chip);
                if (in.has(kDtype)) dtypes = {in.dtype};  // a reducing DMA names the element type
            }
    // Torus dimensions: every ordered factorisation into 2 (torus2d) or 3 factors whose rings
    // chip 0 sends along (its neighbours +-1, +-X, +-XY).
    std::vector<std::vector<unsigned>> dims_options;
    if (torus) {
        std::vector<unsigned> cur;
        factorisations(chips, algo.find("3d") != std::string::npos ? 3 : 2, cur, dims_options);
        dims_options.erase(std::remove_if(dims_options.begin(), dims_options.end(),
                                          [&](const std::vector<unsigned>& d) {
                                              unsigned stride = 1;
                                              for (unsigned x : d) {
                                                  if (!dests.count(stride) && !dests.count(chips - stride)) return true;
                                                  stride *= x;
                                              }
                                              return false;
                                          }),
                           dims_options.end());
    } else {
        dims_options.push_back({});
    }
    // DMA engines: the platform's first (if the program can have been written for it), then the
    // fewest the program's DMAs need, up to 8.
    std::vector<unsigned> engine_options;
    if (platform_engines >= used_engines) engine_options.push_back(platform_engines);
    for (unsigned e = used_engines; e <= std::max(used_engines, 8u); ++e)
        if (e != platform_engines) engine_options.push_back(e);

    Scratch scratch;
    if (!scratch.ok()) return std::nullopt;
    const std::string probe = scratch.file("probe.bin"), full = scratch.file("full.bin");
    unsigned tries = 0;
    for (const auto& dims : dims_options)
        for (DType dt : dtypes)
            for (unsigned eng : engine_options)
                for (bool serial : {false, true}) {
                    if (++tries > 256) return std::nullopt;  // bounded: a program this does not recognise soon is not one
                    gen::CollectiveParams p;
                    p.op = op;
                    p.algo = algo;
                    p.chips = chips;
                    p.set_torus_dims(dims);
                    p.serial = serial;
                    p.tiles.dtype = dt;
                    p.tiles.dma_engines = eng;
                    const std::uint64_t rings = algo.rfind("bidir", 0) == 0 ? 2 : 1;
                    auto unit = [&](unsigned chunks) { return std::uint64_t(chips) * rings * chunks * dtype_bytes(dt); };
                    // Probe 1: one piece per shard, the least tensor: the pieces are in proportion.
                    p.chunks = 1;
                    p.bytes = unit(1);
                    const auto s1 = probe_chip0(p, probe);
                    if (!s1 || !s1->count || want.count % s1->count) continue;
                    p.chunks = static_cast<unsigned>(want.count / s1->count);
                    // Probe 2: those pieces, the least tensor: the bytes are in proportion.
                    p.bytes = unit(p.chunks);
                    const auto s2 = probe_chip0(p, probe);
                    if (!s2 || s2->count != want.count || !s2->bytes || want.bytes % s2->bytes) continue;
                    p.bytes = unit(p.chunks) * (want.bytes / s2->bytes);
                    // The whole program, compared: streams, instructions, strings.
                    if (writes_the_program(p, full, streams, strings)) return p;
                }
    return std::nullopt;
}

}  // namespace xpu::analysis

#include "analysis_sample.h"

#include <cstdio>

namespace xpu::analysis::sample {

namespace {

constexpr Tick kEnd = 20'000'000;  // 20 us

Instruction make(Opcode op, int ann = -1) {
    Instruction in;
    in.op = op;
    if (ann >= 0) {
        in.set(kAnn);
        in.ann = static_cast<std::uint32_t>(ann);
    }
    return in;
}

Instruction dma(int ann, std::uint64_t bytes, std::uint16_t flag, std::uint16_t remote_chip = kLocalChip) {
    Instruction in = make(Opcode::Dma, ann);
    in.set(kMemSrc | kMemDst | kBytes | kFlag);
    in.mem_src = {Space::Hbm, kLocalChip, 0x100000};
    in.mem_dst = {Space::Vmem, remote_chip, 0x2000};
    in.bytes = bytes;
    in.flag = flag;
    return in;
}

Instruction matmul(Opcode op, int ann) {
    Instruction in = make(op, ann);
    if (op == Opcode::MatMul) {
        in.set(kDst | kSrc0 | kShape | kDtype);
        in.dst = kMatrixRegBase + 0;
        in.src[0] = kVectorRegBase + 1;
        in.m = 128;
        in.n = 128;
        in.k = 128;
    } else {
        in.set(kSrc0);
        in.src[0] = kVectorRegBase + 2;
    }
    return in;
}

Instruction wait(std::uint16_t flag) {
    Instruction in = make(Opcode::SWait);
    in.set(kFlag | kValue | kCond);
    in.flag = flag;
    in.value = 1;
    in.cond = Cond::Ge;
    return in;
}

Life life(Tick arrival, Tick ready, Tick issue, Tick complete) { return Life{arrival, ready, issue, complete, true}; }

UnitAccount account(const RunData& run, std::uint32_t unit, std::vector<Segment> segs) {
    UnitAccount u;
    u.unit = unit;
    u.name = run.units[unit].path;
    u.kind = run.units[unit].kind;
    u.role = run.units[unit].role;
    u.chip = run.units[unit].chip;
    u.timeline = std::move(segs);
    for (const auto& s : u.timeline) u.time[static_cast<std::size_t>(s.cause)] += s.end - s.begin;
    return u;
}

CauseTimes times(std::initializer_list<std::pair<Cause, Tick>> l) {
    CauseTimes t{};
    for (const auto& [c, v] : l) t[static_cast<std::size_t>(c)] += v;
    return t;
}

}  // namespace

RunData run() {
    RunData r;
    r.dir = "out/sample<&>";
    r.meta = {{"platform", "configs/xpu.yaml"}, {"trace", "traces/sample<b>.bin"}, {"clock_ghz", "0.94"}};
    r.units = {
        {"xpu.chip0.core0.scalar", "ScalarCore", Role::Core, 0, 0, 0},          // 0
        {"xpu.chip0.core1.scalar", "ScalarCore", Role::Core, 0, 0, 0},          // 1
        {"xpu.chip0.core0.vpu", "VectorUnit", Role::Vector, 0, 0, 0},             // 2
        {"xpu.chip0.core0.mxu0", "MatrixUnit", Role::Matrix, 0, 0, 0},            // 3
        {"xpu.chip0.dma0", "DmaEngine", Role::Dma, 0, 600, 0},                 // 4
        {"xpu.chip0.hbm", "HbmController", Role::Hbm, 0, 1200, 0},             // 5
        {"xpu.chip0.vmem", "Vmem", Role::Vmem, 0, 0, 16u << 20},                // 6
        {"xpu.chip1.core0.scalar", "ScalarCore", Role::Core, 1, 0, 0},          // 7
        {"xpu.links.chip0_xp", "IciLink", Role::Link, -1, 50, 0},               // 8
        {"xpu.chip1.dma0", "DmaEngine", Role::Dma, 1, 600, 0},                 // 9
    };
    r.strings = {"layer0/gemm/load_b", "layer0/gemm/matmul", kEvil, "layer1/allreduce/send", std::string("bad utf8 \xff\xfe end")};

    Stream s0;  // chip0 core0
    s0.chip = 0;
    s0.core = 0;
    s0.code = {dma(0, 4u << 20, 1), wait(1), matmul(Opcode::MPush, 1), matmul(Opcode::MatMul, 1), matmul(Opcode::MatMul, 1),
               make(Opcode::VStore, 2), dma(4, 2u << 20, 2), make(Opcode::Halt)};
    s0.life = {life(0, 1000, 1000, 5'000'000),        life(0, 2000, 2000, 5'001'000),
               life(0, 5'002'000, 5'002'000, 5'500'000), life(0, 5'003'000, 5'003'000, 7'000'000),
               life(0, 5'004'000, 5'004'000, 8'000'000), life(0, 8'001'000, 8'001'000, 8'100'000),
               life(0, 8'101'000, 8'101'000, 12'000'000), life(0, 12'001'000, 12'001'000, 12'001'000)};
    Stream s1;  // chip0 core1: its last instruction never issued
    s1.chip = 0;
    s1.core = 1;
    s1.code = {make(Opcode::SAlu), make(Opcode::Barrier), make(Opcode::Halt)};
    s1.life = {life(0, 1000, 1000, 2000), life(0, 2000, 2000, 3'000'000), Life{}};
    Stream s2;  // chip1 core0: times on half ns, back to back
    s2.chip = 1;
    s2.core = 0;
    s2.code = {dma(3, 1u << 20, 5, 0), wait(5), make(Opcode::SAdd, 3), make(Opcode::Halt)};
    s2.life = {life(0, 1500, 1500, 2500), life(0, 2500, 2500, 9'000'500), life(0, 9'000'500, 9'000'500, 9'001'500),
               life(0, 9'001'500, 9'001'500, 9'001'500)};
    r.streams = {s0, s1, s2};

    // mxu0: the first matmul's streaming overlaps the weight push (two lanes in the timeline)
    r.add_unit_op(3, 0, 2, Opcode::MPush, 5'005'000, 5'010'000, 5'400'000, 5'400'000);
    r.add_unit_op(3, 0, 3, Opcode::MatMul, 5'006'000, 5'300'000, 6'900'000, 6'950'000);
    r.add_unit_op(3, 0, 4, Opcode::MatMul, 5'007'000, 6'900'000, 7'900'000, 7'950'000);
    r.add_unit_op(2, 0, 5, Opcode::VStore, 8'002'000, 8'010'000, 8'090'000, 8'095'000);
    r.dmas = {
        {4, 0, 0, 1000, 10'000, 4'990'000, 4u << 20},
        {4, 0, 6, 8'101'000, 8'110'000, 11'990'000, 2u << 20},
        {9, 2, 0, 1500, 20'000, 9'000'000, 1u << 20},
    };
    r.flags = {
        {0, 1, 0, 1, 4'990'000, 0, 0},
        {0, 5, 0, 1, 9'000'000, 2, 0},
    };
    r.mems = {
        {8, 9, true, 0x2000, 512u << 10, 30'000, 4'000'000, 2, 0},
        {8, 9, true, 0x82000, 512u << 10, 4'000'000, 8'900'000, 2, 0},
        {5, 4, false, 0x100000, 4u << 20, 10'000, 4'980'000, 0, 0},  // HBM: not a link, not in the timeline
    };
    r.end = kEnd;
    r.status = 0;
    r.records = 4 + 3 + 8 + 3 + 2 + 3 + 1;
    return r;
}

Analysis analysis(const RunData& r) {
    Analysis a;
    a.end = kEnd;
    a.status = 0;
    a.records = r.records;
    a.instructions = 14;
    using C = Cause;
    // chip0 core0 meets every cause
    a.units.push_back(account(r, 0,
                              {{0, 1000, C::Supply},
                               {1000, 3000, C::Busy},
                               {3000, 5'000'000, C::Hbm},
                               {5'000'000, 5'002'000, C::SyncWait},
                               {5'002'000, 5'005'000, C::Busy},
                               {5'005'000, 6'000'000, C::DataDep},
                               {6'000'000, 7'000'000, C::UnitBusy},
                               {7'000'000, 8'001'000, C::Vmem},
                               {8'001'000, 8'102'000, C::Busy},
                               {8'102'000, 12'000'000, C::Link},
                               {12'000'000, 12'002'000, C::Busy},
                               {12'002'000, kEnd, C::Idle}}));
    a.units.push_back(account(r, 1,
                              {{0, 1000, C::Supply},
                               {1000, 3000, C::Busy},
                               {3000, 3'000'000, C::SyncWait},
                               {3'000'000, 3'002'000, C::Busy},
                               {3'002'000, kEnd, C::Idle}}));
    a.units.push_back(account(r, 2, {{0, 8'010'000, C::Supply}, {8'010'000, 8'090'000, C::Busy}, {8'090'000, kEnd, C::Idle}}));
    a.units.push_back(account(r, 3,
                              {{0, 5'010'000, C::DataDep},
                               {5'010'000, 7'900'000, C::Busy},
                               {7'900'000, 12'000'000, C::Vmem},
                               {12'000'000, kEnd, C::Idle}}));
    a.units.push_back(account(r, 4, {{0, 10'000, C::Idle}, {10'000, 4'990'000, C::Busy}, {4'990'000, 8'110'000, C::Idle},
                                     {8'110'000, 11'990'000, C::Busy}, {11'990'000, kEnd, C::Idle}}));
    a.units.push_back(account(r, 5, {{0, 10'000, C::Idle}, {10'000, 4'980'000, C::Busy}, {4'980'000, kEnd, C::Idle}}));
    a.units.push_back(account(r, 6, {{0, 5'000'000, C::Busy}, {5'000'000, kEnd, C::Idle}}));
    a.units.push_back(account(r, 7,
                              {{0, 1500, C::Supply},
                               {1500, 3500, C::Busy},
                               {3500, 9'000'000, C::Link},
                               {9'000'000, 9'002'000, C::Busy},
                               {9'002'000, kEnd, C::Idle}}));
    a.units.push_back(account(r, 8, {{0, 30'000, C::Idle}, {30'000, 8'900'000, C::Busy}, {8'900'000, kEnd, C::Idle}}));
    a.units.push_back(account(r, 9, {{0, 20'000, C::Idle}, {20'000, 9'000'000, C::Busy}, {9'000'000, kEnd, C::Idle}}));

    a.top_stalls = {
        {0, 1, 4'999'000, times({{C::Hbm, 4'997'000}, {C::SyncWait, 2000}}), "waits for flag 1, raised by the DMA #0 <b>(4.00 MiB)</b>"},
        {2, 1, 4'000'000, times({{C::Link, 4'000'000}}), "waits for flag 5 of chip1, raised over the link"},
        {0, 3, 995'000, times({{C::DataDep, 995'000}}), "data dependency on #2 " + kEvil},
    };
    for (std::size_t i = 0; i < kOps; ++i) {
        Rollup ro;
        // listed smallest first: the report must sort
        const std::size_t rank = kOps - 1 - i;  // 0 = largest
        char key[32];
        std::snprintf(key, sizeof key, "op%02zu", rank);
        ro.key = rank == 3 ? kEvil : std::string(key);
        ro.instructions = 10 + i;
        ro.time = times({{C::Busy, 100'000 * (kOps - rank)}, {C::Hbm, 50'000 * (kOps - rank)}, {C::DataDep, 1000}});
        a.by_op.push_back(ro);
    }
    a.by_layer = {{"layer0", 7, times({{C::Busy, 8000}, {C::Hbm, 4'997'000}, {C::DataDep, 995'000}}), },
                  {"layer1", 3, times({{C::Busy, 4000}, {C::Link, 8'996'500}})}};
    a.by_chip = {{"chip0", 10, times({{C::Busy, 12'000}, {C::Hbm, 4'997'000}, {C::SyncWait, 2'999'000}, {C::Vmem, 1'001'000}})},
                 {"chip1", 4, times({{C::Busy, 4000}, {C::Link, 8'996'500}, {C::Supply, 1500}})}};
    a.by_unit_kind = {{"ScalarCore", 0, a.units[0].time}, {"MatrixUnit", 0, a.units[3].time}, {"DmaEngine", 0, a.units[4].time}};
    for (const auto& u : a.units)
        if (u.kind == "ScalarCore")
            for (std::size_t c = 0; c < kCauses; ++c) a.core_total[c] += u.time[c];
    a.critical_path = {
        {"chip0.core0 #7 halt", "issued after #6 completed", C::Busy, 12'001'000, 12'001'000},
        {"xpu.chip0.dma0 transfer of #6 [" + kEvil + "]", "HBM bandwidth", C::Hbm, 8'110'000, 11'990'000},
        {"chip0.core0 #5 vst", "data dependency on #4", C::DataDep, 8'001'000, 8'100'000},
        {"chip0.core0 #4 matmul", "unit busy: xpu.chip0.core0.mxu0", C::UnitBusy, 6'900'000, 7'900'000},
    };
    a.critical_path_steps = a.critical_path.size();
    a.critical_by_cause = times({{C::Busy, 1000}, {C::Hbm, 3'880'000}, {C::DataDep, 99'000}, {C::UnitBusy, 1'000'000}});
    for (std::size_t i = 0; i < kDmaViews; ++i) {
        DmaView v;
        v.stream = 0;
        v.index = i % 2 ? 6 : 0;
        v.engine = "xpu.chip0.dma0";
        char ann[32];
        std::snprintf(ann, sizeof ann, "dma%02zu", i);
        v.annotation = ann;
        v.bytes = (i + 1) << 16;
        v.earliest_issue = 1000 * i;
        v.issue = 1000 * i + 500;
        v.start = v.issue + 2000;
        v.complete = v.start + 100'000;
        v.achieved_gbps = static_cast<double>(v.bytes) / 100'000.0 * 1e3;
        v.overlap_compute = 25'000;
        v.caused_stall = ((i * 7) % kDmaViews + 1) * 1000;  // distinct, not in order
        a.dmas.push_back(v);
    }
    auto series = [](std::string name, std::string unit, double ceiling, double hwm, double scale) {
        Series s;
        s.name = std::move(name);
        s.unit = std::move(unit);
        s.bucket = kEnd / 50;
        s.ceiling = ceiling;
        for (int i = 0; i < 50; ++i) s.values.push_back(scale * ((i * 37) % 50) / 50.0);
        s.high_water = hwm;
        return s;
    };
    a.series.push_back(series("xpu.chip0.vmem occupancy", "bytes", 16u << 20, 12u << 20, 12u << 20));
    a.series.push_back(series("xpu.chip0.hbm bandwidth", "GB/s", 1200, 0, 1100));
    a.series.push_back(series("xpu.chip0.core0.mxu0 utilisation", "%", 100, 0, 95));
    a.series.push_back(series("xpu.links.chip0_xp traffic", "GB/s", 50, 0, 45));
    // In the analysis's ranking (not verified by replay: by estimate), which the reports keep.
    auto sug = [](const char* kind, const char* cause, const char* action, std::string where, Tick est, std::vector<Move> moves) {
        Suggestion s;
        s.kind = kind;
        s.cause = cause;
        s.action = action;
        s.where = std::move(where);
        s.estimated_saving = est;
        s.moves = std::move(moves);
        return s;
    };
    a.suggestions = {
        sug("hoist_dma", "sync-flag waits at layer0/gemm/matmul on DMAs issued right before them", "issue DMA #0 earlier",
            "layer0/gemm/load_b", 3'000'000, {{0, 0, 0}, {0, 6, 2}}),
        sug("reorder", "independent instructions behind a stalled one", "move #5 before #3", kEvil, 50'000, {{0, 5, 3}}),
        sug("drop_wait", "a wait on a flag that is already set", "delete the swait <i>#1</i>", "layer0/gemm/wait", 1000, {{0, 1, Move::kDelete}}),
    };
    return a;
}

RunData long_run(std::size_t n, std::size_t run_length) {
    RunData r;
    r.dir = "out/long";
    r.units = {{"xpu.chip0.core0.scalar", "ScalarCore", Role::Core, 0, 0, 0}, {"xpu.chip0.core0.vpu", "VectorUnit", Role::Vector, 0, 0, 0}};
    r.strings = {"layer0/a", "layer0/b"};
    Stream s;
    s.chip = 0;
    s.core = 0;
    for (std::size_t i = 0; i < n; ++i) {
        s.code.push_back(make(Opcode::VAlu, static_cast<int>((i / run_length) % 2)));
        const Tick issue = (i + i / run_length) * 1000;  // 1 ns between runs
        s.life.push_back(life(issue, issue, issue, issue + 1000));
        r.add_unit_op(1, 0, i, Opcode::VAlu, issue, issue, issue + 1000, issue + 1000);
    }
    r.streams = {s};
    r.end = (n + (n - 1) / run_length) * 1000;
    r.records = 2 * n + 1;
    return r;
}

Analysis long_analysis(const RunData& r) {
    Analysis a;
    a.end = r.end;
    a.records = r.records;
    a.instructions = r.streams[0].code.size();
    UnitAccount u;
    u.unit = 0;
    u.name = r.units[0].path;
    u.kind = "ScalarCore";
    u.role = Role::Core;
    u.chip = 0;
    const Stream& s = r.streams[0];
    for (std::size_t i = 0; i < s.life.size(); ++i) {
        const Tick b = s.life[i].issue;
        if (!u.timeline.empty() && u.timeline.back().end < b) u.timeline.push_back({u.timeline.back().end, b, Cause::DataDep});
        if (!u.timeline.empty() && u.timeline.back().cause == Cause::Busy && u.timeline.back().end == b)
            u.timeline.back().end = b + 1000;
        else
            u.timeline.push_back({b, b + 1000, Cause::Busy});
    }
    for (const auto& g : u.timeline) u.time[static_cast<std::size_t>(g.cause)] += g.end - g.begin;
    a.units.push_back(u);
    a.core_total = u.time;
    return a;
}

}  // namespace xpu::analysis::sample

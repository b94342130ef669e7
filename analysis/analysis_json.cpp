#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "analysis/relower.h"
#include "analysis/report.h"
#include "analysis/verify.h"
#include "traces/json_writer.h"

namespace xpu::analysis {

namespace {

double ns(Tick t) { return static_cast<double>(t) / 1000.0; }

void causes(JsonWriter& j, const char* key, const CauseTimes& t) {
    j.begin_object(key);
    for (std::size_t c = 0; c < kCauses; ++c) j.field(cause_key(static_cast<Cause>(c)), ns(t[c]));
    j.end_object();
}

void rollups(JsonWriter& j, const char* key, const std::vector<Rollup>& v, bool layers = false) {
    j.begin_array(key);
    for (const Rollup& r : v) {
        j.begin_object();
        j.field("key", r.key);
        if (layers) j.field("layers", r.layers);
        j.field("instructions", r.instructions);
        j.field("total_ns", ns(r.total()));
        causes(j, "ns", r.time);
        j.end_object();
    }
    j.end_array();
}

}  // namespace

void write_analysis_json(std::ostream& os, const RunData& run, const Analysis& a) {
    JsonWriter j(os);
    j.begin_object();
    j.field("schema", "xpusim-analysis-1");
    j.field("end_ns", ns(a.end));
    j.field("status", std::string(a.status == 0 ? "completed" : a.status == 1 ? "deadlock" : a.status == 2 ? "time_limit" : "interrupted"));
    j.field("instructions", a.instructions);
    j.field("log_records", a.records);
    j.field("log_bytes", run.log_bytes);
    causes(j, "core_ns", a.core_total);
    j.begin_array("units");
    for (const UnitAccount& u : a.units) {
        j.begin_object();
        j.field("name", u.name);
        j.field("kind", u.kind);
        j.field("chip", static_cast<double>(u.chip));
        causes(j, "ns", u.time);
        j.end_object();
    }
    j.end_array();
    rollups(j, "by_op", a.by_op);
    rollups(j, "by_op_merged", a.by_op_merged, true);
    rollups(j, "by_layer", a.by_layer);
    rollups(j, "by_chip", a.by_chip);
    j.begin_array("top_stalls");
    for (const Stall& s : a.top_stalls) {
        j.begin_object();
        j.field("instruction", describe(run, s.stream, s.index));
        j.field("stream", run.streams[s.stream].label());
        j.field("index", s.index);
        j.field("stall_ns", ns(s.total));
        causes(j, "ns", s.by);
        j.field("why", s.why);
        j.end_object();
    }
    j.end_array();
    j.begin_object("critical_path");
    causes(j, "ns", a.critical_by_cause);
    j.field("steps_total", a.critical_path_steps);  // `steps`: the latest of them (AnalyzeOptions::path_steps_kept)
    j.begin_array("steps");
    for (const PathStep& p : a.critical_path) {
        j.begin_object();
        j.field("node", p.node);
        j.field("edge", p.edge);
        j.field("cause", cause_key(p.cause));
        j.field("begin_ns", ns(p.begin));
        j.field("end_ns", ns(p.end));
        j.end_object();
    }
    j.end_array();
    j.end_object();
    j.begin_array("dmas");
    for (const DmaView& d : a.dmas) {
        j.begin_object();
        j.field("instruction", describe(run, d.stream, d.index));
        j.field("engine", d.engine);
        j.field("annotation", d.annotation);
        j.field("bytes", d.bytes);
        j.field("earliest_issue_ns", ns(d.earliest_issue));
        j.field("issue_ns", ns(d.issue));
        j.field("start_ns", ns(d.start));
        j.field("complete_ns", ns(d.complete));
        j.field("achieved_gbps", d.achieved_gbps);
        j.field("overlap_compute_ns", ns(d.overlap_compute));
        j.field("caused_stall_ns", ns(d.caused_stall));
        j.end_object();
    }
    j.end_array();
    j.begin_array("series");
    for (const Series& s : a.series) {
        j.begin_object();
        j.field("name", s.name);
        j.field("unit", s.unit);
        j.field("bucket_ns", ns(s.bucket));
        j.field("ceiling", s.ceiling);
        j.field("high_water", s.high_water);
        j.begin_array("values");
        for (double v : s.values) j.field(nullptr, v);
        j.end_array();
        j.end_object();
    }
    j.end_array();
    // The run's lower bounds: no suggestion can save more than the headroom.
    j.begin_object("bounds");
    j.field("lower_bound_ns", ns(a.bounds.lower));
    j.field("headroom_ns", ns(a.bounds.headroom));
    j.begin_array("resources");
    for (const Bound& b : a.bounds.bounds) {
        j.begin_object();
        j.field("name", b.name);
        j.field("where", b.where);
        j.field("time_ns", ns(b.time));
        j.end_object();
    }
    j.end_array();
    j.end_object();
    j.field("suggestions_verified", a.verified);
    if (!a.together.ranks.empty()) {  // the verified suggestions that compose, replayed together
        j.begin_object("verified_together");
        j.field("apply", ranks_text(a.together.ranks));
        if (a.together.measured) j.field("measured_saving_ns", static_cast<double>(a.together.measured_saving) / 1000.0);
        else j.null_field("measured_saving_ns");
        j.end_object();
    }
    if (!a.verify_note.empty()) j.field("verification", a.verify_note);
    j.begin_array("sensitivity");  // empty unless measured (--sensitivity)
    for (const SensitivityLine& l : a.sensitivity) {
        j.begin_object();
        j.field("key", l.key);
        j.field("resource", l.resource);
        j.field("factor", l.factor);
        if (l.measured) {
            j.field("simulated_time_ns", l.simulated_time_ns);
            j.field("speedup", l.speedup);
        } else {
            j.null_field("simulated_time_ns");
            j.null_field("speedup");
            j.field("error", l.error);
        }
        j.begin_array("sets");
        for (const auto& set : l.sets) j.value(set);
        j.end_array();
        j.end_object();
    }
    j.end_array();
    j.begin_array("suggestions");
    int rank = 0;
    for (const Suggestion& s : a.suggestions) {
        j.begin_object();
        j.field("rank", static_cast<std::uint64_t>(++rank));
        j.field("kind", s.kind);
        j.field("where", s.where);
        j.field("finding", s.cause);
        j.begin_array("ops");  // every op it applies at (where rolls them up across layers)
        for (const std::string& o : s.ops) j.value(o);
        j.end_array();
        j.begin_array("dma_ops");  // every op of the DMAs the finding names
        for (const std::string& o : s.dma_ops) j.value(o);
        j.end_array();
        j.field("action", s.action);
        j.field("estimated_saving_ns", ns(s.estimated_saving));
        j.field("estimate_capped", s.estimate_capped);  // the finder's figure was above the headroom: this is the headroom
        if (s.measured) j.field("measured_saving_ns", static_cast<double>(s.measured_saving) / 1000.0);
        else j.null_field("measured_saving_ns");
        j.field("status", verdict_key(s.verdict));
        if (!s.verdict_note.empty()) j.field("status_note", s.verdict_note);
        j.field("candidate", static_cast<std::uint64_t>(s.candidate));
        j.field("variant", s.variant);  // another form of a suggestion listed beside it (replayed in places left over)
        j.field("moves", static_cast<std::uint64_t>(s.moves.size() + s.edits.size()));  // instructions changed
        // collective_algorithm's other lowering: the command that writes the trace replayed and
        // applied instead of a patch (moves 0). It moves the bytes over other links, so this run's
        // bounds do not cap what it measures (analysis/relower.h).
        if (s.relowering) j.field("relowering", s.relowering->command);
        j.end_object();
    }
    j.end_array();
    j.end_object();
}

void write_analysis_json_file(const std::string& path, const RunData& run, const Analysis& a) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary);
        if (!f) throw std::runtime_error(path + ": cannot create");
        write_analysis_json(f, run, a);
        f.flush();
        if (!f) {
            std::remove(tmp.c_str());
            throw std::runtime_error(path + ": cannot write (disk full?)");
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + ec.message());
    }
}

}  // namespace xpu::analysis

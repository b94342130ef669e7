// Progress of long work on stderr: "LABEL: WHAT (P%), E s, ETA R s", only when the work is long.
//
// Nothing is printed during the first `first_after` seconds (a short run's stderr stays empty:
// it is for errors), then at most every `every` seconds. The ETA is linear in the fraction done
// (elapsed x (1 - f) / f): an estimate, as exact as the fraction is proportional to the time
// left. Used by sim_main (the simulation: instructions retired of the trace's) and by the
// analysis (each phase: the log's bytes read, the analysis's steps, the files written).
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>

namespace xpu {

class ProgressLine {
public:
    ProgressLine(std::ostream* os, std::string label, double first_after = default_seconds(), double every = default_seconds())
        : os_(os), label_(std::move(label)), first_after_(first_after), every_(every), t0_(Clock::now()) {}

    // 2 s; the environment's XPU_PROGRESS_SECONDS if set (the tests set 0: every update printed).
    static double default_seconds() {
        const char* e = std::getenv("XPU_PROGRESS_SECONDS");
        return e && *e ? std::atof(e) : 2.0;
    }

    // `fraction` of the work is done (0..1); `what` says of what ("12 of 40 instructions retired").
    void update(double fraction, const std::string& what) {
        if (!os_) return;
        const auto now = Clock::now();
        const double el = std::chrono::duration<double>(now - t0_).count();
        if (el < first_after_ || (printed_ && std::chrono::duration<double>(now - last_).count() < every_)) return;
        last_ = now;
        printed_ = true;
        if (fraction < 0) fraction = 0;
        if (fraction > 1) fraction = 1;
        char tail[96];
        if (fraction > 0)
            std::snprintf(tail, sizeof tail, " (%.0f%%), %.1f s, ETA %.1f s", 100.0 * fraction, el, el * (1 - fraction) / fraction);
        else
            std::snprintf(tail, sizeof tail, " (0%%), %.1f s", el);
        *os_ << label_ << ": " << what << tail << "\n" << std::flush;
    }
    bool printed() const { return printed_; }
    double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

private:
    using Clock = std::chrono::steady_clock;
    std::ostream* os_;
    std::string label_;
    double first_after_, every_;
    Clock::time_point t0_, last_;
    bool printed_ = false;
};

}  // namespace xpu

// Conversions between xpusim's integer picosecond Ticks and SystemC time.
// The models keep their own clocks in Ticks (cheap integer math on the hot path) and touch
// sc_time only to synchronise with the kernel. This needs the kernel's time resolution to be
// 1 ps, SystemC's default; check_time_resolution() says so loudly if someone changed it.
#pragma once

#include <systemc>

#include "traces/instruction.h"

namespace xpu {

inline sc_core::sc_time to_sc(Tick t) { return sc_core::sc_time::from_value(t); }
// The kernel's time: what sc_time_stamp() returns, read inline (sc_time_stamp() is a call into
// the SystemC library; the models ask it a few times per instruction and per DMA chunk).
inline Tick now_ticks() { return sc_core::sc_get_curr_simcontext()->time_stamp().value(); }
// Time from now until t (0 if t is in the past).
inline sc_core::sc_time until(Tick t) {
    Tick n = now_ticks();
    return t > n ? to_sc(t - n) : sc_core::SC_ZERO_TIME;
}
inline Tick ns_to_ticks(double ns) { return static_cast<Tick>(ns * 1000.0 + 0.5); }
inline double ticks_to_ns(Tick t) { return static_cast<double>(t) / 1000.0; }
// Cycle time in ps of a clock in GHz, rounded to the nearest ps.
inline Tick cycle_ticks(double clock_ghz) { return static_cast<Tick>(1000.0 / clock_ghz + 0.5); }
// Time to move `bytes` at `gbps` GB/s (= bytes per ns), rounded up so that a model can never
// exceed its configured bandwidth.
inline Tick transfer_ticks(std::uint64_t bytes, double gbps) {
    double ps = static_cast<double>(bytes) * 1000.0 / gbps;
    Tick t = static_cast<Tick>(ps);
    return static_cast<double>(t) < ps ? t + 1 : t;
}
inline Tick max_tick(Tick a, Tick b) { return a > b ? a : b; }

// Throws std::logic_error if the SystemC time resolution is not 1 ps.
void check_time_resolution();

}  // namespace xpu

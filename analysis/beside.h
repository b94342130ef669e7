// beside(fn): runs fn on a thread of its own if one can be started, else when its result is
// asked for (get() or wait()): the same work either way, so a host out of threads still gets an
// answer. The analysis' helper threads (analyze.cpp, the finders, the writers) start this way.
#pragma once

#include <future>
#include <system_error>

namespace xpu::analysis {

template <class F>
auto beside(F fn) {
    try {
        return std::async(std::launch::async, fn);
    } catch (const std::system_error&) {
        return std::async(std::launch::deferred, fn);
    }
}

}  // namespace xpu::analysis

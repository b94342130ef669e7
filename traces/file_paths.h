// Whether two paths name one file, or a path lies inside a folder, after resolving symbolic
// links and `..`: the checks every tool makes before it writes an output, so that an output
// never overwrites one of its inputs (a trace assembled onto its own text, a generated trace
// onto the ONNX model it reads, a patched trace onto the run's trace copy).
#pragma once

#include <string>

namespace xpu {

// True if `a` and `b` name the same existing file (hard links included), or resolve to the
// same path (for a file that does not exist yet).
bool same_file(const std::string& a, const std::string& b);

// True if `inner` lies inside folder `outer` (or is `outer` itself).
bool lies_inside(const std::string& inner, const std::string& outer);

}  // namespace xpu

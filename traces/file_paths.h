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

// The path of `inner` relative to folder `outer`, both resolved as lies_inside resolves them
// (for an `inner` that lies inside `outer`: "" for `outer` itself).
std::string relative_inside(const std::string& inner, const std::string& outer);

// Where an output named `path` is to be written: `path` itself, or, for a symbolic link, the
// file the link leads to. Every writer finishes a temp file and renames it over the name, which
// over a link would replace the link rather than write its file, and over a device (/dev/null)
// would replace the device with a regular file. Throws std::runtime_error naming the path when
// it (or the link's end) exists and is not a regular file: a folder, a device, a FIFO, a socket.
std::string output_target(const std::string& path);

}  // namespace xpu

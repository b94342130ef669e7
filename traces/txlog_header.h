// The text header of the transaction log (format in txlog_format.h): "key value" lines and one
// "unit" line per module of the platform. The simulator writes it (platform/txlog_meta.cpp), the
// analysis reads it back (analysis/run_data.cpp): one definition here serves both.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/module_role.h"

namespace xpu::txlog {

// A module of the platform as the log header records it.
struct Unit {
    std::string path;   // SystemC hierarchy name, e.g. xpu.chip0.core0.mxu0
    std::string kind;   // its type, for display: ScalarCore, VectorUnit, MatrixUnit, DmaEngine, HbmController...
    Role role = Role::Other;  // what it is on the chip: what the analysis asks (never the type name)
    int chip = -1;      // -1: not on a chip (links between chips)
    double peak_gbps = 0;          // HbmController, IciLink, DmaEngine: the bandwidth ceiling
    std::uint64_t capacity = 0;    // Vmem: bytes
};

struct Header {
    std::map<std::string, std::string> meta;  // "key value" lines
    std::vector<Unit> units;                  // "unit" lines, in order
};

std::string format_header(const Header& h);

// Parses the header text; on a malformed line returns false and sets `error` to
// "header line N: expected ...".
bool parse_header(const std::string& text, Header& out, std::string& error);

}  // namespace xpu::txlog

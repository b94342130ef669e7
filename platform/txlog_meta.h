// The header of the transaction log: the platform facts the analysis needs without SystemC
// (each module's path, kind, chip, bandwidth ceiling or capacity; each core's issue slot; each
// HBM controller's interleave rule).
#pragma once

#include <string>

#include "platform/builder.h"
#include "traces/txlog_header.h"

namespace xpu {

txlog::Header txlog_header(const platform::Platform& p, const std::string& trace_file, const std::string& platform_file);
// The same, as the header's text.
std::string txlog_meta(const platform::Platform& p, const std::string& trace_file, const std::string& platform_file);

}  // namespace xpu

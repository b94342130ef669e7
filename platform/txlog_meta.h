// The header of the transaction log: the platform facts the analysis needs without SystemC
// (each module's path, kind, chip, bandwidth ceiling or capacity; each core's issue slot).
#pragma once

#include <string>

#include "platform/builder.h"

namespace xpu {

std::string txlog_meta(const platform::Platform& p, const std::string& trace_file, const std::string& platform_file);

}  // namespace xpu

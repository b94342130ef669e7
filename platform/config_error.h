// Errors in a platform description. The message always starts with where (file:line:column,
// or the --set argument that introduced the value) and the key path, then what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace xpu::platform {

struct ConfigError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace xpu::platform

// Reading an ONNX node's attributes, shared by the front end (onnx_frontend.cpp) and the tensor-
// parallel split (sharding.cpp). Internal to traces/onnx/: it includes libonnx's protobuf types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace xpu::onnxfe {

// The attribute `name` of node n, or nullptr.
inline const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}
inline std::int64_t attr_int(const onnx::NodeProto& n, const std::string& name, std::int64_t dflt) {
    const auto* a = attr(n, name);
    return a ? a->i() : dflt;
}
inline std::vector<std::int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name) {
    const auto* a = attr(n, name);
    return a ? std::vector<std::int64_t>(a->ints().begin(), a->ints().end()) : std::vector<std::int64_t>{};
}
// A possibly negative axis (counted from the end, as ONNX allows) as an index into `rank` dims.
inline std::int64_t norm_axis(std::int64_t a, std::size_t rank) { return a < 0 ? a + static_cast<std::int64_t>(rank) : a; }

}  // namespace xpu::onnxfe

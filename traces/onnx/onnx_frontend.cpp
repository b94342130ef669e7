#include "traces/onnx/onnx_frontend.h"
#include "traces/onnx/onnx_attrs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "traces/gen/collective.h"
#include "traces/onnx/sharding.h"

namespace xpu::onnxfe {

namespace {

using Dims = std::vector<std::int64_t>;

std::uint64_t product(const Dims& d) {
    std::uint64_t n = 1;
    for (auto x : d) n *= static_cast<std::uint64_t>(std::max<std::int64_t>(x, 0));
    return n;
}

std::string dims_text(const Dims& d) {
    std::string s = "[";
    for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
    return s + "]";
}

// ---------------------------------------------------------------------------------------------
// Compile-time evaluation of the small integer tensors that compute shapes (Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape, the pattern exporters emit for dynamic dims). ONNX's own
// data propagation stops at some of these ops (Div, Where, ...); folding them into initializers
// lets shape inference see every Reshape's target.

struct Const {
    Dims dims;
    std::vector<double> v;  // values (int64 shape arithmetic is exact in a double up to 2^53)
    int type = onnx::TensorProto::INT64;
};
constexpr std::uint64_t kMaxFold = 4096;  // larger tensors are data, not shape arithmetic

bool is_int_type(int t) {
    return t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32 || t == onnx::TensorProto::BOOL ||
           t == onnx::TensorProto::INT8 || t == onnx::TensorProto::UINT8 || t == onnx::TensorProto::INT16;
}

bool read_tensor(const onnx::TensorProto& t, Const& c) {
    c.dims.assign(t.dims().begin(), t.dims().end());
    c.type = t.data_type();
    const std::uint64_t n = product(c.dims);
    if (n > kMaxFold || t.data_location() == onnx::TensorProto::EXTERNAL) return false;
    c.v.clear();
    const std::string& raw = t.raw_data();
    auto from_raw = [&](auto zero) {
        using T = decltype(zero);
        if (raw.size() != n * sizeof(T)) return false;
        for (std::uint64_t i = 0; i < n; ++i) {
            T x;
            std::memcpy(&x, raw.data() + i * sizeof(T), sizeof(T));
            c.v.push_back(static_cast<double>(x));
        }
        return true;
    };
    switch (t.data_type()) {
        case onnx::TensorProto::INT64:
            if (!raw.empty()) return from_raw(std::int64_t{});
            for (auto x : t.int64_data()) c.v.push_back(static_cast<double>(x));
            break;
        case onnx::TensorProto::INT32:
        case onnx::TensorProto::BOOL:
        case onnx::TensorProto::INT8:
        case onnx::TensorProto::UINT8:
            if (!raw.empty()) {
                if (t.data_type() == onnx::TensorProto::INT32) return from_raw(std::int32_t{});
                if (t.data_type() == onnx::TensorProto::INT8) return from_raw(std::int8_t{});
                return from_raw(std::uint8_t{});
            }
            for (auto x : t.int32_data()) c.v.push_back(x);
            break;
        case onnx::TensorProto::FLOAT:
            if (!raw.empty()) return from_raw(float{});
            for (auto x : t.float_data()) c.v.push_back(x);
            break;
        case onnx::TensorProto::DOUBLE:
            if (!raw.empty()) return from_raw(double{});
            for (auto x : t.double_data()) c.v.push_back(x);
            break;
        default:
            return false;
    }
    return c.v.size() == n;
}

onnx::TensorProto to_tensor(const std::string& name, const Const& c) {
    onnx::TensorProto t;
    t.set_name(name);
    for (auto d : c.dims) t.add_dims(d);
    t.set_data_type(c.type);
    switch (c.type) {
        case onnx::TensorProto::INT64:
            for (double x : c.v) t.add_int64_data(static_cast<std::int64_t>(x));
            break;
        case onnx::TensorProto::DOUBLE:
            for (double x : c.v) t.add_double_data(x);
            break;
        case onnx::TensorProto::FLOAT:
            for (double x : c.v) t.add_float_data(static_cast<float>(x));
            break;
        default:  // INT32, BOOL, INT8, UINT8 live in int32_data
            for (double x : c.v) t.add_int32_data(static_cast<std::int32_t>(x));
    }
    return t;
}

// Numpy broadcasting of two shapes; false if they do not broadcast.
bool broadcast(const Dims& a, const Dims& b, Dims& out) {
    const std::size_t r = std::max(a.size(), b.size());
    out.assign(r, 1);
    for (std::size_t i = 0; i < r; ++i) {
        const std::int64_t x = i < r - a.size() ? 1 : a[i - (r - a.size())];
        const std::int64_t y = i < r - b.size() ? 1 : b[i - (r - b.size())];
        if (x != y && x != 1 && y != 1) return false;
        out[i] = x == 1 ? y : x;
    }
    return true;
}

// The flat index into `d` (broadcast to `out`) of the out-index `flat`.
std::uint64_t bcast_index(const Dims& d, const Dims& out, std::uint64_t flat) {
    std::uint64_t idx = 0, stride = 1;
    for (std::size_t i = out.size(); i-- > 0;) {
        const std::uint64_t coord = flat % static_cast<std::uint64_t>(out[i]);
        flat /= static_cast<std::uint64_t>(out[i]);
        const std::size_t off = out.size() - d.size();
        if (i >= off) {
            const std::uint64_t n = static_cast<std::uint64_t>(d[i - off]);
            idx += (n == 1 ? 0 : coord) * stride;
            stride *= n;
        }
    }
    return idx;
}


// Evaluates one node on constant inputs; false if it cannot (then it stays a runtime node).
bool fold(const onnx::NodeProto& n, const std::vector<const Const*>& in, const std::function<const Dims*(const std::string&)>& shape_of,
          std::vector<Const>& out) {
    const std::string& op = n.op_type();
    auto all_in = [&](std::size_t k) {
        if (in.size() < k) return false;
        for (std::size_t i = 0; i < k; ++i)
            if (!in[i]) return false;
        return true;
    };
    Const r;
    if (op == "Constant") {
        if (const auto* a = attr(n, "value")) {
            if (!read_tensor(a->t(), r)) return false;
        } else if (const auto* a = attr(n, "value_int")) {
            r.v = {static_cast<double>(a->i())};
        } else if (const auto* a = attr(n, "value_ints")) {
            r.dims = {a->ints_size()};
            for (auto x : a->ints()) r.v.push_back(static_cast<double>(x));
        } else if (const auto* a = attr(n, "value_float")) {
            r.type = onnx::TensorProto::FLOAT;
            r.v = {a->f()};
        } else {
            return false;
        }
    } else if (op == "Shape") {
        const Dims* d = n.input_size() ? shape_of(n.input(0)) : nullptr;
        if (!d) return false;
        std::int64_t rank = static_cast<std::int64_t>(d->size());
        std::int64_t s = attr_int(n, "start", 0), e = attr_int(n, "end", rank);
        if (s < 0) s += rank;
        if (e < 0) e += rank;
        s = std::clamp<std::int64_t>(s, 0, rank);
        e = std::clamp<std::int64_t>(e, s, rank);
        for (std::int64_t i = s; i < e; ++i) r.v.push_back(static_cast<double>((*d)[i]));
        r.dims = {e - s};
    } else if (op == "Identity") {
        if (!all_in(1)) return false;
        r = *in[0];
    } else if (op == "Cast") {
        if (!all_in(1)) return false;
        r = *in[0];
        r.type = static_cast<int>(attr_int(n, "to", onnx::TensorProto::INT64));
        if (is_int_type(r.type))
            for (double& x : r.v) x = std::trunc(x);
    } else if (op == "Gather") {
        if (!all_in(2) || in[0]->dims.size() != 1) return false;
        const auto& data = *in[0];
        r.type = data.type;
        r.dims = in[1]->dims;
        for (double ix : in[1]->v) {
            auto i = static_cast<std::int64_t>(ix);
            if (i < 0) i += static_cast<std::int64_t>(data.v.size());
            if (i < 0 || i >= static_cast<std::int64_t>(data.v.size())) return false;
            r.v.push_back(data.v[static_cast<std::size_t>(i)]);
        }
    } else if (op == "Unsqueeze" || op == "Squeeze") {
        if (!all_in(1)) return false;
        r = *in[0];
        Dims axes = in.size() > 1 && in[1] ? Dims(in[1]->v.begin(), in[1]->v.end()) : attr_ints(n, "axes");
        if (op == "Unsqueeze") {
            const std::size_t rank = r.dims.size() + axes.size();
            for (auto& a : axes) a = norm_axis(a, rank);
            std::sort(axes.begin(), axes.end());
            for (auto a : axes) r.dims.insert(r.dims.begin() + std::min<std::int64_t>(a, static_cast<std::int64_t>(r.dims.size())), 1);
        } else {
            Dims d;
            for (std::size_t i = 0; i < r.dims.size(); ++i) {
                const bool drop = axes.empty() ? r.dims[i] == 1
                                               : std::any_of(axes.begin(), axes.end(), [&](std::int64_t a) {
                                                     return norm_axis(a, r.dims.size()) == static_cast<std::int64_t>(i);
                                                 });
                if (!drop) d.push_back(r.dims[i]);
            }
            r.dims = d;
        }
    } else if (op == "Concat") {
        if (!all_in(in.size()) || in.empty()) return false;
        r.type = in[0]->type;
        std::int64_t len = 0;
        for (const Const* c : in) {
            if (c->dims.size() > 1) return false;
            r.v.insert(r.v.end(), c->v.begin(), c->v.end());
            len += static_cast<std::int64_t>(c->v.size());
        }
        r.dims = {len};
    } else if (op == "Slice") {
        if (!all_in(3) || in[0]->dims.size() != 1) return false;
        const auto n0 = static_cast<std::int64_t>(in[0]->v.size());
        std::int64_t s = static_cast<std::int64_t>(in[1]->v.at(0)), e = static_cast<std::int64_t>(in[2]->v.at(0));
        std::int64_t step = in.size() > 4 && in[4] ? static_cast<std::int64_t>(in[4]->v.at(0)) : 1;
        if (step != 1) return false;
        if (s < 0) s += n0;
        if (e < 0) e += n0;
        s = std::clamp<std::int64_t>(s, 0, n0);
        e = std::clamp<std::int64_t>(e, s, n0);
        r.type = in[0]->type;
        r.v.assign(in[0]->v.begin() + s, in[0]->v.begin() + e);
        r.dims = {e - s};
    } else if (op == "ConstantOfShape") {
        if (!all_in(1)) return false;
        r.dims.assign(in[0]->v.begin(), in[0]->v.end());
        if (product(r.dims) > kMaxFold) return false;
        double value = 0;
        r.type = onnx::TensorProto::FLOAT;
        if (const auto* a = attr(n, "value")) {
            Const c;
            if (!read_tensor(a->t(), c) || c.v.empty()) return false;
            value = c.v[0];
            r.type = c.type;
        }
        r.v.assign(product(r.dims), value);
    } else if (op == "Reshape") {
        if (!all_in(2)) return false;
        r = *in[0];
        Dims d(in[1]->v.begin(), in[1]->v.end());
        std::int64_t known = 1, infer = -1;
        for (std::size_t i = 0; i < d.size(); ++i) {
            if (d[i] == 0 && i < in[0]->dims.size()) d[i] = in[0]->dims[i];
            if (d[i] == -1) infer = static_cast<std::int64_t>(i);
            else known *= d[i];
        }
        if (infer >= 0) d[static_cast<std::size_t>(infer)] = known ? static_cast<std::int64_t>(r.v.size()) / known : 0;
        r.dims = d;
    } else if (op == "Expand") {
        if (!all_in(2)) return false;
        Dims target(in[1]->v.begin(), in[1]->v.end());
        if (!broadcast(in[0]->dims, target, r.dims) || product(r.dims) > kMaxFold) return false;
        r.type = in[0]->type;
        for (std::uint64_t i = 0; i < product(r.dims); ++i) r.v.push_back(in[0]->v[bcast_index(in[0]->dims, r.dims, i)]);
    } else if (op == "Range") {
        if (!all_in(3)) return false;
        r.type = in[0]->type;
        for (double x = in[0]->v.at(0); in[2]->v.at(0) > 0 ? x < in[1]->v.at(0) : x > in[1]->v.at(0); x += in[2]->v.at(0)) {
            r.v.push_back(x);
            if (r.v.size() > kMaxFold) return false;
        }
        r.dims = {static_cast<std::int64_t>(r.v.size())};
    } else if (op == "Neg" || op == "Sqrt" || op == "Floor" || op == "Ceil" || op == "Abs" || op == "Not") {
        if (!all_in(1)) return false;
        r = *in[0];
        for (double& x : r.v)
            x = op == "Neg" ? -x : op == "Sqrt" ? std::sqrt(x) : op == "Floor" ? std::floor(x) : op == "Ceil" ? std::ceil(x)
                : op == "Abs" ? std::fabs(x) : double(x == 0);
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Equal" || op == "Less" ||
               op == "Greater" || op == "Max" || op == "Min" || op == "Pow" || op == "Mod" || op == "And" || op == "Or" ||
               op == "Where") {
        const std::size_t k = op == "Where" ? 3 : 2;
        if (!all_in(k)) return false;
        Dims d = in[0]->dims;
        for (std::size_t i = 1; i < k; ++i)
            if (!broadcast(Dims(d), in[i]->dims, d)) return false;
        r.dims = d;
        const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "And" || op == "Or";
        r.type = compare ? onnx::TensorProto::BOOL : op == "Where" ? in[1]->type : in[0]->type;
        const bool integer = is_int_type(r.type);
        for (std::uint64_t i = 0; i < product(d); ++i) {
            const double a = in[0]->v[bcast_index(in[0]->dims, d, i)], b = in[1]->v[bcast_index(in[1]->dims, d, i)];
            double x = 0;
            if (op == "Add") x = a + b;
            else if (op == "Sub") x = a - b;
            else if (op == "Mul") x = a * b;
            else if (op == "Div") {
                if (b == 0) return false;
                x = integer ? std::trunc(a / b) : a / b;
            } else if (op == "Equal") x = a == b;
            else if (op == "Less") x = a < b;
            else if (op == "Greater") x = a > b;
            else if (op == "Max") x = std::max(a, b);
            else if (op == "Min") x = std::min(a, b);
            else if (op == "Pow") x = std::pow(a, b);
            else if (op == "Mod") {
                if (b == 0) return false;
                x = std::fmod(a, b);
            } else if (op == "And") x = a != 0 && b != 0;
            else if (op == "Or") x = a != 0 || b != 0;
            else x = a != 0 ? b : in[2]->v[bcast_index(in[2]->dims, d, i)];  // Where
            r.v.push_back(x);
        }
    } else {
        return false;
    }
    if (r.v.size() != product(r.dims)) return false;
    out = {r};
    return n.output_size() == 1;
}

// ---------------------------------------------------------------------------------------------

struct Tensor {
    Dims dims;
    bool known = false;
    bool compile_time = false;  // a weight, a constant, or computed from them only
    std::uint64_t addr = 0;
    bool placed = false;
};

enum class How { Mxu, Vector, Dma, Free, Folded, CompileTime, Skipped };
const char* how_name(How h) {
    switch (h) {
        case How::Mxu: return "mxu";
        case How::Vector: return "vector";
        case How::Dma: return "dma";
        case How::Free: return "free";
        case How::Folded: return "folded";
        case How::CompileTime: return "compile-time";
        case How::Skipped: return "skipped";
    }
    return "?";
}

using Ops = std::vector<Opcode>;
const std::map<std::string, Ops>& unary_ops() {
    static const std::map<std::string, Ops> m = {
        {"Relu", {Opcode::VAlu}}, {"LeakyRelu", {Opcode::VAlu}}, {"Clip", {Opcode::VAlu}}, {"Neg", {Opcode::VAlu}},
        {"Abs", {Opcode::VAlu}}, {"Cast", {Opcode::VAlu}}, {"Not", {Opcode::VAlu}},
        {"Sigmoid", {Opcode::VTrans, Opcode::VAlu}}, {"HardSigmoid", {Opcode::VAlu, Opcode::VAlu}},
        {"HardSwish", {Opcode::VAlu, Opcode::VAlu, Opcode::VAlu}}, {"Tanh", {Opcode::VTrans}}, {"Erf", {Opcode::VTrans}},
        {"Exp", {Opcode::VTrans}}, {"Log", {Opcode::VTrans}}, {"Sqrt", {Opcode::VTrans}}, {"Reciprocal", {Opcode::VTrans}},
        // Gelu: x * 0.5 * (1 + erf(x / sqrt 2))
        {"Gelu", {Opcode::VAlu, Opcode::VTrans, Opcode::VAlu, Opcode::VAlu}},
        {"Softmax", {Opcode::VReduce, Opcode::VAlu, Opcode::VTrans, Opcode::VReduce, Opcode::VAlu}},
        // (x - mean) / sqrt(var + eps) * scale + bias: two reductions, one rsqrt
        {"LayerNormalization", {Opcode::VReduce, Opcode::VAlu, Opcode::VReduce, Opcode::VTrans, Opcode::VAlu, Opcode::VAlu}},
        {"BatchNormalization", {Opcode::VAlu, Opcode::VAlu}},  // not after a Conv: scale and shift
    };
    return m;
}
const std::map<std::string, Ops>& binary_ops() {
    static const std::map<std::string, Ops> m = {
        {"Add", {Opcode::VAlu}}, {"Sub", {Opcode::VAlu}}, {"Mul", {Opcode::VAlu}}, {"Div", {Opcode::VAlu, Opcode::VTrans}},
        {"Pow", {Opcode::VTrans, Opcode::VAlu}}, {"Max", {Opcode::VAlu}}, {"Min", {Opcode::VAlu}},
        {"Equal", {Opcode::VAlu}}, {"Less", {Opcode::VAlu}}, {"Greater", {Opcode::VAlu}}, {"Where", {Opcode::VAlu}},
        {"And", {Opcode::VAlu}}, {"Or", {Opcode::VAlu}}, {"PRelu", {Opcode::VAlu}},
    };
    return m;
}
const std::set<std::string>& view_ops() {
    static const std::set<std::string> s = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"};
    return s;
}
const std::set<std::string>& copy_ops() {
    static const std::set<std::string> s = {"Concat", "Split", "Slice", "Gather", "Expand", "Pad", "Tile"};
    return s;
}
const std::set<std::string>& reduce_ops() {
    static const std::set<std::string> s = {"GlobalAveragePool", "GlobalMaxPool", "ReduceMean", "ReduceSum", "ReduceMax",
                                            "ReduceMin"};
    return s;
}
const std::set<std::string>& other_ops() {
    static const std::set<std::string> s = {"Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "Transpose",
                                            "Shape", "Constant", "ConstantOfShape", "Range"};
    return s;
}

}  // namespace

std::vector<std::string> supported_ops() {
    std::set<std::string> s = other_ops();
    for (const auto& kv : unary_ops()) s.insert(kv.first);
    for (const auto& kv : binary_ops()) s.insert(kv.first);
    s.insert(view_ops().begin(), view_ops().end());
    s.insert(copy_ops().begin(), copy_ops().end());
    s.insert(reduce_ops().begin(), reduce_ops().end());
    return {s.begin(), s.end()};
}

namespace {

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

class Frontend {
public:
    explicit Frontend(const OnnxParams& p) : p_(p) {}

    void load() {
        std::ifstream f(p_.path, std::ios::binary);
        if (!f) throw OnnxError(p_.path + ": cannot open");
        std::stringstream ss;
        ss << f.rdbuf();
        if (!model_.ParseFromString(ss.str()) || !model_.has_graph())
            throw OnnxError(p_.path + ": not an ONNX model (expected a ModelProto protobuf with a graph)");
        onnx::GraphProto& g = *model_.mutable_graph();
        for (const auto& t : g.initializer()) initializers_.insert(t.name());
        // The data inputs: graph inputs that are not initializers and have a symbolic dim (the
        // batch or sequence); weights exported as inputs (shape-only models) have none. A
        // model with no symbolic dim at all takes every non-initializer input as data.
        bool any_symbolic = false;
        for (const auto& in : g.input())
            for (const auto& d : in.type().tensor_type().shape().dim())
                if (!d.has_dim_value()) any_symbolic = true;
        for (auto& in : *g.mutable_input()) {
            if (initializers_.count(in.name())) continue;
            bool data = !any_symbolic;
            auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
            for (int i = 0; i < shape->dim_size(); ++i) {
                auto* d = shape->mutable_dim(i);
                if (d->has_dim_value()) continue;
                data = true;
                std::string name = d->dim_param();
                std::string low = name;
                std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
                if (low.find("batch") != std::string::npos || low == "n" || low == "b") {
                    d->set_dim_value(static_cast<std::int64_t>(p_.batch));
                    batch_used_ = true;
                } else if (low.find("seq") != std::string::npos || low.find("len") != std::string::npos ||
                           low == "s" || low == "t") {
                    if (!p_.seq)
                        throw OnnxError(p_.path + ": input '" + in.name() + "' dim " + std::to_string(i) + " is the symbolic '" +
                                        name + "': give its length with --seq S");
                    d->set_dim_value(static_cast<std::int64_t>(p_.seq));
                } else {
                    throw OnnxError(p_.path + ": input '" + in.name() + "' dim " + std::to_string(i) + " is the symbolic '" +
                                    name + "': expected a fixed size, or a dim named like 'batch' (--batch) or 'seq' (--seq)");
                }
            }
            if (data) data_inputs_.insert(in.name());
            else weight_inputs_.insert(in.name());
        }
        if (p_.batch != 1 && !batch_used_)
            throw OnnxError(p_.path + ": --batch " + std::to_string(p_.batch) +
                            " given, but no input has a symbolic batch dim (its batch is fixed in the model)");
        check_ops();
        infer();
    }

    OnnxSummary emit(trace::TraceWriter& w) {
        plan();
        eb_ = dtype_bytes(p_.tiles.dtype);
        const auto& g = model_.graph();
        if (p_.tp > 1) plan_tp();
        OnnxSummary sum;
        gen::RingInfo ring;
        ring.chips = p_.tp;
        for (unsigned chip = 0; chip < p_.tp; ++chip) {
            chip_ = chip;
            gen::Emitter e(w, w.add_stream(static_cast<std::uint16_t>(chip), 0));
            gen::Lowering lo(e, p_.tiles);
            for (int i = 0; i < g.node_size(); ++i) {
                const auto& n = g.node(i);
                const Sharding* sh = shard_.empty() ? nullptr : &shard_[static_cast<std::size_t>(i)];
                const std::string ann = p_.prefix + "/" + node_name(n, i);
                if (sh)
                    for (const auto& [t, a] : sh->gather) gen::emit_all_gather(lo, ring, chip, addr(t), padded_bytes(t, a), ann + "/all_gather");
                set_view(n, sh);
                if (sh && sh->halo) exchange_halo(lo, n, ann);
                NodeReport r = lower(lo, n, i);
                view_.clear();
                pad_top_.reset();
                if (sh && sh->all_reduce)
                    for (const auto& y : n.output()) gen::emit_all_reduce(lo, ring, chip, addr(y), padded_bytes(y, -1), ann + "/all_reduce");
                if (chip == 0) {
                    if (r.how == "skipped") ++sum.skipped[r.op];
                    if (sh) {
                        r.split = sh->rule;
                        r.all_gathers = static_cast<unsigned>(sh->gather.size());
                        r.all_reduce = sh->all_reduce;
                        sum.all_gathers += r.all_gathers;
                        sum.all_reduces += sh->all_reduce ? static_cast<unsigned>(n.output_size()) : 0;
                        sum.halo_exchanges += sh->halo ? 1 : 0;
                        if (sh->uneven) sum.uneven.push_back(r.name);
                    }
                    sum.nodes.push_back(r);
                } else {
                    sum.nodes[static_cast<std::size_t>(i)].flops += r.flops;
                }
            }
            e.halt();
            sum.chip_instructions.push_back(e.instructions());
            sum.instructions += e.instructions();
            sum.flops += e.flops();
            sum.hbm_bytes_read += e.dma_bytes_from_hbm();
            sum.hbm_bytes_written += e.dma_bytes_to_hbm();
            sum.remote_bytes += e.dma_bytes_remote();
        }
        return sum;
    }

private:
    const OnnxParams& p_;
    onnx::ModelProto model_;
    std::set<std::string> initializers_, data_inputs_, weight_inputs_;
    bool batch_used_ = false;
    std::map<std::string, std::string> skipped_;  // node name -> its op type (--unsupported=skip)
    std::unordered_map<std::string, Tensor> t_;
    std::unordered_map<std::string, int> producer_;  // tensor -> node index
    std::unordered_map<std::string, int> consumers_;
    std::vector<How> plan_;
    std::uint64_t next_addr_ = 0, eb_ = 2;
    // --tp: each node's sharding, the chip being emitted, and the shapes of the node's tensors
    // on that chip (set around lower(); dims() reads them first).
    std::vector<Sharding> shard_;
    unsigned chip_ = 0;
    std::unordered_map<std::string, Dims> view_;

    void plan_tp() {
        ShardingInputs in;
        in.graph = &model_.graph();
        in.tp = p_.tp;
        for (std::size_t i = 0; i < plan_.size(); ++i)
            in.kinds.push_back(plan_[i] == How::CompileTime ? NodeKind::CompileTime
                               : plan_[i] == How::Skipped  ? NodeKind::Skipped
                                                           : NodeKind::Runtime);
        in.dims = [this](const std::string& t) -> const Dims* {
            auto it = t_.find(t);
            return it == t_.end() || !it->second.known ? nullptr : &it->second.dims;
        };
        in.compile_time = [this](const std::string& t) {
            auto it = t_.find(t);
            return it != t_.end() && it->second.compile_time;
        };
        in.const_ints = [this](const std::string& t, Dims& out) {
            for (const auto& init : model_.graph().initializer())
                if (init.name() == t) {
                    Const c;
                    if (!read_tensor(init, c)) return false;
                    out.assign(c.v.begin(), c.v.end());
                    return true;
                }
            return false;
        };
        shard_ = plan_sharding(in);
    }
    // The part of `name` this chip holds when split along `axis` (-1: whole).
    Dims local(const std::string& name, int axis) const {
        auto it = t_.find(name);
        Dims d = it == t_.end() ? Dims{} : it->second.dims;
        if (axis >= 0 && static_cast<std::size_t>(axis) < d.size()) {
            const auto r = shard_range(d[static_cast<std::size_t>(axis)], chip_, p_.tp);
            d[static_cast<std::size_t>(axis)] = r.second - r.first;
        }
        return d;
    }
    void set_view(const onnx::NodeProto& n, const Sharding* sh) {
        view_.clear();
        if (!sh) return;
        for (const auto& x : n.input()) {
            if (x.empty()) continue;
            auto it = sh->in_axis.find(x);
            view_[x] = local(x, it == sh->in_axis.end() ? -1 : it->second);
        }
        for (int o = 0; o < n.output_size(); ++o) view_[n.output(o)] = local(n.output(o), sh->out_axis[static_cast<std::size_t>(o)]);
        if (sh->halo) {  // input 0: the rows this chip's output rows read, its halo included
            const auto need = halo_rows(n, chip_);
            view_[n.input(0)][2] = need.second - need.first;
            const RowGeometry g = row_geometry(n);
            pad_top_ = std::max<std::int64_t>(0, g.pad - shard_range(t_[n.output(0)].dims[2], chip_, p_.tp).first * g.stride);
        }
    }

    // Split by output rows (Sharding::halo): the kernel's extent along H.
    struct RowGeometry {
        std::int64_t kernel = 1, stride = 1, pad = 0, dilation = 1;
    };
    RowGeometry row_geometry(const onnx::NodeProto& n) {
        RowGeometry g;
        const Dims k = attr_ints(n, "kernel_shape"), st = attr_ints(n, "strides"), dl = attr_ints(n, "dilations"),
                   pads = attr_ints(n, "pads");
        g.kernel = !k.empty() ? k[0] : n.op_type() == "Conv" ? t_[n.input(1)].dims.at(2) : 1;
        g.stride = st.empty() ? 1 : st[0];
        g.dilation = dl.empty() ? 1 : dl[0];
        const auto* ap = attr(n, "auto_pad");
        const std::string autopad = ap ? ap->s() : "NOTSET";
        const std::int64_t H = t_[n.input(0)].dims.at(2), Ho = t_[n.output(0)].dims.at(2);
        if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
            const std::int64_t total = std::max<std::int64_t>(0, (Ho - 1) * g.stride + (g.kernel - 1) * g.dilation + 1 - H);
            g.pad = autopad == "SAME_UPPER" ? total / 2 : total - total / 2;
        } else if (pads.size() >= 2) {
            g.pad = pads[0];
        }
        return g;
    }
    // The input rows [first, end) that chip c's output rows read.
    std::pair<std::int64_t, std::int64_t> halo_rows(const onnx::NodeProto& n, unsigned c) {
        const RowGeometry g = row_geometry(n);
        const std::int64_t H = t_[n.input(0)].dims.at(2);
        const auto o = shard_range(t_[n.output(0)].dims.at(2), c, p_.tp);
        if (o.first >= o.second) return {0, 0};
        const std::int64_t lo = std::max<std::int64_t>(0, o.first * g.stride - g.pad);
        const std::int64_t hi = std::min<std::int64_t>(H, (o.second - 1) * g.stride - g.pad + (g.kernel - 1) * g.dilation + 1);
        return {lo, std::max(lo, hi)};
    }
    // Before a node split by output rows: this chip sends the rows of its part of the input that
    // other chips' output rows read (remote DMAs into the same place of their copy, raising
    // kFlagHalo there), then waits for the rows it reads from theirs. Rows of an image are
    // contiguous (channels innermost, as the convolution lowering lays tensors out).
    static constexpr std::uint16_t kFlagHalo = 17;
    void exchange_halo(gen::Lowering& lo, const onnx::NodeProto& n, const std::string& ann) {
        const Dims& xd = t_[n.input(0)].dims;
        const std::uint64_t N = static_cast<std::uint64_t>(xd[0]), H = static_cast<std::uint64_t>(xd[2]);
        const std::uint64_t row = static_cast<std::uint64_t>(xd[1] * xd[3]) * eb_, base = addr(n.input(0));
        auto overlap = [&](unsigned reader, unsigned holder) {
            const auto need = halo_rows(n, reader);
            const auto has = shard_range(static_cast<std::int64_t>(H), holder, p_.tp);
            return std::make_pair(std::max(need.first, has.first), std::min(need.second, has.second));
        };
        lo.emitter().annotate(ann + "/halo/send");
        for (unsigned c = 0; c < p_.tp; ++c) {
            if (c == chip_) continue;
            const auto r = overlap(c, chip_);
            if (r.first >= r.second) continue;
            for (std::uint64_t img = 0; img < N; ++img) {
                const std::uint64_t at = base + (img * H + static_cast<std::uint64_t>(r.first)) * row;
                lo.send(at, static_cast<std::uint16_t>(c), at, static_cast<std::uint64_t>(r.second - r.first) * row, kFlagHalo);
            }
        }
        lo.emitter().annotate(ann + "/halo/wait");
        for (unsigned c = 0; c < p_.tp; ++c) {
            if (c == chip_) continue;
            const auto r = overlap(chip_, c);
            if (r.first >= r.second) continue;
            for (std::uint64_t img = 0; img < N; ++img) lo.wait_flag(kFlagHalo, lo.expect_arrival(kFlagHalo));
        }
    }
    std::optional<std::int64_t> pad_top_;  // a node split by output rows: the padding above this chip's rows
    // Bytes a collective moves for a tensor split along `axis` (-1: whole, e.g. partial sums):
    // the padded size, each chip's shard as large as the largest (as GSPMD pads).
    std::uint64_t padded_bytes(const std::string& name, int axis) const {
        const Dims& d = t_.at(name).dims;
        const std::uint64_t n = product(d);
        if (axis < 0 || static_cast<std::size_t>(axis) >= d.size()) return gen::ceil_div(n, p_.tp) * p_.tp * eb_;
        const std::uint64_t len = static_cast<std::uint64_t>(d[static_cast<std::size_t>(axis)]);
        return gen::ceil_div(len, p_.tp) * p_.tp * (len ? n / len : 0) * eb_;
    }

    void run_inference() {
        onnx::ShapeInferenceOptions opt;
        opt.check_type = false;
        opt.error_mode = 0;  // a node it cannot infer stays unknown; lower() names it if it matters
        opt.enable_data_propagation = true;
        try {
            onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), opt);
        } catch (const std::exception& ex) {
            throw OnnxError(p_.path + ": shape inference failed: " + ex.what());
        }
    }

    std::unordered_map<std::string, Dims> shapes() const {
        std::unordered_map<std::string, Dims> s;
        const auto& g = model_.graph();
        auto add = [&](const onnx::ValueInfoProto& vi) {
            if (!vi.type().tensor_type().has_shape()) return;
            Dims d;
            for (const auto& x : vi.type().tensor_type().shape().dim()) {
                if (!x.has_dim_value()) return;
                d.push_back(x.dim_value());
            }
            s[vi.name()] = d;
        };
        for (const auto& vi : g.input()) add(vi);
        for (const auto& vi : g.value_info()) add(vi);
        for (const auto& vi : g.output()) add(vi);
        for (const auto& t : g.initializer()) s[t.name()] = Dims(t.dims().begin(), t.dims().end());
        return s;
    }

    // Shape inference, then folding of shape arithmetic into initializers, until nothing more
    // folds (each round lets inference see the Reshape targets the previous one computed).
    void infer() {
        for (int round = 0; round < 32; ++round) {
            run_inference();
            auto sh = shapes();
            onnx::GraphProto& g = *model_.mutable_graph();
            std::unordered_map<std::string, Const> consts;
            for (const auto& t : g.initializer()) {
                Const c;
                if (read_tensor(t, c)) consts[t.name()] = c;
            }
            std::vector<int> folded;
            std::vector<onnx::TensorProto> made;
            for (int i = 0; i < g.node_size(); ++i) {
                const auto& n = g.node(i);
                std::vector<const Const*> in;
                for (const auto& x : n.input()) {
                    auto it = consts.find(x);
                    in.push_back(x.empty() || it == consts.end() ? nullptr : &it->second);
                }
                std::vector<Const> out;
                auto shape_of = [&](const std::string& name) -> const Dims* {
                    auto it = sh.find(name);
                    return it == sh.end() ? nullptr : &it->second;
                };
                if (!fold(n, in, shape_of, out)) continue;
                consts[n.output(0)] = out[0];
                made.push_back(to_tensor(n.output(0), out[0]));
                folded.push_back(i);
            }
            if (folded.empty()) return;
            // Drop the folded nodes, add their results as initializers.
            google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
            std::size_t f = 0;
            for (int i = 0; i < g.node_size(); ++i) {
                if (f < folded.size() && folded[f] == i) {
                    ++f;
                    continue;
                }
                *kept.Add() = g.node(i);
            }
            g.mutable_node()->Swap(&kept);
            for (auto& t : made) {
                initializers_.insert(t.name());
                *g.add_initializer() = std::move(t);
            }
            // Their old inferred value_info may conflict with the initializer: drop it.
            std::unordered_set<std::string> names;
            for (const auto& t : made) names.insert(t.name());
            google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> vis;
            for (const auto& vi : g.value_info())
                if (!names.count(vi.name())) *vis.Add() = vi;
            g.mutable_value_info()->Swap(&vis);
        }
    }

    // Before shape inference (which stops at an op it does not know): an op that cannot be
    // lowered, in a node that does not compute from weights and constants only, is an error;
    // with --unsupported=skip it becomes an Identity of its first input (its outputs taken to be
    // shaped like it: true of the activations and custom elementwise ops a front end meets
    // unknown), remembered as skipped, so that the nodes after it still lower.
    void check_ops() {
        const auto ops = supported_ops();
        const std::set<std::string> supported(ops.begin(), ops.end());
        std::unordered_set<std::string> ct(initializers_.begin(), initializers_.end());
        ct.insert(weight_inputs_.begin(), weight_inputs_.end());
        onnx::GraphProto& g = *model_.mutable_graph();
        for (int i = 0; i < g.node_size(); ++i) {
            onnx::NodeProto& n = *g.mutable_node(i);
            bool compile_time = n.op_type() == "Shape";
            if (!compile_time) {
                compile_time = true;
                for (const auto& x : n.input())
                    if (!x.empty() && !ct.count(x)) compile_time = false;
            }
            if (compile_time) {
                for (const auto& o : n.output()) ct.insert(o);
                continue;
            }
            if (supported.count(n.op_type()) && (n.domain().empty() || n.domain() == "ai.onnx")) continue;
            const std::string name = node_name(n, i);
            if (!p_.skip_unsupported)
                throw OnnxError(p_.path + ": node '" + name + "' has op type " + (n.domain().empty() ? "" : n.domain() + ".") +
                                n.op_type() + ", which xpu_tracegen onnx cannot lower (--unsupported=skip skips such nodes); supported ops: " +
                                join(ops));
            skipped_[name] = n.op_type();
            if (!n.input_size() || n.input(0).empty() || n.output_size() != 1)
                throw OnnxError(p_.path + ": node '" + name + "' (" + n.op_type() +
                                "): cannot be skipped: only a node with a first input and one output can (--unsupported=skip)");
            const std::string in = n.input(0), out = n.output(0), keep = n.name();
            n.Clear();
            n.set_op_type("Identity");
            n.set_name(keep);
            n.add_input(in);
            n.add_output(out);
        }
    }

    std::string node_name(const onnx::NodeProto& n, int i) const {
        std::string s = n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
        while (!s.empty() && s[0] == '/') s.erase(0, 1);
        return s.empty() ? n.op_type() + "_" + std::to_string(i) : s;
    }

    // Classifies every node before anything is emitted, so that an unsupported op or a shape
    // that could not be inferred is reported before the trace is started.
    void plan() {
        const auto& g = model_.graph();
        auto sh = shapes();
        for (const auto& kv : sh) {
            t_[kv.first].dims = kv.second;
            t_[kv.first].known = true;
        }
        for (const auto& n : initializers_) t_[n].compile_time = true;
        for (const auto& n : weight_inputs_) t_[n].compile_time = true;
        const auto ops = supported_ops();
        const std::set<std::string> supported(ops.begin(), ops.end());
        std::vector<std::string> unsupported;
        for (int i = 0; i < g.node_size(); ++i) {
            const auto& n = g.node(i);
            for (const auto& x : n.input())
                if (!x.empty()) ++consumers_[x];
            bool ct = true;
            for (const auto& x : n.input())
                if (!x.empty() && !t_[x].compile_time) ct = false;
            if (n.op_type() == "Shape") ct = true;
            How h;
            if (ct) h = How::CompileTime;
            else if (!supported.count(n.op_type())) {
                if (!p_.skip_unsupported)
                    throw OnnxError(p_.path + ": node '" + node_name(n, i) + "' has op type " + n.op_type() +
                                    ", which xpu_tracegen onnx cannot lower (--unsupported=skip skips such nodes); supported ops: " +
                                    join(ops));
                h = How::Skipped;
            } else if (view_ops().count(n.op_type())) h = How::Free;
            else h = How::Vector;  // refined by lower()
            for (const auto& o : n.output()) {
                producer_[o] = i;
                if (h == How::CompileTime) t_[o].compile_time = true;
            }
            if (h != How::CompileTime && h != How::Skipped)
                for (const auto& o : n.output())
                    if (!o.empty() && !t_[o].known)
                        throw OnnxError(p_.path + ": node '" + node_name(n, i) + "' (" + n.op_type() + "): the shape of its output '" +
                                        o + "' could not be inferred (is a dim still symbolic? --batch / --seq)");
            plan_.push_back(h);
        }
    }

    // A tensor's shape as the node being lowered reads it: this chip's part under --tp.
    const Dims& shape(const std::string& name) {
        auto v = view_.find(name);
        return v != view_.end() ? v->second : t_[name].dims;
    }
    std::uint64_t bytes_of(const std::string& name) { return product(shape(name)) * eb_; }
    // HBM reserved for a tensor: its bytes, or under --tp the largest padded size a collective
    // may move for it.
    std::uint64_t reserve_bytes(const std::string& name) {
        std::uint64_t b = product(t_[name].dims) * eb_;
        if (p_.tp > 1)
            for (int a = -1; a < static_cast<int>(t_[name].dims.size()); ++a) b = std::max(b, padded_bytes(name, a));
        return b;
    }
    // HBM address of a tensor: placed when first needed, 4 KiB aligned, one after the other.
    std::uint64_t addr(const std::string& name) {
        Tensor& t = t_[name];
        if (!t.placed) {
            t.addr = next_addr_;
            t.placed = true;
            next_addr_ += (std::max<std::uint64_t>(reserve_bytes(name), 1) + 4095) / 4096 * 4096;
        }
        return t.addr;
    }
    void alias(const std::string& out, const std::string& in) {
        Tensor& o = t_[out];
        o.addr = addr(in);
        o.placed = true;
    }
    const Dims& dims(const onnx::NodeProto& n, const std::string& name) {
        const Tensor& t = t_[name];
        if (!t.known) throw OnnxError(p_.path + ": node '" + n.name() + "' (" + n.op_type() + "): the shape of '" + name + "' is unknown");
        return shape(name);
    }

    static std::string y_of(const onnx::NodeProto& n) { return n.output_size() ? n.output(0) : ""; }

    // A 1-D or 2-D Conv's geometry for gen::ConvInput (c is set per matmul); none for 3-D.
    // Padding before each spatial dim: `pads`, or what auto_pad SAME_* implies.
    std::optional<gen::ConvInput> conv_input(const onnx::NodeProto& n, const Dims& xd, const Dims& wd, const Dims& yd,
                                             std::uint64_t a) {
        const std::size_t sp = xd.size() - 2;
        if (sp < 1 || sp > 2) return std::nullopt;
        Dims st = attr_ints(n, "strides"), dl = attr_ints(n, "dilations"), pads = attr_ints(n, "pads");
        st.resize(sp, 1);
        dl.resize(sp, 1);
        Dims before(sp, 0);
        const auto* ap = attr(n, "auto_pad");
        const std::string autopad = ap ? ap->s() : "NOTSET";
        for (std::size_t i = 0; i < sp; ++i) {
            if (autopad == "SAME_UPPER" || autopad == "SAME_LOWER") {
                const std::int64_t total =
                    std::max<std::int64_t>(0, (yd[2 + i] - 1) * st[i] + (wd[2 + i] - 1) * dl[i] + 1 - xd[2 + i]);
                before[i] = autopad == "SAME_UPPER" ? total / 2 : total - total / 2;
            } else if (pads.size() == 2 * sp) {
                before[i] = pads[i];
            }
        }
        if (sp == 2 && pad_top_) before[0] = *pad_top_;  // --tp, split by output rows
        auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
        gen::ConvInput c;
        c.hbm_x = a;
        c.n = u(xd[0]);
        c.h = sp == 2 ? u(xd[2]) : 1;
        c.w = u(xd.back());
        c.ho = sp == 2 ? u(yd[2]) : 1;
        c.wo = u(yd.back());
        c.kh = sp == 2 ? u(wd[2]) : 1;
        c.kw = u(wd.back());
        c.sh = sp == 2 ? u(st[0]) : 1;
        c.sw = u(st.back());
        c.dh = sp == 2 ? u(dl[0]) : 1;
        c.dw = u(dl.back());
        c.ph = sp == 2 ? u(before[0]) : 0;
        c.pw = u(before.back());
        return c;
    }

    NodeReport lower(gen::Lowering& lo, const onnx::NodeProto& n, int i) {
        NodeReport r;
        r.name = node_name(n, i);
        r.op = n.op_type();
        const std::string op = n.op_type();
        const std::string ann = p_.prefix + "/" + r.name;
        const std::string vec = ann + "/vector";  // a vector pass's step, as matmuls have theirs
        const How planned = plan_[static_cast<std::size_t>(i)];
        auto done = [&](How h) {
            r.how = how_name(h);
            return r;
        };
        if (planned == How::CompileTime) return done(How::CompileTime);
        if (planned == How::Skipped) return done(How::Skipped);
        if (auto sk = skipped_.find(r.name); sk != skipped_.end()) {
            r.op = sk->second;
            alias(y_of(n), n.input(0));
            return done(How::Skipped);
        }
        const std::string& x = n.input(0);
        const std::string y = n.output_size() ? n.output(0) : "";
        if (view_ops().count(op)) {
            alias(y, x);
            return done(How::Free);
        }
        const std::uint64_t out_e = product(shape(y));
        if (op == "Conv") {
            const Dims& xd = dims(n, x);
            const Dims& wd = dims(n, n.input(1));
            const Dims& yd = dims(n, y);
            if (xd.size() < 3 || wd.size() != xd.size())
                throw OnnxError(p_.path + ": node '" + r.name + "' (Conv): expected input [N,C,spatial...] and weights [O,C/G,kernel...], got " +
                                dims_text(xd) + " and " + dims_text(wd));
            // Groups on this chip (all of them without --tp): its input channels / channels per group.
            if (wd[1] <= 0 || xd[1] % wd[1])
                throw OnnxError(p_.path + ": node '" + r.name + "' (Conv): input channels " + std::to_string(xd[1]) +
                                " are not a multiple of the weights' channels per group " + std::to_string(wd[1]));
            const std::uint64_t G = static_cast<std::uint64_t>(xd[1] / wd[1]);
            std::uint64_t M = static_cast<std::uint64_t>(yd[0]), K = static_cast<std::uint64_t>(wd[1]);
            for (std::size_t s = 2; s < yd.size(); ++s) M *= static_cast<std::uint64_t>(yd[s]);
            for (std::size_t s = 2; s < wd.size(); ++s) K *= static_cast<std::uint64_t>(wd[s]);
            const std::uint64_t O = static_cast<std::uint64_t>(wd[0]), og = G ? O / G : 0;
            r.flops = 2 * M * O * K;
            if (!M || !O || !K || !G) return done(How::Mxu);  // --tp: nothing of this node on this chip
            const std::uint64_t a = addr(x), b = addr(n.input(1)), c = addr(y);
            const unsigned dim = p_.tiles.dim;
            // 1-D and 2-D convolutions form their A rows in VMEM from the input (gen::ConvInput:
            // HBM reads the input once per row block, with its halo); 3-D ones gather im2col
            // tiles from HBM.
            const std::optional<gen::ConvInput> in = conv_input(n, xd, wd, yd, a);
            const std::uint64_t cg = static_cast<std::uint64_t>(wd[1]);  // input channels per group
            auto with_input = [&](gen::Matmul m, std::uint64_t g0, std::uint64_t groups) {
                if (in) {
                    m.conv = *in;
                    m.conv->c = groups * cg;
                    // Channel-blocked layout: a group block's channels are contiguous.
                    m.conv->hbm_x = a + g0 * cg * in->n * in->h * in->w * eb_;
                }
                return m;
            };
            std::vector<gen::Matmul> mm;
            if (G == 1) {
                mm.push_back(with_input({M, O, K, a, b, c}, 0, 1));
            } else if (K <= dim && og <= dim) {
                // Groups packed block-diagonally: as many per weight tile as its rows and
                // columns hold.
                const std::uint64_t per = std::max<std::uint64_t>(1, std::min({dim / K, dim / og, G}));
                for (std::uint64_t g0 = 0; g0 < G; g0 += per) {
                    const std::uint64_t pg = std::min(per, G - g0);
                    gen::Matmul m{M, pg * og, K, a + g0 * M * K * eb_, b + g0 * og * K * eb_, c + g0 * M * og * eb_};
                    m.packed = pg;
                    mm.push_back(with_input(m, g0, pg));
                }
            } else {
                for (std::uint64_t g0 = 0; g0 < G; ++g0)
                    mm.push_back(with_input({M, og, K, a + g0 * M * K * eb_, b + g0 * og * K * eb_, c + g0 * M * og * eb_}, g0, 1));
            }
            lo.matmuls(mm, ann);
            return done(How::Mxu);
        }
        if (op == "Gemm" || op == "MatMul") {
            Dims ad = dims(n, x), bd = dims(n, n.input(1));
            if (op == "Gemm") {
                if (ad.size() != 2 || bd.size() != 2)
                    throw OnnxError(p_.path + ": node '" + r.name + "' (Gemm): expected 2-D operands, got " + dims_text(ad) + " and " +
                                    dims_text(bd));
                if (attr_int(n, "transA", 0)) std::swap(ad[0], ad[1]);
                if (attr_int(n, "transB", 0)) std::swap(bd[0], bd[1]);
            }
            if (ad.size() == 1) ad.insert(ad.begin(), 1);
            if (bd.size() == 1) bd.push_back(1);
            const std::uint64_t M = static_cast<std::uint64_t>(ad[ad.size() - 2]), K = static_cast<std::uint64_t>(ad.back());
            const std::uint64_t N = static_cast<std::uint64_t>(bd.back());
            if (static_cast<std::uint64_t>(bd[bd.size() - 2]) != K)
                throw OnnxError(p_.path + ": node '" + r.name + "' (" + op + "): inner dims differ: " + dims_text(ad) + " x " + dims_text(bd));
            const Dims abatch(ad.begin(), ad.end() - 2), bbatch(bd.begin(), bd.end() - 2);
            const std::uint64_t a = addr(x), b = addr(n.input(1)), c = addr(y);
            std::vector<gen::Matmul> mm;
            if (product(bbatch) == 1) {
                // Weights shared by every batch: the batch folds into the rows.
                mm.push_back({product(abatch) * M, N, K, a, b, c});
            } else {
                Dims ob;
                if (!broadcast(abatch, bbatch, ob))
                    throw OnnxError(p_.path + ": node '" + r.name + "' (MatMul): batch dims do not broadcast: " + dims_text(ad) + " x " +
                                    dims_text(bd));
                for (std::uint64_t k = 0; k < product(ob); ++k)
                    mm.push_back({M, N, K, a + bcast_index(abatch, ob, k) * M * K * eb_, b + bcast_index(bbatch, ob, k) * K * N * eb_,
                                  c + k * M * N * eb_});
            }
            mm.erase(std::remove_if(mm.begin(), mm.end(), [](const gen::Matmul& m) { return !m.m || !m.n || !m.k; }), mm.end());
            for (const auto& m : mm) r.flops += 2 * m.m * m.n * m.k;
            lo.matmuls(mm, ann);
            return done(How::Mxu);
        }
        if (op == "BatchNormalization") {
            // After a Conv whose output feeds nothing else, a compiler folds the scale and shift
            // into the Conv's weights and bias: no work at all.
            auto pr = producer_.find(x);
            if (pr != producer_.end() && model_.graph().node(pr->second).op_type() == "Conv" && consumers_[x] == 1) {
                alias(y, x);
                return done(How::Folded);
            }
        }
        if (unary_ops().count(op)) {
            lo.vector_pass(addr(x), 0, addr(y), out_e, unary_ops().at(op), vec);
            return done(How::Vector);
        }
        if (binary_ops().count(op)) {
            // The runtime operands as large as the output stream from HBM; a broadcast or
            // constant operand (a bias, a scale, a scalar) stays in registers.
            std::vector<std::string> full;
            for (const auto& in : n.input())
                if (!in.empty() && !t_[in].compile_time && product(shape(in)) == out_e) full.push_back(in);
            if (full.empty())  // e.g. a runtime row vector broadcast over a constant: stream the output
                lo.vector_pass(addr(y), 0, addr(y), out_e, binary_ops().at(op), vec);
            else
                lo.vector_pass(addr(full[0]), full.size() > 1 ? addr(full[1]) : 0, addr(y), out_e, binary_ops().at(op), vec);
            return done(How::Vector);
        }
        if (reduce_ops().count(op) || op == "MaxPool" || op == "AveragePool") {
            const std::uint64_t in_e = product(dims(n, x));
            Ops ops = {Opcode::VAlu, Opcode::VReduce};
            if (op == "MaxPool" || op == "AveragePool") {
                // Each input vreg takes part in kernel / stride windows, on average.
                const Dims k = attr_ints(n, "kernel_shape"), s = attr_ints(n, "strides");
                std::uint64_t taps = 1, step = 1;
                for (auto v : k) taps *= static_cast<std::uint64_t>(v);
                for (auto v : s) step *= static_cast<std::uint64_t>(v);
                ops.assign(std::max<std::uint64_t>(1, gen::ceil_div(taps, step)), Opcode::VAlu);
            }
            lo.vector_pass(addr(x), 0, addr(y), in_e, ops, vec, out_e);
            return done(How::Vector);
        }
        if (op == "Transpose") {
            // Moving only dims of size 1 changes the view, not the data.
            const Dims& xd = dims(n, x);
            Dims perm = attr_ints(n, "perm");
            if (perm.empty())
                for (std::size_t k = xd.size(); k-- > 0;) perm.push_back(static_cast<std::int64_t>(k));
            Dims moved;
            for (auto pidx : perm)
                if (xd.at(static_cast<std::size_t>(pidx)) != 1) moved.push_back(pidx);
            if (std::is_sorted(moved.begin(), moved.end())) {
                alias(y, x);
                return done(How::Free);
            }
            lo.vector_pass(addr(x), 0, addr(y), out_e, {Opcode::VPermute}, vec);
            return done(How::Vector);
        }
        if (op == "Concat") {
            std::uint64_t off = 0;
            const std::uint64_t base = addr(y);
            for (const auto& in : n.input()) {
                if (in.empty()) continue;
                const std::uint64_t b = bytes_of(in);
                if (b) lo.copy(addr(in), base + off, b, ann + "/copy");
                off += b;
            }
            return done(How::Dma);
        }
        if (op == "Split") {
            std::uint64_t off = 0;
            const std::uint64_t base = addr(x);
            for (const auto& o : n.output()) {
                const std::uint64_t b = bytes_of(o);
                if (b) lo.copy(base + off, addr(o), b, ann + "/copy");
                off += b;
            }
            return done(How::Dma);
        }
        if (copy_ops().count(op)) {  // Slice, Gather, Expand, Pad, Tile: the output gathered by DMA
            if (out_e) lo.copy(addr(x), addr(y), out_e * eb_, ann + "/copy");
            return done(How::Dma);
        }
        if (op == "Shape" || op == "Constant" || op == "ConstantOfShape" || op == "Range")
            return done(How::CompileTime);
        throw OnnxError(p_.path + ": node '" + r.name + "' (" + op + "): no lowering");  // unreachable: plan() checked
    }
};

}  // namespace

OnnxSummary emit_onnx(trace::TraceWriter& w, const OnnxParams& p) {
    if (!p.batch) throw OnnxError("--batch must be > 0");
    Frontend f(p);
    f.load();
    return f.emit(w);
}

}  // namespace xpu::onnxfe

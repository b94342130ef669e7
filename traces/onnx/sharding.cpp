#include "traces/onnx/sharding.h"
#include "traces/onnx/onnx_attrs.h"

#include <algorithm>
#include <set>

#include <onnx/onnx_pb.h>

namespace xpu::onnxfe {

std::pair<std::int64_t, std::int64_t> shard_range(std::int64_t d, unsigned c, unsigned tp) {
    return {d * c / tp, d * (c + 1) / tp};
}

namespace {

int norm(std::int64_t a, std::size_t rank) { return static_cast<int>(norm_axis(a, rank)); }
std::int64_t prod(const Dims& d, std::size_t from, std::size_t to) {
    std::int64_t p = 1;
    for (std::size_t i = from; i < to && i < d.size(); ++i) p *= d[i];
    return p;
}

const std::set<std::string>& elementwise_binary() {
    static const std::set<std::string> s = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less",
                                            "Greater", "Where", "And", "Or", "PRelu"};
    return s;
}
const std::set<std::string>& unary_keep() {  // elementwise, or per channel
    static const std::set<std::string> s = {"Relu", "LeakyRelu", "Clip", "Neg", "Abs", "Cast", "Not", "Sigmoid",
                                            "HardSigmoid", "HardSwish", "Tanh", "Erf", "Exp", "Log", "Sqrt",
                                            "Reciprocal", "Gelu", "BatchNormalization"};
    return s;
}

// The axis of `out` that axis `a` of `in` becomes under a reshape, so that each chip's part
// stays one contiguous part; -1 if there is none.
int map_reshape(const Dims& in, const Dims& out, int a, unsigned tp) {
    const std::int64_t before = prod(in, 0, static_cast<std::size_t>(a)), d = in[static_cast<std::size_t>(a)];
    std::int64_t p = 1;
    for (std::size_t b = 0; b < out.size(); ++b) {
        if (p == before && (out[b] != 1 || d == 1)) {
            if (out[b] == d) return static_cast<int>(b);
            if (out[b] % d == 0 && d % tp == 0) return static_cast<int>(b);       // merged with the dims after it
            if (d % out[b] == 0 && out[b] % tp == 0) return static_cast<int>(b);  // split into it and dims after it
            return -1;
        }
        p *= out[b];
        if (p > before) return -1;
    }
    return -1;
}

class Planner {
public:
    explicit Planner(const ShardingInputs& in) : in_(in) {}

    std::vector<Sharding> run() {
        std::vector<Sharding> out;
        const auto& g = *in_.graph;
        for (int i = 0; i < g.node_size(); ++i)
            for (const auto& x : g.node(i).input())
                if (!x.empty()) consumers_[x].push_back(i);
        for (int i = 0; i < g.node_size(); ++i) {
            Sharding s;
            const auto& n = g.node(i);
            s.out_axis.assign(static_cast<std::size_t>(n.output_size()), -1);
            switch (in_.kinds[static_cast<std::size_t>(i)]) {
                case NodeKind::CompileTime: s.rule = "compile-time"; break;
                case NodeKind::Skipped:
                    s.out_axis[0] = axis(n.input(0));
                    s.rule = "skipped";
                    break;
                case NodeKind::Runtime: node(n, s); break;
            }
            for (int o = 0; o < n.output_size(); ++o) cur_[n.output(o)] = s.out_axis[static_cast<std::size_t>(o)];
            out.push_back(std::move(s));
        }
        return out;
    }

private:
    const ShardingInputs& in_;
    std::map<std::string, int> cur_;  // runtime tensors: their split axis (-1 whole)
    std::map<std::string, std::vector<int>> consumers_;  // tensor -> the nodes reading it

    // Whether a split of tensor t along `a` reaches every reshape downstream in a form the rules
    // keep (followed through elementwise ops, slices and splits): false when some reshape would
    // have to all-gather it, e.g. a projection's columns reshaped into heads that tp does not
    // divide. Used to choose a column-parallel split only where it holds up.
    bool split_survives(const std::string& t, int a, int depth = 0) const {
        if (depth > 16) return true;
        auto it = consumers_.find(t);
        if (it == consumers_.end()) return true;
        const auto& g = *in_.graph;
        for (int i : it->second) {
            const auto& n = g.node(i);
            const std::string& op = n.op_type();
            if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
                if (map_reshape(dims(t), dims(n.output(0)), a, tp()) < 0) return false;
            } else if (op == "Split" || op == "Slice") {
                const Dims& xd = dims(t);
                for (const auto& o : n.output()) {
                    const Dims& od = dims(o);
                    if (od.size() != xd.size()) return false;
                    const auto d = od[static_cast<std::size_t>(a)];
                    if (d != xd[static_cast<std::size_t>(a)] && d % tp()) return false;
                    if (!split_survives(o, a, depth + 1)) return false;
                }
            } else if (unary_keep().count(op) || elementwise_binary().count(op)) {
                const int b = a + static_cast<int>(dims(n.output(0)).size()) - static_cast<int>(dims(t).size());
                if (!split_survives(n.output(0), b, depth + 1)) return false;
            }
        }
        return true;
    }
    unsigned tp() const { return in_.tp; }

    bool ct(const std::string& t) const { return in_.compile_time(t); }
    int axis(const std::string& t) const {
        auto it = cur_.find(t);
        return it == cur_.end() || ct(t) ? -1 : it->second;
    }
    const Dims& dims(const std::string& t) const {
        static const Dims none;
        const Dims* d = in_.dims(t);
        return d ? *d : none;
    }
    bool runtime(const std::string& t) const { return !t.empty() && !ct(t); }
    // Whole before the node: all-gathered if split.
    void whole(Sharding& s, const std::string& t) {
        if (runtime(t) && axis(t) >= 0) {
            s.gather.emplace_back(t, axis(t));
            cur_[t] = -1;
        }
    }
    void whole_all(Sharding& s, const onnx::NodeProto& n) {
        for (const auto& x : n.input()) whole(s, x);
    }
    // The node reads part `a` of input t (a whole tensor is sliced for free).
    void read(Sharding& s, const std::string& t, int a) {
        if (t.empty()) return;
        if (runtime(t) && axis(t) >= 0 && axis(t) != a) whole(s, t);
        if (a >= 0) {
            s.in_axis[t] = a;
            check(s, t, a);
        }
    }
    void check(Sharding& s, const std::string& t, int a) {
        const Dims& d = dims(t);
        if (a >= 0 && static_cast<std::size_t>(a) < d.size() && d[static_cast<std::size_t>(a)] % tp()) s.uneven = true;
    }
    void out_all(Sharding& s, const onnx::NodeProto& n, int a) {
        for (std::size_t o = 0; o < s.out_axis.size(); ++o) {
            s.out_axis[o] = a;
            if (a >= 0) check(s, n.output(static_cast<int>(o)), a);
        }
    }
    // Follow the first input's split unchanged (elementwise and per-channel ops).
    void keep(Sharding& s, const onnx::NodeProto& n, const std::string& rule) {
        const int a = axis(n.input(0));
        read(s, n.input(0), a);
        out_all(s, n, a);
        s.rule = a >= 0 ? rule : "whole";
    }
    void replicate(Sharding& s, const onnx::NodeProto& n) {
        whole_all(s, n);
        s.rule = s.gather.empty() ? "whole" : "all-gather, then whole";
    }

    void node(const onnx::NodeProto& n, Sharding& s) {
        const std::string& op = n.op_type();
        if (op == "Conv") return conv(n, s);
        if (op == "Gemm" || op == "MatMul") return ct(n.input(1)) ? matmul_weights(n, s) : matmul_runtime(n, s);
        if (op == "Identity" || op == "Dropout") return keep(s, n, "follows its input");
        if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
            const int a = axis(n.input(0));
            if (a < 0) return out_all(s, n, -1);
            const int b = map_reshape(dims(n.input(0)), dims(n.output(0)), a, tp());
            if (b < 0) return replicate(s, n);
            read(s, n.input(0), a);
            out_all(s, n, b);
            s.rule = "view of the split";
            return;
        }
        if (op == "Transpose") {
            const int a = axis(n.input(0));
            Dims perm = attr_ints(n, "perm");
            const std::size_t r = dims(n.input(0)).size();
            if (perm.empty())
                for (std::size_t k = r; k-- > 0;) perm.push_back(static_cast<std::int64_t>(k));
            int b = -1;
            for (std::size_t k = 0; k < perm.size(); ++k)
                if (perm[k] == a) b = static_cast<int>(k);
            read(s, n.input(0), a);
            out_all(s, n, a < 0 ? -1 : b);
            s.rule = a < 0 ? "whole" : "transpose of the split";
            return;
        }
        if (unary_keep().count(op)) return keep(s, n, "follows its input");
        if (op == "Softmax" || op == "LogSoftmax" || op == "LayerNormalization") {
            const std::size_t r = dims(n.input(0)).size();
            const int first = norm(attr_int(n, "axis", -1), r);  // normalised over [axis, rank) (Softmax: axis)
            const int a = axis(n.input(0));
            if (a >= 0 && (op == "LayerNormalization" ? a >= first : a == first)) return replicate(s, n);
            return keep(s, n, "follows its input (normalised over other axes)");
        }
        if (elementwise_binary().count(op)) return binary(n, s);
        if (op == "MaxPool" || op == "AveragePool") {
            const int a = axis(n.input(0));
            if (a == 2 && dims(n.output(0)).size() == 4 && dims(n.output(0))[2] >= static_cast<std::int64_t>(tp()))
                return by_rows(n, s);
            if (a >= 2) return replicate(s, n);
            return keep(s, n, "follows its input (pooled over other axes)");
        }
        if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
            if (axis(n.input(0)) >= 2) return replicate(s, n);
            return keep(s, n, "follows its input (pooled over other axes)");
        }
        if (op.rfind("Reduce", 0) == 0) return reduce(n, s);
        if (op == "Concat") return concat(n, s);
        if (op == "Split" || op == "Slice") return split_or_slice(n, s);
        if (op == "Gather") {
            const int a = axis(n.input(0));
            const int ga = norm(attr_int(n, "axis", 0), dims(n.input(0)).size());
            if (a < 0 || a == ga || (runtime(n.input(1)) && axis(n.input(1)) >= 0)) return replicate(s, n);
            read(s, n.input(0), a);
            out_all(s, n, a < ga ? a : a + static_cast<int>(dims(n.input(1)).size()) - 1);
            s.rule = "gather along another axis";
            return;
        }
        if (op == "Expand" || op == "Pad" || op == "Tile") {
            const int a = axis(n.input(0));
            const Dims &xd = dims(n.input(0)), &yd = dims(n.output(0));
            if (a < 0) return replicate(s, n);
            const int b = a + static_cast<int>(yd.size()) - static_cast<int>(xd.size());
            if (b < 0 || yd[static_cast<std::size_t>(b)] != xd[static_cast<std::size_t>(a)]) return replicate(s, n);
            read(s, n.input(0), a);
            out_all(s, n, b);
            s.rule = "follows its input (split axis unchanged)";
            return;
        }
        replicate(s, n);
    }

    void binary(const onnx::NodeProto& n, Sharding& s) {
        const Dims& yd = dims(n.output(0));
        const int R = static_cast<int>(yd.size());
        int target = -1;
        for (const auto& x : n.input())
            if (runtime(x) && axis(x) >= 0) {
                target = axis(x) + R - static_cast<int>(dims(x).size());
                break;
            }
        for (const auto& x : n.input()) {
            if (x.empty()) continue;
            const Dims& xd = dims(x);
            const int a = target - (R - static_cast<int>(xd.size()));
            const bool has = target >= 0 && a >= 0 && xd[static_cast<std::size_t>(a)] > 1;
            read(s, x, has ? a : -1);  // broadcast along the split axis: read whole
        }
        out_all(s, n, target);
        s.rule = target >= 0 ? "elementwise on the split" : "whole";
    }

    void reduce(const onnx::NodeProto& n, Sharding& s) {
        const int a = axis(n.input(0));
        if (a < 0) return out_all(s, n, -1);
        const std::size_t r = dims(n.input(0)).size();
        Dims axes = attr_ints(n, "axes");
        if (axes.empty() && n.input_size() > 1 && !n.input(1).empty() && !in_.const_ints(n.input(1), axes))
            return replicate(s, n);  // axes computed at run time
        std::set<int> red;
        for (auto x : axes) red.insert(norm(x, r));
        if (red.empty() && !attr_int(n, "noop_with_empty_axes", 0))
            for (std::size_t k = 0; k < r; ++k) red.insert(static_cast<int>(k));
        if (red.count(a)) return replicate(s, n);
        int b = a;
        if (!attr_int(n, "keepdims", 1))
            for (int k : red)
                if (k < a) --b;
        read(s, n.input(0), a);
        out_all(s, n, b);
        s.rule = "follows its input (reduced over other axes)";
    }

    void concat(const onnx::NodeProto& n, Sharding& s) {
        const int ca = norm(attr_int(n, "axis", 0), dims(n.output(0)).size());
        int target = -1;
        for (const auto& x : n.input())
            if (runtime(x) && axis(x) >= 0) target = axis(x);
        if (target < 0 || target == ca) return replicate(s, n);
        for (const auto& x : n.input()) read(s, x, target);
        out_all(s, n, target);
        s.rule = "concatenation along another axis";
    }

    // Split and Slice: along another axis the split is kept; along the split axis only when it
    // is interleaved by piece (each piece split over the chips), which a compiler arranges at
    // compile time for a column-parallel output: it permutes the weight columns so that every
    // chip's part holds its share of each piece (Megatron's Q, K, V). Here: when every piece
    // divides by tp.
    void split_or_slice(const onnx::NodeProto& n, Sharding& s) {
        const int a = axis(n.input(0));
        if (a < 0) return out_all(s, n, -1);
        const Dims& xd = dims(n.input(0));
        bool ok = true;
        for (const auto& o : n.output()) {
            const Dims& od = dims(o);
            if (od.size() != xd.size()) ok = false;
            else if (od[static_cast<std::size_t>(a)] != xd[static_cast<std::size_t>(a)] && od[static_cast<std::size_t>(a)] % tp())
                ok = false;
        }
        if (!ok) return replicate(s, n);
        read(s, n.input(0), a);
        out_all(s, n, a);
        s.rule = "pieces split like their input";
    }

    void matmul_weights(const onnx::NodeProto& n, Sharding& s) {
        const std::string &x = n.input(0), &w = n.input(1);
        const bool gemm = n.op_type() == "Gemm";
        const int ra = static_cast<int>(dims(x).size()), rb = static_cast<int>(dims(w).size());
        if (ra < 2 || rb < 2) {  // a vector: split the weights by column
            whole(s, x);
            read(s, w, rb - 1);
            out_all(s, n, static_cast<int>(dims(n.output(0)).size()) - 1);
            s.rule = "column-parallel";
            return;
        }
        const int ka = gemm ? (attr_int(n, "transA", 0) ? 0 : 1) : ra - 1;
        const int kb = gemm ? (attr_int(n, "transB", 0) ? 1 : 0) : rb - 2;
        const int nb = gemm ? 1 - kb : rb - 1;
        const int R = static_cast<int>(dims(n.output(0)).size());
        const int a = axis(x);
        if (a == ka) {
            read(s, x, ka);
            read(s, w, kb);
            s.all_reduce = true;
            s.rule = "row-parallel (all-reduce)";
        } else if (a >= 0) {
            read(s, x, a);
            out_all(s, n, gemm ? 0 : a + R - ra);
            s.rule = "rows split (weights whole)";
        } else {
            // A row axis (M, or a batch axis folded into M) with at least tp entries.
            int m = -1;
            for (int k = 0; k < ra && m < 0; ++k)
                if (k != ka && dims(x)[static_cast<std::size_t>(k)] >= static_cast<std::int64_t>(tp())) m = k;
            if (split_survives(n.output(0), R - 1) || m < 0) {
                read(s, w, nb);
                out_all(s, n, R - 1);
                s.rule = "column-parallel";
            } else {
                // Its columns would have to be all-gathered downstream (heads that tp does not
                // divide): split by rows instead (sequence-parallel), weights whole on every chip.
                read(s, x, m);
                out_all(s, n, gemm ? 0 : m + R - ra);
                s.rule = "rows split (weights whole)";
            }
        }
    }

    void matmul_runtime(const onnx::NodeProto& n, Sharding& s) {
        const std::string &A = n.input(0), &B = n.input(1);
        const Dims &ad = dims(A), &bd = dims(B), &yd = dims(n.output(0));
        const int ra = static_cast<int>(ad.size()), rb = static_cast<int>(bd.size()), R = static_cast<int>(yd.size());
        constexpr int kK = -2;  // the contracted axis
        auto a_out = [&](int i) { return i < 0 ? -1 : i == ra - 1 ? kK : i == ra - 2 ? R - 2 : i + R - ra; };
        auto b_out = [&](int j) { return j < 0 ? -1 : j == rb - 2 ? kK : j == rb - 1 ? R - 1 : j + R - rb; };
        // Which axis of A / B holds out axis o (-1: none, or broadcast along it).
        auto a_in = [&](int o) {
            if (o == R - 1) return -1;
            const int i = o == R - 2 ? ra - 2 : o - (R - ra);
            if (i < 0 || (o < R - 2 && i >= ra - 2) || ad[static_cast<std::size_t>(i)] <= 1) return -1;
            return i;
        };
        auto b_in = [&](int o) {
            if (o == R - 2) return -1;
            const int j = o == R - 1 ? rb - 1 : o - (R - rb);
            if (j < 0 || (o < R - 2 && j >= rb - 2) || bd[static_cast<std::size_t>(j)] <= 1) return -1;
            return j;
        };
        if (ra < 2 || rb < 2) return replicate_mxu(n, s);
        const int ta = a_out(axis(A)), tb = b_out(axis(B));
        int o = -1;
        if (ta >= 0 && ta < R - 2) o = ta;
        else if (tb >= 0 && tb < R - 2) o = tb;
        else if (ta == R - 2) o = R - 2;
        else if (tb == R - 1) o = R - 1;
        if (o < 0 && (ta == kK || tb == kK)) {
            read(s, A, ra - 1);
            read(s, B, rb - 2);
            s.all_reduce = true;
            s.rule = "partial sums over K (all-reduce)";
            return;
        }
        if (o < 0) {
            // Both whole: split the output along the first batch axis as long as tp, else M or N.
            for (int k = 0; k < R - 2 && o < 0; ++k)
                if (yd[static_cast<std::size_t>(k)] >= static_cast<std::int64_t>(tp())) o = k;
            if (o < 0) o = yd[static_cast<std::size_t>(R - 2)] >= yd[static_cast<std::size_t>(R - 1)] ? R - 2 : R - 1;
        }
        read(s, A, a_in(o));
        read(s, B, b_in(o));
        out_all(s, n, o);
        s.rule = o < R - 2 ? "split by batch (heads)" : o == R - 2 ? "split by rows" : "split by columns";
    }

    void replicate_mxu(const onnx::NodeProto& n, Sharding& s) {
        // A vector operand: split the other operand's free axis.
        whole_all(s, n);
        const Dims& bd = dims(n.input(1));
        if (bd.size() >= 2) {
            read(s, n.input(1), static_cast<int>(bd.size()) - 1);
            out_all(s, n, static_cast<int>(dims(n.output(0)).size()) - 1);
        } else {
            read(s, n.input(0), static_cast<int>(dims(n.input(0)).size()) - 1);
            read(s, n.input(1), 0);
            s.all_reduce = true;
        }
        s.rule = "split by columns";
    }

    // Channel boundaries of tp parts that fall on group boundaries.
    bool groups_align(std::int64_t channels, std::int64_t groups) const {
        const std::int64_t per = channels / groups;
        for (unsigned c = 0; c <= tp(); ++c)
            if (channels * c / tp() != per * (groups * c / tp())) return false;
        return true;
    }

    // Split by output rows (2-D Conv and pooling): each chip computes its rows of the output from
    // its rows of the input plus the halo its kernel reads from the neighbours' rows.
    void by_rows(const onnx::NodeProto& n, Sharding& s) {
        const int a = axis(n.input(0));
        if (a >= 0 && a != 2) whole(s, n.input(0));
        s.in_axis[n.input(0)] = 2;
        s.halo = true;
        out_all(s, n, 2);
        s.rule = "by output rows (halo exchange)";
    }

    void conv(const onnx::NodeProto& n, Sharding& s) {
        const std::string &x = n.input(0), &w = n.input(1);
        const Dims &xd = dims(x), &wd = dims(w), &yd = dims(n.output(0));
        const std::int64_t G = attr_int(n, "group", 1), C = xd.size() > 1 ? xd[1] : 1, O = wd.empty() ? 1 : wd[0];
        const int a = axis(x);
        const bool rows = yd.size() == 4 && yd[2] >= static_cast<std::int64_t>(tp());
        const bool batch = xd.size() && xd[0] % static_cast<std::int64_t>(tp()) == 0;
        if ((a == 2 || (a < 0 && !batch)) && rows) return by_rows(n, s);
        if (a == 0) {
            read(s, x, 0);
            out_all(s, n, 0);
            s.rule = "by batch";
            return;
        }
        if (a == 1 && G == 1) {
            read(s, x, 1);
            read(s, w, 1);
            s.all_reduce = true;
            s.rule = "by input channels (all-reduce)";
            return;
        }
        if (a == 1 && groups_align(C, G) && groups_align(O, G)) {
            read(s, x, 1);
            read(s, w, 0);
            out_all(s, n, 1);
            s.rule = "by groups";
            return;
        }
        whole(s, x);  // split spatially, or groups that do not align
        if (xd.size() && xd[0] % static_cast<std::int64_t>(tp()) == 0) {
            read(s, x, 0);
            out_all(s, n, 0);
            s.rule = "by batch";
        } else if (G == 1) {
            read(s, w, 0);
            out_all(s, n, 1);
            s.rule = "by output channels";
        } else if (groups_align(C, G) && groups_align(O, G)) {
            read(s, x, 1);
            read(s, w, 0);
            out_all(s, n, 1);
            s.rule = "by groups";
        } else {  // groups that cannot be split evenly: all on one rule that always applies
            by_rows(n, s);
        }
    }
};

}  // namespace

std::vector<Sharding> plan_sharding(const ShardingInputs& in) { return Planner(in).run(); }

}  // namespace xpu::onnxfe

// A small builder of ONNX graphs for tests, with ONNX's protobuf API: inputs with shapes (weights
// as shape-only inputs, as scripts/export_models.py exports them), nodes, attributes, and the
// model saved into the test's temp folder.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

namespace xpu::test {

// A file of this test in the temp folder, per test (ctest runs the tests of a binary in parallel
// processes), removed when the test's process exits (each test runs in a process of its own).
inline std::string onnx_tmp(const std::string& name, const std::string& prefix = "onnx_") {
    struct RemovedAtExit {
        std::vector<std::string> paths;
        ~RemovedAtExit() {
            for (const std::string& p : paths) std::remove(p.c_str());
        }
    };
    static RemovedAtExit files;
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '_');  // parameterised tests: Name/Param
    files.paths.push_back(::testing::TempDir() + prefix + test + "_" + name);
    return files.paths.back();
}

struct Graph {
    onnx::ModelProto m;
    Graph() {
        m.set_ir_version(8);
        auto* o = m.add_opset_import();
        o->set_domain("");
        o->set_version(17);
    }
    onnx::GraphProto& g() { return *m.mutable_graph(); }
    void input(const std::string& name, std::vector<std::int64_t> dims, const std::string& sym0 = "") {
        auto* vi = g().add_input();
        vi->set_name(name);
        auto* t = vi->mutable_type()->mutable_tensor_type();
        t->set_elem_type(onnx::TensorProto::FLOAT);
        for (std::size_t i = 0; i < dims.size(); ++i) {
            auto* d = t->mutable_shape()->add_dim();
            if (i == 0 && !sym0.empty()) d->set_dim_param(sym0);
            else d->set_dim_value(dims[i]);
        }
    }
    onnx::NodeProto& node(const std::string& op, const std::string& name, std::vector<std::string> in, std::vector<std::string> out) {
        auto* n = g().add_node();
        n->set_op_type(op);
        n->set_name(name);
        for (auto& x : in) n->add_input(x);
        for (auto& x : out) n->add_output(x);
        return *n;
    }
    static void ints(onnx::NodeProto& n, const std::string& name, std::vector<std::int64_t> v) {
        auto* a = n.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INTS);
        for (auto x : v) a->add_ints(x);
    }
    static void integer(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
        auto* a = n.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(v);
    }
    void output(const std::string& name) { g().add_output()->set_name(name); }
    std::string save(const std::string& name) {
        const std::string p = onnx_tmp(name + ".onnx");
        std::ofstream f(p, std::ios::binary);
        m.SerializeToOstream(&f);
        return p;
    }
};

}  // namespace xpu::test

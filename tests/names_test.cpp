// The roll-up of op names across layers (analysis/names.h): one name per op for all layers
// with a count, numeric order (layer2 before layer10), and results that depend on the set of
// names only (not their order or repetitions). No SystemC.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "analysis/names.h"

namespace xpu::analysis {
namespace {

std::vector<std::string> layers(const std::string& rest, int n) {
    std::vector<std::string> v;
    for (int l = 0; l < n; ++l) v.push_back("layer" + std::to_string(l) + "/" + rest);
    return v;
}

TEST(Names, NaturalOrder) {
    EXPECT_TRUE(natural_less("layer2/attn", "layer10/attn"));
    EXPECT_FALSE(natural_less("layer10/attn", "layer2/attn"));
    EXPECT_TRUE(natural_less("layer9", "layer10"));
    EXPECT_TRUE(natural_less("chip3", "chip12"));
    EXPECT_TRUE(natural_less("a", "b"));
    EXPECT_TRUE(natural_less("layer1", "layer1/x"));  // a prefix first
    EXPECT_FALSE(natural_less("x", "x"));
    // Equal by value but not by bytes: still a strict order, one way only.
    EXPECT_NE(natural_less("layer01", "layer1"), natural_less("layer1", "layer01"));
    std::vector<std::string> v = {"layer10/a", "layer2/a", "layer1/b", "layer1/a", "layer100/a", "gemm/load_a"};
    std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) { return natural_less(a, b); });
    EXPECT_EQ(v, (std::vector<std::string>{"gemm/load_a", "layer1/a", "layer1/b", "layer2/a", "layer10/a", "layer100/a"}));
}

TEST(Names, LayerPattern) {
    EXPECT_EQ(layer_pattern("layer12/attn/qkv_proj/load_b"), "layer*/attn/qkv_proj/load_b");
    EXPECT_EQ(layer_pattern("model/layer3/mlp"), "model/layer*/mlp");
    EXPECT_EQ(layer_pattern("layers/attn"), "layers/attn");      // not a layer number
    EXPECT_EQ(layer_pattern("layer/attn"), "layer/attn");
    EXPECT_EQ(layer_pattern("layer1x/attn"), "layer1x/attn");
    EXPECT_EQ(layer_pattern("gemm/load_a"), "gemm/load_a");
    EXPECT_EQ(layer_pattern(""), "");
    EXPECT_EQ(layer_number("layer31/mlp/down_proj"), 31);
    EXPECT_EQ(layer_number("gemm/load_a"), -1);
}

TEST(Names, ThirtyTwoLayersRollIntoOneName) {
    const std::vector<NameGroup> g = roll_up(layers("mlp/gate_up_proj/wait_data", 32));
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(g[0].pattern, "layer*/mlp/gate_up_proj/wait_data");
    EXPECT_EQ(g[0].members.size(), 32u);
    EXPECT_EQ(g[0].text(), "layer*/mlp/gate_up_proj/wait_data x32");
    // Members in numeric order.
    EXPECT_EQ(g[0].members[2], "layer2/mlp/gate_up_proj/wait_data");
    EXPECT_EQ(g[0].members[10], "layer10/mlp/gate_up_proj/wait_data");
    EXPECT_EQ(g[0].members.back(), "layer31/mlp/gate_up_proj/wait_data");
    EXPECT_EQ(rolled_list(layers("mlp/gate_up_proj/wait_data", 32)), "layer*/mlp/gate_up_proj/wait_data x32");
    EXPECT_EQ(where_text(layers("mlp/gate_up_proj/wait_data", 32)), "layer*/mlp/gate_up_proj/wait_data x32");
    EXPECT_EQ(layer_count(layers("mlp/gate_up_proj/wait_data", 32)), 32u);
}

TEST(Names, MixedNames) {
    std::vector<std::string> v = layers("attn/out_proj/load_a", 32);
    for (const auto& x : layers("attn/out_proj/load_b", 32)) v.push_back(x);
    v.push_back("layer5/attn/softmax/load_x");  // in one layer only: keeps its own name
    v.push_back("lm_head/load_w");               // no layer at all
    v.push_back("");                             // no annotation
    const std::vector<NameGroup> g = roll_up(v);
    ASSERT_EQ(g.size(), 5u);
    EXPECT_EQ(g[0].text(), "");
    EXPECT_EQ(g[1].text(), "layer*/attn/out_proj/load_a x32");
    EXPECT_EQ(g[2].text(), "layer*/attn/out_proj/load_b x32");
    EXPECT_EQ(g[3].text(), "layer5/attn/softmax/load_x");
    EXPECT_EQ(g[4].text(), "lm_head/load_w");
    EXPECT_EQ(rolled_list(v, 1000),
              "(no annotation), layer*/attn/out_proj/load_a x32, layer*/attn/out_proj/load_b x32, layer5/attn/softmax/load_x, lm_head/load_w");
    // Cut to the budget, the rest counted.
    const std::string cut = rolled_list(v, 80);
    EXPECT_LE(cut.size(), 80u);
    EXPECT_EQ(cut, "(no annotation), layer*/attn/out_proj/load_a x32, +3 more");
    // At least one name, however small the budget.
    EXPECT_EQ(rolled_list(v, 1), "(no annotation), +4 more");
    EXPECT_EQ(sorted_names(v).size(), 67u);
}

TEST(Names, WhereText) {
    // One op; several ops of a step in one layer (as before the roll-up); across layers.
    EXPECT_EQ(where_text({"gemm/wait_data"}), "gemm/wait_data");
    EXPECT_EQ(where_text({"layer0/attn/qkv_proj/wait_data", "layer0/mlp/down_proj/wait_data"}), "*/wait_data (2 ops)");
    std::vector<std::string> v = layers("attn/qkv_proj/wait_data", 32);
    for (const auto& x : layers("mlp/down_proj/wait_data", 32)) v.push_back(x);
    EXPECT_EQ(where_text(v), "*/wait_data (2 ops in 32 layers)");
    // Several steps (merge_dma): each step once.
    EXPECT_EQ(where_text({"gemm/load_a", "gemm/load_b"}), "gemm/load_a, gemm/load_b");
    std::vector<std::string> w = layers("attn/qkv_proj/load_b", 4);
    w.push_back("gemm/load_a");
    EXPECT_EQ(where_text(w), "gemm/load_a, layer*/attn/qkv_proj/load_b x4");
    EXPECT_EQ(where_text({""}), "(no annotation)");
}

TEST(Names, Deterministic) {
    std::vector<std::string> v = layers("attn/out_proj/load_a", 32);
    for (const auto& x : layers("mlp/down_proj/load_b", 12)) v.push_back(x);
    v.push_back("gemm/load_a");
    const std::string list = rolled_list(v), where = where_text(v);
    const std::vector<std::string> sorted = sorted_names(v);
    std::mt19937 rng(7);
    for (int k = 0; k < 20; ++k) {
        std::vector<std::string> u = v;
        std::shuffle(u.begin(), u.end(), rng);
        u.insert(u.end(), v.begin(), v.begin() + k);  // repetitions change nothing
        EXPECT_EQ(rolled_list(u), list);
        EXPECT_EQ(where_text(u), where);
        EXPECT_EQ(sorted_names(u), sorted);
    }
    EXPECT_EQ(list, "gemm/load_a, layer*/attn/out_proj/load_a x32, layer*/mlp/down_proj/load_b x12");
}

}  // namespace
}  // namespace xpu::analysis

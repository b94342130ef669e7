#include "analysis/index.h"

#include <algorithm>

namespace xpu::analysis {

RunIndex::RunIndex(const RunData& run) : run_(run) {
    op_of_.resize(run.streams.size());
    dma_of_.resize(run.streams.size());
    slot_.resize(run.streams.size(), 1);
    for (std::size_t s = 0; s < run.streams.size(); ++s) {
        op_of_[s].assign(run.streams[s].code.size(), kNone);
        dma_of_[s].assign(run.streams[s].code.size(), kNone);
        const Stream& st = run.streams[s];
        const double slot = run.meta_number("issue_slot_ps." + std::to_string(st.chip) + "." + std::to_string(st.core), 0);
        slot_[s] = slot > 0 ? static_cast<Tick>(slot) : 1;
    }
    for (std::size_t i = 0; i < run.unit_ops.size(); ++i) op_of_[run.unit_ops[i].stream][run.unit_ops[i].index] = static_cast<std::uint32_t>(i);
    for (std::size_t i = 0; i < run.dmas.size(); ++i) dma_of_[run.dmas[i].stream][run.dmas[i].index] = static_cast<std::uint32_t>(i);
    for (std::size_t u = 0; u < run.units.size(); ++u)
        if (run.units[u].role == Role::Flags && !flags_of_chip_.count(run.units[u].chip))
            flags_of_chip_[run.units[u].chip] = static_cast<std::uint32_t>(u);
    for (std::size_t i = 0; i < run.flags.size(); ++i)
        changes_[(std::uint64_t(run.flags[i].owner) << 16) | run.flags[i].flag].push_back(static_cast<std::uint32_t>(i));
    for (auto& [k, v] : changes_)
        std::stable_sort(v.begin(), v.end(), [&](std::uint32_t a, std::uint32_t b) { return run.flags[a].time < run.flags[b].time; });
}

std::uint32_t RunIndex::flags_unit(int chip) const {
    auto it = flags_of_chip_.find(chip);
    return it == flags_of_chip_.end() ? kNone : it->second;
}

const std::vector<std::uint32_t>& RunIndex::changes(int chip, std::uint16_t flag) const {
    const std::uint32_t owner = flags_unit(chip);
    if (owner == kNone) return none_;
    auto it = changes_.find((std::uint64_t(owner) << 16) | flag);
    return it == changes_.end() ? none_ : it->second;
}

std::uint32_t RunIndex::satisfying_raise(std::uint32_t stream, std::uint64_t index) const {
    const Stream& st = run_.streams[stream];
    const Instruction& in = st.code[index];
    if (in.op != Opcode::SWait) return kNone;
    const auto& ch = changes(st.chip, in.has(kFlag) ? in.flag : 0);
    const Tick t = st.life[index].issue;
    auto it = std::upper_bound(ch.begin(), ch.end(), t, [&](Tick v, std::uint32_t i) { return v < run_.flags[i].time; });
    const Cond cond = in.has(kCond) ? in.cond : Cond::Ge;
    const std::int64_t value = in.has(kValue) ? in.value : 0;
    while (it != ch.begin()) {
        --it;
        const FlagChange& fc = run_.flags[*it];
        if (cond_holds(cond, fc.new_value, value) && !cond_holds(cond, fc.old_value, value)) return *it;
        if (!cond_holds(cond, fc.new_value, value)) return kNone;  // the last change before issue did not satisfy it
    }
    return kNone;
}

}  // namespace xpu::analysis

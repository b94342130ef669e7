// drop_wait: a wait for write-backs that no later instruction reads before the next wait on
// the same flag. Delete it (the later wait still guards the buffer). The estimate: the wait's
// stall, at most what it held back (wait_remedy.cpp: sink_saving).
#include <sstream>

#include "analysis/suggest/finder.h"
#include "analysis/suggest/wait_groups.h"

namespace xpu::analysis {

namespace {

class DropWait : public SuggestionFinder {
public:
    const char* kind() const override { return "drop_wait"; }
    void find(const SuggestContext& sc, std::vector<Suggestion>& out) const override {
        for (auto& [step, g] : group_sinks(sc, kind())) {
            const std::string at = finish_group(g);
            std::ostringstream cause, action;
            cause << g.waits << " waits at " << at << " for write-backs that no later instruction reads before the next wait on the same flag";
            action << "drop the " << g.s.moves.size() << " unnecessary waits (the later wait on the flag still guards the buffer)";
            g.s.cause = cause.str();
            g.s.action = action.str();
            out.push_back(std::move(g.s));
        }
    }
};

}  // namespace

std::unique_ptr<SuggestionFinder> drop_wait_finder() { return std::make_unique<DropWait>(); }

}  // namespace xpu::analysis

// A run's output folder, staged (docs/outputs.md, "How outputs are written"): every file of a
// run goes to a fresh folder beside OUT (`.NAME.staging-PID`), which replaces OUT only when
// the run succeeds; a failed or interrupted run removes its staging folder and leaves the
// previous OUT untouched. A lock file beside OUT (`.NAME.lock`, flock) keeps two runs aimed at
// one folder from mixing their files: the second is refused.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace xpu::platform {

// Why the outputs cannot be written where asked (sim_main exits 6 with the message).
struct OutputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class OutputFolder {
public:
    // `out`: the --out folder as given. `inputs`: the run's input files (--trace, --platform),
    // which must not lie inside OUT (replacing OUT would delete them). `option` names the
    // option in messages ("--out"). Refuses (OutputError) an OUT that is not a folder, that
    // holds files no run writes, that another run holds; creates OUT's parent and the staging
    // folder. Removes staging folders that killed runs left beside OUT.
    OutputFolder(const std::string& out, const std::vector<std::string>& inputs);
    ~OutputFolder();  // discards the staging folder unless committed
    OutputFolder(const OutputFolder&) = delete;
    OutputFolder& operator=(const OutputFolder&) = delete;

    const std::string& out() const { return out_; }       // as given
    const std::string& stage() const { return stage_; }   // where the run writes
    std::string staged(const std::string& name) const;    // stage()/name
    std::string final_path(const std::string& name) const;  // out()/name

    // Replaces OUT by the staging folder (atomically where the kernel can exchange two
    // names; otherwise OUT is moved aside first). OutputError if it cannot.
    void commit();
    // Removes the staging folder (and what it holds). Safe to call more than once, and from
    // another thread than the one writing into it (the writer's next open fails).
    void discard() noexcept;

private:
    std::string out_, parent_, name_, stage_, lock_path_;
    int lock_fd_ = -1;
    bool done_ = false;
};

// Every name a run writes into OUT (and the folders its replays use): what OUT may hold for
// a run to replace it.
bool is_run_output_name(const std::string& name);
// The same but for the waveforms' names: the files of the run itself (stats.json, the log, the
// reports, ...), which --vcd must not name.
bool is_run_file_name(const std::string& name);

}  // namespace xpu::platform

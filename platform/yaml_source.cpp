#include "platform/yaml_source.h"

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

namespace xpu::platform {

namespace {

constexpr std::size_t kMaxDepth = 64;  // platform descriptions nest about 6 deep
// The largest description read: the shipped ones are a few KiB. Bounds what a file (or a
// device such as /dev/zero) can make the loader hold.
constexpr std::size_t kMaxFileBytes = 4u << 20;
// Nodes of the description with every alias expanded: the shipped ones have a few hundred. An
// alias of an alias of ... (a "billion laughs") is refused as soon as the count passes this,
// before anything expands it.
constexpr std::uint64_t kMaxExpandedNodes = 200000;

std::string at(const std::string& file, const YAML::Mark& m) {
    return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// What YAML::Load accepts silently but a strict description must not: a key given twice in a
// mapping (yaml-cpp keeps the first), nesting deeper than kMaxDepth, an alias to a node that
// contains it (a cycle: loading it would recurse for ever), a second document. Checked on the
// parser's event stream, where aliases are not yet expanded.
class StructureCheck : public YAML::EventHandler {
public:
    // `where` renders a position: "FILE:LINE:COL", or the --set argument.
    // `prefix`: the key path of the checked document's root ("" for a file, KEY.PATH of a --set).
    explicit StructureCheck(std::function<std::string(const YAML::Mark&)> where, std::string prefix = "")
        : at_(std::move(where)), prefix_(std::move(prefix)) {}

    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark& m, YAML::anchor_t) override {
        static const std::string null_key = "~";
        item(m, &null_key);
        grow(m, 1);
    }
    void OnAlias(const YAML::Mark& m, YAML::anchor_t anchor) override {
        for (const auto& f : stack_)
            if (f.anchor && f.anchor == anchor)
                throw ConfigError(at_(m) + ": " + path() + ": this alias names a node that contains it "
                                  "(a cycle); expected an alias of a node defined before it");
        item(m, nullptr);
        auto it = sizes_.find(anchor);
        grow(m, it == sizes_.end() ? 1 : it->second);
    }
    void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t a, const std::string& v) override {
        item(m, &v);
        if (a) sizes_[a] = 1;
        grow(m, 1);
    }
    void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
        open(m, false, a);
    }
    void OnSequenceEnd() override { close(); }
    void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
        open(m, true, a);
    }
    void OnMapEnd() override { close(); }

private:
    struct Frame {
        bool map = false;
        YAML::anchor_t anchor = 0;
        bool expect_key = true;
        std::string key;          // map: the current key; sequence: the current index
        std::size_t index = 0;
        std::map<std::string, YAML::Mark> keys;
        std::uint64_t size = 1;   // nodes inside, aliases expanded (itself included)
    };

    // n more nodes (expanded) in the current collection.
    void grow(const YAML::Mark& m, std::uint64_t n) {
        expanded_ += n;
        if (!stack_.empty()) stack_.back().size += n;
        if (expanded_ > kMaxExpandedNodes)
            throw ConfigError(at_(m) + ": " + path() + ": with its aliases expanded the description holds more than " +
                              std::to_string(kMaxExpandedNodes) + " nodes (aliases of aliases?); expected a platform description");
    }
    void close() {
        Frame f = std::move(stack_.back());
        stack_.pop_back();
        if (f.anchor) sizes_[f.anchor] = f.size;
        if (!stack_.empty()) stack_.back().size += f.size;
    }

    std::string path() const {
        std::string p = prefix_;
        for (const auto& f : stack_) {
            if (f.map) p += (p.empty() ? "" : ".") + f.key;
            else p += "[" + std::to_string(f.index ? f.index - 1 : 0) + "]";
        }
        return p.empty() ? "(top level)" : p;
    }
    // A node (scalar, alias or collection) in the current collection: a key or a value.
    void item(const YAML::Mark& m, const std::string* scalar) {
        if (stack_.empty()) return;
        Frame& f = stack_.back();
        if (!f.map) {
            ++f.index;
            return;
        }
        if (!f.expect_key) {
            f.expect_key = true;
            return;
        }
        f.expect_key = false;
        f.key = scalar ? *scalar : "?";
        if (!scalar) return;
        auto [it, fresh] = f.keys.emplace(*scalar, m);
        if (!fresh)
            throw ConfigError(at_(m) + ": " + path() + ": key given twice in one mapping (first at " +
                              std::to_string(it->second.line + 1) + ":" + std::to_string(it->second.column + 1) +
                              "); expected each key once");
    }
    void open(const YAML::Mark& m, bool map, YAML::anchor_t anchor) {
        item(m, nullptr);
        if (stack_.size() >= kMaxDepth)
            throw ConfigError(at_(m) + ": " + path() + ": nested more than " + std::to_string(kMaxDepth) +
                              " levels deep; expected a platform description");
        Frame f;
        f.map = map;
        f.anchor = anchor;
        stack_.push_back(std::move(f));
        ++expanded_;
    }

    std::function<std::string(const YAML::Mark&)> at_;
    std::string prefix_;
    std::vector<Frame> stack_;
    std::map<YAML::anchor_t, std::uint64_t> sizes_;  // anchor -> its node's expanded size
    std::uint64_t expanded_ = 0;
};

}  // namespace

YamlSource YamlSource::load(const std::string& file) {
    std::ifstream f(file, std::ios::binary);
    if (!f) throw ConfigError(file + ": cannot open the platform description");
    // Read in chunks up to one byte past the limit: the buffer is as large as the file, not as
    // the limit (a 4 MiB zero-filled buffer per load cost the YAML fuzz target most of its time).
    std::string text;
    char chunk[16384];
    while (text.size() <= kMaxFileBytes) {
        f.read(chunk, sizeof chunk);
        const std::streamsize got = f.gcount();
        if (got <= 0) break;
        text.append(chunk, static_cast<std::size_t>(got));
    }
    if (text.size() > kMaxFileBytes)
        throw ConfigError(file + ": more than " + std::to_string(kMaxFileBytes >> 20) +
                          " MiB: expected a platform description (a text file of a few KiB)");
    YamlSource s;
    s.file_ = file;
    try {
        std::istringstream in(text);
        YAML::Parser parser(in);
        auto where = [&](const YAML::Mark& m) { return at(file, m); };
        StructureCheck check(where);
        if (parser.HandleNextDocument(check)) {
            StructureCheck rest(where);
            if (parser.HandleNextDocument(rest))
                throw ConfigError(file + ": more than one YAML document (a second '---'); expected one platform description");
        }
        s.root_ = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        std::ostringstream os;
        os << file;
        if (e.mark.line >= 0) os << ":" << e.mark.line + 1 << ":" << e.mark.column + 1;
        os << ": YAML syntax error: " << e.msg;
        throw ConfigError(os.str());
    }
    if (!s.root_.IsMap())
        throw ConfigError(file + ":1:1: expected a YAML mapping at the top level (a platform description)");
    return s;
}

bool YamlSource::from_set(const YAML::Node& n) const {
    for (const auto& sn : set_nodes_)
        if (sn.first.is(n)) return true;
    return false;
}

std::string YamlSource::where(const YAML::Node& n) const {
    for (const auto& [node, arg] : set_nodes_)
        if (node.is(n)) return "--set '" + arg + "'";
    std::ostringstream os;
    os << file_;
    if (n.IsDefined() && n.Mark().line >= 0) os << ":" << n.Mark().line + 1 << ":" << n.Mark().column + 1;
    return os.str();
}

void YamlSource::fail(const YAML::Node& n, const std::string& path, const std::string& what) const {
    throw ConfigError(where(n) + ": " + path + ": " + what);
}

void YamlSource::apply_set(const std::string& assignment) {
    auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw ConfigError("--set '" + assignment + "': expected KEY.PATH=VALUE");
    std::string path = assignment.substr(0, eq), value = assignment.substr(eq + 1);
    YAML::Node v;
    try {
        std::istringstream in(value);
        YAML::Parser parser(in);
        StructureCheck check([&](const YAML::Mark&) { return "--set '" + assignment + "'"; }, path);
        parser.HandleNextDocument(check);
        v = YAML::Load(value);
    } catch (const YAML::Exception& e) {
        throw ConfigError("--set '" + assignment + "': the value is not valid YAML: " + e.msg);
    }
    if (!v.IsDefined() || v.IsNull()) v = YAML::Node(value);
    // Walk the path with node references (yaml-cpp nodes are handles).
    YAML::Node cur = root_;
    std::string done;
    std::size_t pos = 0;
    while (true) {
        std::size_t dot = path.find('.', pos);
        std::string key = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
        if (key.empty()) throw ConfigError("--set '" + assignment + "': empty key in the path");
        // KEY or KEY[N], N decimal digits only ("[1abc]" is not 1, "[-1]" not an index).
        long index = -1;
        auto br = key.find('[');
        if (br != std::string::npos || key.find(']') != std::string::npos) {
            const std::string digits = br == std::string::npos || key.back() != ']' ? "" : key.substr(br + 1, key.size() - br - 2);
            if (br == 0 || digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos)
                throw ConfigError("--set '" + assignment + "': bad list index in '" + key +
                                  "' (expected KEY[N] with N a number, e.g. chip.address_map[1].base)");
            index = std::stol(digits);
            key = key.substr(0, br);
        }
        bool last = dot == std::string::npos;
        std::string here = done.empty() ? key : done + "." + key;
        if (!cur.IsMap()) throw ConfigError("--set '" + assignment + "': '" + done + "' is not a mapping");
        if (index < 0 && last) {
            cur[key] = v;
            set_nodes_.emplace_back(cur[key], assignment);
            return;
        }
        YAML::Node next = cur[key];
        if (!next.IsDefined()) throw ConfigError("--set '" + assignment + "': no key '" + here + "' in " + file_);
        if (index >= 0) {
            if (!next.IsSequence() || static_cast<std::size_t>(index) >= next.size())
                throw ConfigError("--set '" + assignment + "': '" + here + "' has no element [" + std::to_string(index) + "]" +
                                  (next.IsSequence() ? " (it has " + std::to_string(next.size()) + ")" : " (it is not a list)"));
            const std::size_t i = static_cast<std::size_t>(index);
            if (last) {
                next[i] = v;
                set_nodes_.emplace_back(next[i], assignment);
                return;
            }
            // reset, not assignment: a yaml-cpp Node's operator= writes through to the node it
            // refers to (it would replace the list by its element).
            YAML::Node element = next[i];
            next.reset(element);
            here += "[" + std::to_string(index) + "]";
        }
        cur.reset(next);
        done = here;
        pos = dot + 1;
    }
}

}  // namespace xpu::platform

#include "tests/fuzz/finding_log.h"

#include <fstream>
#include <set>

#include "sim/engine/random.h"

namespace gcsim::fuzz {

namespace fs = std::filesystem;

std::vector<KnownFinding> read_known_findings(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("gcsim_fuzz: cannot read " + file.string());
  std::vector<KnownFinding> known;
  for (std::string line; std::getline(in, line);) {
    const size_t hash = line.find('#');
    std::string pattern = line.substr(0, hash);
    while (!pattern.empty() && std::isspace(static_cast<unsigned char>(pattern.back()))) pattern.pop_back();
    if (pattern.empty()) continue;
    std::string note = hash == std::string::npos ? "" : line.substr(hash + 1);
    while (!note.empty() && note.front() == ' ') note.erase(0, 1);
    known.push_back({pattern, note});
  }
  return known;
}

FindingLog::FindingLog(fs::path out_dir, std::vector<KnownFinding> known, bool strict)
    : out_dir_(std::move(out_dir)), known_(std::move(known)), strict_(strict) {
  if (!out_dir_.empty()) fs::create_directories(out_dir_);
}

std::pair<FindingLog::Entry*, bool> FindingLog::record(const Verdict& verdict,
                                                       const std::string& input) {
  auto [it, fresh] = entries_.try_emplace(verdict.signature);
  Entry& e = it->second;
  ++e.count;
  if (!fresh) return {&e, false};
  e.verdict = verdict;
  for (const auto& k : known_) {
    if (verdict.signature.find(k.pattern) != std::string::npos) {
      e.known = &k;
      break;
    }
  }
  e.fails = !e.known && (strict_ || !verdict.is_resource());
  replace_input(e, input);
  return {&e, true};
}

void FindingLog::replace_input(Entry& e, const std::string& input) {
  e.input = input;
  if (out_dir_.empty()) return;
  // Named by kind and a hash of the signature: stable across sessions.
  char name[64];
  std::snprintf(name, sizeof name, "%s-%08llx.yaml", kind_name(e.verdict.kind),
                static_cast<unsigned long long>(sim::fnv1a(e.verdict.signature) & 0xffffffffULL));
  const fs::path path = out_dir_ / name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(input.data(), static_cast<std::streamsize>(input.size()));
  e.file = path.string();
}

int FindingLog::failing() const {
  int n = 0;
  for (const auto& [sig, e] : entries_) n += e.fails ? 1 : 0;
  return n;
}

std::string FindingLog::summary() const {
  std::string s;
  std::set<const KnownFinding*> seen;
  for (const auto& [sig, e] : entries_) {
    if (e.known) seen.insert(e.known);
    const std::string shown = sig.size() > 200 ? sig.substr(0, 200) + "..." : sig;
    s += std::string(e.fails ? "FAIL " : e.known ? "known " : "info ") + shown + "  x" +
         std::to_string(e.count) + (e.file.empty() ? "" : "  " + e.file) + "\n";
  }
  for (const auto& k : known_) {
    if (!seen.count(&k)) s += "(known, not hit this session) " + k.pattern + "\n";
  }
  return s;
}

}  // namespace gcsim::fuzz

// The findings of one fuzz session: one entry per distinct signature, the
// first input that showed it (written to a folder when one is given), how
// often it recurred, and whether it is a known open bug. Known bugs are
// listed in a text file, one signature substring per line ("# ..." starts a
// comment), so that a finding already routed to its owner does not fail CI
// while it is open; once fixed, its line goes.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/fuzz/sandbox.h"

namespace gcsim::fuzz {

struct KnownFinding {
  std::string pattern;  // a substring of the signature
  std::string note;     // what it is, who fixes it
};

std::vector<KnownFinding> read_known_findings(const std::filesystem::path& file);

class FindingLog {
 public:
  struct Entry {
    Verdict verdict;         // the first occurrence
    std::string input;       // its input
    std::string file;        // where the input was written, "" if not
    int count = 0;           // occurrences this session
    const KnownFinding* known = nullptr;
    bool fails = false;      // counts against the session's exit status
  };

  // `out_dir` empty: nothing is written. `strict`: resource findings
  // (timeouts, out-of-memory) fail the session too.
  FindingLog(std::filesystem::path out_dir, std::vector<KnownFinding> known, bool strict);

  // Records a finding; returns its entry and whether it was new.
  std::pair<Entry*, bool> record(const Verdict& verdict, const std::string& input);
  // Replaces an entry's saved input (after minimization).
  void replace_input(Entry& entry, const std::string& input);

  const std::map<std::string, Entry>& entries() const { return entries_; }
  int failing() const;
  // A table of the findings, one line each, and the known ones not seen.
  std::string summary() const;

 private:
  std::filesystem::path out_dir_;
  std::vector<KnownFinding> known_;
  bool strict_;
  std::map<std::string, Entry> entries_;  // by signature
};

}  // namespace gcsim::fuzz

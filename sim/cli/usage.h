// What `gcsim` says about its commands: the one-screen overview, each
// command's usage line (printed alone after an option error) and its
// --help text. One table, so the three never disagree.
#pragma once

#include <string>
#include <vector>

namespace gcsim::cli {

struct CommandHelp {
  std::string name;                   // "run"
  std::vector<std::string> synopses;  // "run CONFIG.yaml [-s key=value]...", one per form
  std::string summary;                // one line: what it does
  std::string options;                // the options, one per line, for --help
};

// The commands in the order the overview lists them.
const std::vector<CommandHelp>& command_helps();
// nullptr when `name` is not a command.
const CommandHelp* find_command_help(const std::string& name);

// "usage: gcsim run CONFIG.yaml ...\n" (each form on its line) and a pointer
// to --help: what an option error prints below its message.
std::string usage_lines(const CommandHelp& c);
// The command's full --help: usage, summary, options.
std::string help_text(const CommandHelp& c);
// Every command with its summary, and examples (`gcsim --help`).
std::string overview();

// "gcsim 0.1.0" (CMake's project version).
std::string version_line();

}  // namespace gcsim::cli

// `gcsim quiz [--topic T] [--seed N] [--no-verify] [--answers-template]` prints
// an interview-style question drawn from the presets, its worked answer and
// the simulator's check of it; `gcsim quiz --check ANSWERS.yaml` grades a
// user's numbers (workloads/quiz/). The simulated values come from running
// the quiz's configs through load_scenario and run_command, as `gcsim run`.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "workloads/quiz/quiz.h"

namespace gcsim::cli {

// Every model and GPU preset compiled into the binary.
workloads::quiz::PresetBook load_preset_book();

// Runs each of the quiz's verification configs and fills in the simulated
// value of every quantity that names one.
void verify_quiz(workloads::quiz::Quiz& quiz);

// Exit status 0; `--check` 3 when some answers are wrong or unanswered; 2
// on bad input (ConfigError propagates to main).
int quiz_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace gcsim::cli

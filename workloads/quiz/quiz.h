// An interview-style question drawn from the presets by a seed, with its
// worked answer (each step a formula, then its number) and the configs the
// simulator runs to check that answer. The same topic and seed always give
// the same quiz, byte for byte: every choice comes from one sim::RandomStream
// per topic and every number is printed with a fixed format.
//
// This library only builds questions and closed-form answers; sim/cli's
// `gcsim quiz` runs the verification configs through the same loader and
// runner as `gcsim run` and fills in the simulated values.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/gpu/gpu_spec.h"
#include "workloads/models/model_spec.h"

namespace gcsim::workloads::quiz {

enum class Topic { training, inference, network, reliability };

const char* topic_name(Topic t);
std::optional<Topic> parse_topic(const std::string& name);
const std::vector<std::string>& topic_names();

// One config for the simulator: `yaml` is what `gcsim run` would read.
struct Verification {
  std::string name;  // e.g. "ring", "serving"
  std::string yaml;
};

// One number the user is asked for.
struct Quantity {
  std::string key;   // key in the answers file, e.g. "peak_memory_gib"
  std::string what;  // one line: what is asked
  std::string unit;  // "GB", "ms", "h", ... (the answer is in this unit)
  double estimate = 0;  // the worked answer, in `unit`
  // Relative tolerance of a user's number against the worked answer, and
  // why that much (a closed form leaves only rounding; a rate estimate
  // leaves the efficiency the user assumed).
  double tolerance = 0.05;
  std::string tolerance_why;
  // Where the simulator's value is: index into Quiz::verifications and a
  // JSON pointer into that run's summary.json ("/results/0/time_s"),
  // multiplied by `sim_scale` to reach `unit`. verification < 0: no
  // simulated value (the quantity is a closed form or a choice).
  int verification = -1;
  std::string sim_pointer;
  double sim_scale = 1.0;
  // Relative tolerance against the simulated value: wider, since the
  // simulator models what the closed form leaves out (protocols, kernel
  // efficiency, overlap).
  double sim_tolerance = 0.25;
  std::optional<double> simulated;  // filled in by the verifier
  // Where another check stands in for the simulation (a Monte Carlo of the
  // same hashing), its value and name.
  std::optional<double> check_value;
  std::string check_name;
};

// A user's answers by key (the numbers of the answers file).
using Answers = std::map<std::string, double>;

struct Quiz {
  Topic topic = Topic::network;
  uint64_t seed = 0;
  std::string title;                    // one line
  std::string question;                 // markdown paragraphs
  std::vector<std::string> steps;       // worked answer, one derivation step each
  std::vector<Quantity> quantities;     // what is graded
  std::vector<Verification> verifications;
  // What the simulator models that the closed form leaves out, printed
  // under the comparison so a large difference has its reason beside it.
  std::string sim_note;
  // Keys graded by a rule rather than a number (a parallel layout): key ->
  // one-line description for the template. `judge` says why a choice is
  // wrong ("" when it is acceptable).
  std::map<std::string, std::string> choice_keys;
  std::function<std::string(const Answers&)> judge;
};

// The presets a quiz may draw from, loaded by the caller (sim/cli owns
// YAML). Names are preset names, iteration in name order.
struct PresetBook {
  std::map<std::string, workloads::models::ModelSpec> models;
  std::map<std::string, gcsim::models::gpu::GpuSpec> gpus;
};

Quiz make_quiz(Topic topic, uint64_t seed, const PresetBook& presets);

// Builders per topic (one file each).
Quiz make_training_quiz(uint64_t seed, const PresetBook& presets);
Quiz make_inference_quiz(uint64_t seed, const PresetBook& presets);
Quiz make_network_quiz(uint64_t seed, const PresetBook& presets);
Quiz make_reliability_quiz(uint64_t seed, const PresetBook& presets);

// Appends a question to `q` (fields as in Quantity). A null `sim_pointer`
// means no simulated value (verification is then ignored).
void add_quantity(Quiz& q, const char* key, const char* what, const char* unit, double estimate,
                  double tolerance, const char* tolerance_why, int verification,
                  const char* sim_pointer, double sim_scale, double sim_tolerance = 0.25);

// The quiz as markdown: question, worked answer, the simulator's check (the
// simulated column empty until filled) and the answers template.
std::string render_quiz(const Quiz& q);
// The answers file a user fills in, every key with its unit as a comment.
std::string answers_template(const Quiz& q);

// printf-style formatting in one place, so every number prints the same way.
std::string fmt(const char* format, double v);
// A number with 4 significant digits ("3.517e+11" or "61.25").
std::string num(double v);

}  // namespace gcsim::workloads::quiz

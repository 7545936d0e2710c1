#include "workloads/quiz/quiz.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace gcsim::workloads::quiz {

const char* topic_name(Topic t) {
  switch (t) {
    case Topic::training: return "training";
    case Topic::inference: return "inference";
    case Topic::network: return "network";
    case Topic::reliability: return "reliability";
  }
  return "?";
}

const std::vector<std::string>& topic_names() {
  static const std::vector<std::string> names{"training", "inference", "network", "reliability"};
  return names;
}

std::optional<Topic> parse_topic(const std::string& name) {
  for (Topic t : {Topic::training, Topic::inference, Topic::network, Topic::reliability}) {
    if (name == topic_name(t)) return t;
  }
  return std::nullopt;
}

Quiz make_quiz(Topic topic, uint64_t seed, const PresetBook& presets) {
  switch (topic) {
    case Topic::training: return make_training_quiz(seed, presets);
    case Topic::inference: return make_inference_quiz(seed, presets);
    case Topic::network: return make_network_quiz(seed, presets);
    case Topic::reliability: return make_reliability_quiz(seed, presets);
  }
  throw std::logic_error("unknown quiz topic");
}

std::string fmt(const char* format, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string num(double v) {
  // Whole numbers (bytes per token, blocks) print exactly; others with 4
  // significant digits.
  if (v == std::floor(v) && std::fabs(v) < 1e12) return fmt("%.0f", v);
  return fmt("%.4g", v);
}

namespace {

std::string signed_percent(double estimate, double simulated) {
  if (estimate == 0) return "-";
  return fmt("%+.1f%%", (simulated - estimate) / std::fabs(estimate) * 100.0);
}

}  // namespace

std::string answers_template(const Quiz& q) {
  std::string t = "topic: " + std::string(topic_name(q.topic)) + "\n";
  t += "seed: " + std::to_string(q.seed) + "\n";
  t += "answers:\n";
  for (const auto& [key, what] : q.choice_keys) t += "  " + key + ":    # " + what + "\n";
  for (const auto& x : q.quantities) t += "  " + x.key + ":    # " + x.what + " (" + x.unit + ")\n";
  return t;
}

void add_quantity(Quiz& q, const char* key, const char* what, const char* unit, double estimate,
                  double tolerance, const char* tolerance_why, int verification,
                  const char* sim_pointer, double sim_scale, double sim_tolerance) {
  Quantity x;
  x.key = key;
  x.what = what;
  x.unit = unit;
  x.estimate = estimate;
  x.tolerance = tolerance;
  x.tolerance_why = tolerance_why;
  x.verification = sim_pointer ? verification : -1;
  x.sim_pointer = sim_pointer ? sim_pointer : "";
  x.sim_scale = sim_scale;
  x.sim_tolerance = sim_tolerance;
  q.quantities.push_back(std::move(x));
}

std::string render_quiz(const Quiz& q) {
  std::string s = "# gcsim quiz: " + std::string(topic_name(q.topic)) + ", seed " +
                  std::to_string(q.seed) + "\n\n## " + q.title + "\n\n" + q.question + "\n";
  s += "\n## Worked answer\n\n";
  for (size_t i = 0; i < q.steps.size(); ++i) {
    s += std::to_string(i + 1) + ". " + q.steps[i] + "\n";
  }
  s += "\n## The simulator's check\n\n";
  if (!q.verifications.empty()) {
    s += "Simulated with the same loader and runner as `gcsim run`:";
    for (const auto& v : q.verifications) s += " `" + v.name + "`";
    s += " (configs below).\n\n";
  }
  s += "| key | estimate | simulated | difference | unit |\n|---|---|---|---|---|\n";
  for (const auto& x : q.quantities) {
    std::string sim = "-", diff = "-";
    if (x.simulated) {
      sim = num(*x.simulated);
      diff = signed_percent(x.estimate, *x.simulated);
    } else if (x.check_value) {
      sim = num(*x.check_value) + " (" + x.check_name + ")";
      diff = signed_percent(x.estimate, *x.check_value);
    }
    s += "| " + x.key + " | " + num(x.estimate) + " | " + sim + " | " + diff + " | " + x.unit +
         " |\n";
  }
  if (!q.sim_note.empty()) s += "\n" + q.sim_note + "\n";
  for (const auto& v : q.verifications) {
    s += "\n`" + v.name + "` config:\n\n```yaml\n" + v.yaml + "```\n";
  }
  s += "\n## Your answers\n\nFill in and grade with `gcsim quiz --check ANSWERS.yaml`:\n\n```yaml\n" +
       answers_template(q) + "```\n";
  return s;
}

}  // namespace gcsim::workloads::quiz

#include "workloads/quiz/quiz_grader.h"

#include <cmath>

namespace gcsim::workloads::quiz {

std::string answer_out_of_domain(const Quantity& x, double answer) {
  if (!std::isfinite(answer)) return "must be a finite number";
  if (x.unit == "probability" || x.unit == "fraction") {
    if (answer < 0.0 || answer > 1.0) return "a " + x.unit + " lies in [0, 1]";
    return "";
  }
  if (answer < 0.0) return "cannot be negative (" + x.unit + ")";
  return "";
}

bool within(double answer, double ref, double tolerance) {
  return std::fabs(answer - ref) <= tolerance * std::fabs(ref);
}

Grade grade(const Quiz& q, const Answers& answers) {
  Grade g;
  for (const auto& x : q.quantities) {
    GradeRow row;
    row.key = x.key;
    row.estimate = x.estimate;
    row.reference = x.simulated ? x.simulated : x.check_value;
    if (auto it = answers.find(x.key); it != answers.end()) {
      row.answer = it->second;
      row.near_estimate = within(it->second, x.estimate, x.tolerance);
      row.near_reference = row.reference && within(it->second, *row.reference, x.sim_tolerance);
    }
    g.points += row.pass() ? 1 : 0;
    g.rows.push_back(row);
  }
  g.total = static_cast<int>(q.quantities.size());
  if (q.judge) {
    g.has_choice = true;
    ++g.total;
    for (const auto& [key, what] : q.choice_keys) g.choice_answered |= answers.count(key) > 0;
    g.choice_problem = g.choice_answered ? q.judge(answers) : "not answered";
    if (g.choice_problem.empty()) ++g.points;
  }
  return g;
}

std::string render_grade(const Quiz& q, const Grade& g) {
  std::string s = "# gcsim quiz --check: " + std::string(topic_name(q.topic)) + ", seed " +
                  std::to_string(q.seed) + "\n\n## " + q.title + "\n\n";
  s += "| key | yours | worked answer | simulated | verdict |\n|---|---|---|---|---|\n";
  if (g.has_choice) {
    std::string yours;
    for (const auto& [key, what] : q.choice_keys) (void)what, yours += key + " ";
    s += "| layout (" + yours.substr(0, yours.size() - 1) + ") | " +
         (g.choice_answered ? "given" : "-") + " | must fit | - | " +
         (g.choice_problem.empty() ? "pass" : "fail: " + g.choice_problem) + " |\n";
  }
  for (size_t i = 0; i < g.rows.size(); ++i) {
    const auto& row = g.rows[i];
    const auto& x = q.quantities[i];
    const std::string ref =
        row.reference ? num(*row.reference) + " +-" + fmt("%.0f%%", x.sim_tolerance * 100) : "-";
    std::string verdict = "not answered";
    if (row.answer) {
      verdict = row.near_estimate && row.near_reference ? "pass (both)"
                : row.near_estimate                     ? "pass (worked answer)"
                : row.near_reference                    ? "pass (simulated)"
                                                        : "fail";
    }
    s += "| " + row.key + " (" + x.unit + ") | " + (row.answer ? num(*row.answer) : "-") + " | " +
         num(row.estimate) + " +-" + fmt("%.0f%%", x.tolerance * 100) + " | " + ref + " | " +
         verdict + " |\n";
  }
  s += "\nTolerances:\n";
  for (const auto& x : q.quantities) {
    s += "- " + x.key + ": " + x.tolerance_why;
    if (x.simulated || x.check_value) {
      s += "; against " + (x.simulated ? std::string("the simulation") : x.check_name) + " " +
           fmt("%.0f%%", x.sim_tolerance * 100);
    }
    s += "\n";
  }
  s += "\nScore: " + std::to_string(g.points) + " / " + std::to_string(g.total) + "\n";
  return s;
}

}  // namespace gcsim::workloads::quiz

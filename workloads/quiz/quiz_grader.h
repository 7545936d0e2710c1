// Grades a user's answers to a quiz: each number against the worked answer
// (the quantity's own tolerance) and against the simulated value (a wider
// tolerance, since the simulator models what the closed form leaves out).
// Within either counts: both are defensible answers to the question. A
// layout choice (training's tp/pp/dp) scores when it is possible and fits.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "workloads/quiz/quiz.h"

namespace gcsim::workloads::quiz {

struct GradeRow {
  std::string key;
  std::optional<double> answer;  // absent: not answered
  double estimate = 0;
  std::optional<double> reference;  // simulated value, or the stand-in check
  bool near_estimate = false;
  bool near_reference = false;
  bool pass() const { return near_estimate || near_reference; }
};

struct Grade {
  std::vector<GradeRow> rows;
  bool has_choice = false;
  bool choice_answered = false;
  std::string choice_problem;  // "" when the layout is acceptable
  int points = 0;
  int total = 0;
  bool all_right() const { return points == total; }
};

// Why `answer` cannot be an answer to `x` at all ("" when it can): a
// probability or fraction lies in [0, 1], every other quantity of the
// quizzes (bytes, times, counts, rates) is not negative, and none is
// infinite or NaN. Graded, 1.5 would only read as "fail"; it is bad input.
std::string answer_out_of_domain(const Quantity& x, double answer);

// |answer - ref| <= tolerance x |ref|.
bool within(double answer, double ref, double tolerance);

Grade grade(const Quiz& q, const Answers& answers);

// The table (key, yours, worked answer +- tolerance, simulated +- tolerance,
// verdict), the tolerances' reasons, and the score line.
std::string render_grade(const Quiz& q, const Grade& g);

}  // namespace gcsim::workloads::quiz

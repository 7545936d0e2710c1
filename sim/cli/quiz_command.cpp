#include "sim/cli/quiz_command.h"

#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "sim/scenario/gpu_spec_loader.h"
#include "sim/scenario/model_spec_loader.h"
#include "sim/scenario/presets.h"
#include "sim/cli/run_command.h"
#include "sim/config/config_error.h"
#include "sim/config/config_reader.h"
#include "sim/engine/random.h"
#include "workloads/quiz/quiz_grader.h"

namespace gcsim::cli {

namespace fs = std::filesystem;
namespace po = boost::program_options;
namespace wq = workloads::quiz;
using sim::config::ConfigError;
using sim::config::ConfigReader;
using sim::config::ConfigSource;
using sim::config::Json;

workloads::quiz::PresetBook load_preset_book() {
  wq::PresetBook book;
  auto source = std::make_shared<ConfigSource>();
  ConfigReader nowhere(YAML::Node(), "", source, nullptr);
  for (const auto& name : preset_names("models")) {
    book.models[name] = load_model_preset(name, nowhere, "model");
  }
  for (const auto& name : preset_names("hardware")) {
    book.gpus[name] = load_gpu_preset(name, nowhere, "gpu");
  }
  return book;
}

namespace {

constexpr int kSomeWrong = 3;  // `quiz --check`: answers graded, not all right

// A private scratch folder for the verification configs and their outputs,
// removed when the quiz is done.
Json run_verification(const wq::Verification& v, const fs::path& dir) {
  const fs::path config = dir / (v.name + ".yaml");
  {
    std::ofstream f(config);
    if (!f) throw std::runtime_error("cannot write " + config.string());
    f << v.yaml;
  }
  RunOptions options;
  options.out_dir = (dir / v.name).string();
  options.progress = false;
  std::ostringstream discard;
  try {
    run_command(config.string(), options, discard);
  } catch (const ConfigError& e) {
    // The quiz wrote this config: a bad one is gcsim's bug, not the user's.
    throw std::runtime_error("the quiz's `" + v.name + "` config did not load: " + e.what());
  }
  std::ifstream in(dir / v.name / "summary.json");
  return Json::parse(in);
}

}  // namespace

void verify_quiz(wq::Quiz& quiz) {
  if (quiz.verifications.empty()) return;
  RunDirectory dir("", "gcsim-quiz-");
  std::vector<Json> summaries;
  for (const auto& v : quiz.verifications) summaries.push_back(run_verification(v, dir.path()));
  for (auto& x : quiz.quantities) {
    if (x.verification < 0) continue;
    const Json& s = summaries.at(static_cast<size_t>(x.verification));
    const Json::json_pointer ptr(x.sim_pointer);
    if (!s.contains(ptr) || !s.at(ptr).is_number()) {
      throw std::runtime_error("quiz: summary.json of `" +
                               quiz.verifications[static_cast<size_t>(x.verification)].name +
                               "` has no number at " + x.sim_pointer);
    }
    x.simulated = s.at(ptr).get<double>() * x.sim_scale;
  }
}

namespace {

// Reads ANSWERS.yaml: {topic, seed, answers: {key: number}}; every problem
// is a ConfigError naming file, line and key.
wq::Quiz read_answers(const std::string& path, const wq::PresetBook& book, wq::Answers& answers) {
  auto source = std::make_shared<ConfigSource>();
  YAML::Node root = sim::config::load_yaml_file(path, {}, *source, "answers");
  Json resolved = Json::object();
  ConfigReader top(root, "", source, &resolved);
  const std::string topic = top.get_choice("topic", wq::topic_names(), std::nullopt,
                                           "the quiz's topic, as `gcsim quiz` printed it");
  const int64_t seed = top.get_int_in("seed", std::nullopt, "the quiz's seed", 0);
  wq::Quiz q = wq::make_quiz(*wq::parse_topic(topic), static_cast<uint64_t>(seed), book);
  if (!top.has("answers")) {
    top.allow("answers");
    top.finish();  // a misspelt `answers` is named, with the suggestion
  }
  ConfigReader a = top.child("answers", "your numbers, by the keys of the quiz's template", true);
  // Every key of this quiz is known, so a misspelt one gets a suggestion.
  for (const auto& [key, what] : q.choice_keys) a.allow(key);
  for (const auto& x : q.quantities) a.allow(x.key);
  // A key left empty, as the template prints it, is not answered.
  const auto answered = [&a](const std::string& key, const std::string& what) {
    const YAML::Node n = a.raw(key, what.c_str());
    return n.IsDefined() && !n.IsNull();
  };
  for (const auto& [key, what] : q.choice_keys) {
    if (!answered(key, what)) continue;
    const int64_t v = a.get_int(key, std::nullopt, what.c_str());
    if (v < 1) a.fail(key, "a parallel size is a positive integer, got " + std::to_string(v));
    answers[key] = static_cast<double>(v);
  }
  for (const auto& x : q.quantities) {
    if (!answered(x.key, x.what)) continue;
    const double v = a.get_double(x.key, std::nullopt, x.what.c_str());
    const std::string why = wq::answer_out_of_domain(x, v);
    if (!why.empty()) a.fail(x.key, why + ", got " + wq::num(v));
    answers[x.key] = v;
  }
  a.finish();  // unknown keys: an error with the nearest key of this quiz
  top.finish();
  return q;
}

wq::Topic default_topic(uint64_t seed) {
  sim::RandomStream r(seed, "quiz/topic");
  const auto& names = wq::topic_names();
  return *wq::parse_topic(names[static_cast<size_t>(r.uniform_int(names.size()))]);
}

}  // namespace

int quiz_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description opts("gcsim quiz options");
  int64_t seed = 1;
  std::string topic, check;
  opts.add_options()("topic", po::value<std::string>(&topic),
                     "training | inference | network | reliability (default: drawn from the seed)")(
      "seed", po::value<int64_t>(&seed), "quiz number (default 1)")(
      "check", po::value<std::string>(&check), "grade ANSWERS.yaml")(
      "answers-template", po::bool_switch(), "print only the answers file to fill in")(
      "no-verify", po::bool_switch(), "skip the simulation (worked answer only)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  const bool verify = !vm["no-verify"].as<bool>();
  const wq::PresetBook book = load_preset_book();

  if (!check.empty()) {
    if (vm.count("topic") || vm.count("seed")) {
      throw po::error("--check reads the topic and seed from the answers file");
    }
    wq::Answers answers;
    wq::Quiz q = read_answers(check, book, answers);
    if (verify) verify_quiz(q);
    const wq::Grade g = wq::grade(q, answers);
    out << wq::render_grade(q, g);
    // A CI script asks "all right?": 0 yes, 3 graded but some wrong or
    // unanswered (2 stays bad input, 1 an internal error).
    return g.all_right() ? 0 : kSomeWrong;
  }
  if (seed < 0) throw po::error("--seed must not be negative");
  wq::Topic t = default_topic(static_cast<uint64_t>(seed));
  if (!topic.empty()) {
    const auto parsed = wq::parse_topic(topic);
    if (!parsed) {
      throw ConfigError("command line", 0, "--topic",
                        "unknown topic '" + topic + "'; one of training, inference, network, "
                        "reliability");
    }
    t = *parsed;
  }
  wq::Quiz q = wq::make_quiz(t, static_cast<uint64_t>(seed), book);
  if (vm["answers-template"].as<bool>()) {
    out << wq::answers_template(q);
    return 0;
  }
  if (verify) verify_quiz(q);
  out << wq::render_quiz(q);
  return 0;
}

}  // namespace gcsim::cli

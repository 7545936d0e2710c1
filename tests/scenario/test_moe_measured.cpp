// An expert-parallel MoE layer predicted and measured on 2 and 4 H200s and
// 4 H100s (NV18): calibration/microbench/moe_ep_bench.py, calibration/
// measurements/{h200-x2,h200-x4,h100-x4}/moe_ep_2026-11-26/moe_ep.json. Each
// point runs as a graph `moe` op with the token copies the bench sent
// (`expert_tokens`) on the flow model, the forward alone and the backward
// after its forward (as the bench times it: the host starts the backward
// ahead of the GPU); gcsim's layer time (its slowest rank) is compared with
// the measured un-instrumented pass (`plain_us_per_rank`, the slower rank).
//
// Nothing here is fitted to these layer times: the eager-kernel
// efficiencies were fitted on the 2-H200 file's phases (workloads/moe/
// moe_layer.h), and each machine's host costs (cluster.host: h200,
// h100x4-20261126-2313/-2212, or a profile calibrated on the machine) are
// read from that machine's host timings (h200: calibration/fit/
// moe_host_costs.py; the two H100 ones: the host-timeline run's plain-pass stamps,
// calibration/fit/moe_host_timeline_read.py, on its hidden-2048 /
// 8-expert points, with the slowest of 4 ranks setting the pace). Every
// point and every skewed/balanced ratio is held to 10%, but for the points
// listed as not met (README's "MoE expert parallelism"), which are printed
// and held to their own figure so that they cannot get worse unseen. All
// but the 2-H200 16K one are host-bound balanced passes (4K and 8K tokens)
// or ratios over them: on the H100 machine such a pass measures up to
// 1.64x apart between blocks of 20 rounds seconds apart (stalls in every
// rank, a different slow rank each block: calibration/measurements/
// h100-x4/moe_host_timeline_2026-11-26), which a deterministic host at the
// median pace does not follow.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "catch.h"
#include "scenario/run_gcsim.h"

using gcsim::test::read_json;
using gcsim::test::read_text;
using gcsim::test::run_gcsim;
using gcsim::test::run_summary;
using gcsim::test::source_path;
using gcsim::test::TempDir;

namespace {

struct Point {
  std::string name;
  int hidden, experts, tokens;
  double skew;
  std::string capacity;  // "" dropless, else the capacity factor and ":pad" when padded
  double measured_us[2];   // fwd, bwd: the slower rank's plain pass
  double simulated_us[2];
};

// `gpus` ranks, each sending expert e the bench's copies: `expert_tokens`
// counts all of them (sources spread evenly).
// The backward runs as the bench times it: after its forward (untimed), so
// the host starts the backward ahead of the GPU; its layer is the second.
std::string moe_yaml(const nlohmann::ordered_json& r, const char* pass, int gpus,
                     const std::string& gpu, const std::string& host) {
  std::string copies;
  for (const auto& c : r["expert_tokens_per_source"]) {
    copies += (copies.empty() ? "" : ", ") + std::to_string(gpus * c.get<int64_t>());
  }
  const std::string layer =
      "op: moe, tokens: " + std::to_string(r["tokens_per_rank"].get<int>()) +
      ", hidden: " + std::to_string(r["hidden"].get<int>()) +
      ", expert_ffn: " + std::to_string(r["expert_ffn"].get<int>()) +
      ", experts: " + std::to_string(r["experts"].get<int>()) +
      ", top_k: " + std::to_string(r["top_k"].get<int>()) + ", expert_tokens: [" + copies + "]" +
      (r.contains("capacity_factor")
           ? ", capacity_factor: " + std::to_string(r["capacity_factor"].get<double>()) +
                 (r["pad_to_capacity"].get<bool>() ? ", pad_to_capacity: true" : "")
           : "");
  const bool bwd = std::string(pass) == "bwd";
  return "cluster: {gpu: " + gpu + ", nodes: 1, gpus_per_node: " + std::to_string(gpus) +
         ", host: " + host + "}\n"
         "network: {model: flow}\n"
         "workload:\n  kind: graph\n  ops:\n" +
         (bwd ? "    - {name: fwd, " + layer + ", pass: fwd}\n"
                "    - {name: moe, " + layer + ", pass: bwd, after: [fwd]}\n"
              : "    - {name: moe, " + layer + ", pass: fwd}\n");
}

// The point's pass times as moe_host_timeline.py measured them: per round
// the slowest rank's pass, the median over every round of the point's
// `plain` blocks (3 x 20 rounds: one block is no figure for a host-bound
// pass, calibration/measurements/h100-x4/moe_host_timeline_2026-11-26).
double pooled_plain_us(const nlohmann::ordered_json& r, const char* pass) {
  std::vector<double> rounds;
  const std::string key = std::string(pass) + "_us";
  for (const auto& b : r["blocks"]) {
    if (b["mode"] != "plain") continue;
    const auto& ranks = b["per_rank"];
    for (size_t i = 0; i < ranks[0][key].size(); ++i) {
      double slowest = 0;
      for (const auto& rank : ranks) slowest = std::max(slowest, rank[key][i].get<double>());
      rounds.push_back(slowest);
    }
  }
  std::sort(rounds.begin(), rounds.end());
  const size_t n = rounds.size();
  return n % 2 ? rounds[n / 2] : 0.5 * (rounds[n / 2 - 1] + rounds[n / 2]);
}

std::vector<Point> points(const char* file, int gpus, const std::string& gpu = "h200-sxm",
                          const std::string& host = "h200") {
  const auto doc = read_json(source_path(file));
  std::vector<Point> out;
  for (const auto& r : doc["results"]) {
    const bool timeline = r.contains("blocks");  // moe_host_timeline.py's file
    // Its last point repeats the first (drift over the run): not a point of its own.
    if (timeline && r["name"].get<std::string>().find("_again") != std::string::npos) continue;
    Point p{r["name"].get<std::string>(), r["hidden"].get<int>(), r["experts"].get<int>(),
            r["tokens_per_rank"].get<int>(),
            r["skew"].get<double>(),
            r.contains("capacity_factor")
                ? std::to_string(r["capacity_factor"].get<double>()) + (r["pad_to_capacity"].get<bool>() ? ":pad" : "")
                : "",
            {0, 0}, {0, 0}};
    const char* passes[] = {"fwd", "bwd"};
    for (int i = 0; i < 2; ++i) {
      if (timeline) {
        p.measured_us[i] = pooled_plain_us(r, passes[i]);
      } else {
        for (const auto& rank : r["plain_us_per_rank"]) {
          p.measured_us[i] = std::max(p.measured_us[i], rank[passes[i]].get<double>());
        }
      }
      const auto s = run_summary(moe_yaml(r, passes[i], gpus, gpu, host));
      p.simulated_us[i] = s["moe"].back()["layer_time_s"].get<double>() * 1e6;
    }
    out.push_back(p);
  }
  return out;
}

// A point (and pass) outside 10%: its error and ratio error as measured on
// 2026-11-26 (percent), rounded up by one point.
struct NotMet {
  const char* name;
  const char* pass;
  double point_pct, ratio_pct;
};

// Each point and its skewed/balanced ratio against the measurement: within
// 10%, or within a listed miss's own figure.
void check_points(const std::vector<Point>& ps, size_t count, const std::vector<NotMet>& not_met) {
  REQUIRE(ps.size() == count);
  std::map<std::string, const Point*> balanced;  // by shape and tokens
  const auto key = [](const Point& p) {
    return std::to_string(p.hidden) + "/" + std::to_string(p.experts) + "/" + std::to_string(p.tokens) + "/" +
           p.capacity;
  };
  for (const Point& p : ps) {
    if (p.skew == 0.0) balanced[key(p)] = &p;
  }
  const char* passes[] = {"fwd", "bwd"};
  for (const Point& p : ps) {
    for (int i = 0; i < 2; ++i) {
      const double err = p.simulated_us[i] / p.measured_us[i] - 1.0;
      const Point& b = *balanced.at(key(p));
      const double ratio_m = p.measured_us[i] / b.measured_us[i];
      const double ratio_s = p.simulated_us[i] / b.simulated_us[i];
      const double ratio_err = ratio_s / ratio_m - 1.0;
      const auto miss = std::find_if(not_met.begin(), not_met.end(), [&](const NotMet& m) {
        return p.name == m.name && std::string(passes[i]) == m.pass;
      });
      const bool listed = miss != not_met.end();
      std::printf("moe %-32s %s measured %8.0f us gcsim %8.0f us (%+5.1f%%)  skewed/balanced %.3f vs %.3f (%+5.1f%%)%s\n",
                  p.name.c_str(), passes[i], p.measured_us[i], p.simulated_us[i], 100 * err, ratio_m,
                  ratio_s, 100 * ratio_err, listed ? "  (NOT MET: outside 10%)" : "");
      INFO(p.name << " " << passes[i]);
      CHECK(std::abs(err) <= (listed ? miss->point_pct / 100 : 0.10));
      CHECK(std::abs(ratio_err) <= (listed ? miss->ratio_pct / 100 : 0.10));
      // A listed miss is still one (else the list and README are stale).
      if (listed) CHECK((std::abs(err) > 0.10 || std::abs(ratio_err) > 0.10));
    }
  }
}

}  // namespace

// 2026-11-26: >= 16K tokens every point -10.2% .. +0.4%, ratios -0.5% ..
// +6.4%; 4K -18.1% .. +18.4%, ratios -11.5% .. +6.2%. The 16K balanced
// hidden-2048 forward went -9.4 -> -10.2% when the flash2 decode refit
// moved the H200 profile's HBM fraction 0.854 -> 0.868 (the fit no longer
// lets decode cases pull it): listed as a miss. The expert loop's fixed
// cost per pass (workloads/moe/moe_layer.h EagerHostCost::loop_fwd_us)
// brought the hidden-2048 4K balanced forward and backward within 10%
// (-11.2 -> -2.1%, -12.8 -> -7.5%) and took the hidden-4096 4K points
// (8 experts per rank: the fixed cost spread thin, the per-call cost 25.8
// against the former one cost's 26.3) up: the balanced forward +11.1 ->
// +18.4%, the skew-1.5 forward's ratio -4.4 -> -10.3% (a new miss: these
// phases are GPU-bound, so the H200 profile has no host reading at 8 local
// experts; moe_host_costs.py takes the host-bound hidden-2048 phases).
// 2026-11-28: the H200 profile refitted with its own kernel grid and
// decode steps (cuBLAS's setup per CTA and split-K, calibration/profiles/
// h200-sxm.yaml) brought both back within 10%: the 16K balanced forward
// -10.2 -> -10.0%, the hidden-4096 skew-1.5 forward's ratio -10.3 -> -9.7%.
// Refitted again with the GEMM tiles' overlap (2026-11-28, its per-wave
// overhead 55 -> 214 ns, launch 2720 -> 2564 ns), both are misses again: the
// 16K balanced forward -10.1%, the skew-1.5 forward's ratio -10.1%.
TEST_CASE("moe layer on 2 H200s: each point and the skewed/balanced ratio within 10%",
          "[moe][measured]") {
  check_points(points("calibration/measurements/h200-x2/moe_ep_2026-11-26/moe_ep.json", 2), 18,
               {{"h2048_f1408_e8_k2_t4096_s0.8", "bwd", 19, 12},
                {"h2048_f1408_e8_k2_t4096_s1.5", "bwd", 14, 7},
                {"h4096_f2048_e16_k2_t4096_s0.0", "fwd", 19, 1},
                {"h2048_f1408_e8_k2_t16384_s0.0", "fwd", 11, 1},
                {"h4096_f2048_e16_k2_t4096_s1.5", "fwd", 8, 11}});
}

// The same layers on 4 H200s. >= 16K tokens every point -4.0% .. +1.4%,
// ratios -1.2% .. +5.4%; 4K -4.7% .. +9.0%, ratios -3.5% .. +11.6%. The
// loop's fixed cost brought the hidden-2048 4K balanced forward (-13.2 ->
// -4.7%) and its skew-0.8 ratio (+16.9 -> +7.5%) within 10%; the skew-1.5
// ratio +22.5 -> +11.6%.
TEST_CASE("moe layer on 4 H200s: each point and the ratio within 10%", "[moe][measured]") {
  check_points(points("calibration/measurements/h200-x4/moe_ep_2026-11-26/moe_ep.json", 4), 18,
               {{"h2048_f1408_e8_k2_t4096_s1.5", "fwd", 7, 12}});
}

// Another GPU and another host: 4 H100s, three shapes (the two above and a
// top-4 layer with 8 small experts per rank), 4K-32K tokens, with an
// H100 machine's host (cluster.host: h100x4-20261126-2313, read from a later machine's
// plain passes: calibration/measurements/h100-x4/
// moe_host_timeline_4k_2026-11-26; this file's own back-logged reading was
// near it). >= 16K tokens every point -5.5% .. +2.4%, ratios -1.3% ..
// +5.8%. The misses are this run's: its hidden-2048 balanced forward
// measured as fast as the fast machine's (1,113 us at 4K, the later slow
// machine 1,318-1,450), the top-4 balanced 4K backward 1,899 us (the slow
// machine 2,364-2,434), so the points +31.3 / +32.6% and the ratios over
// them -12 .. -22%.
TEST_CASE("moe layer on 4 H100s: each point and the ratio within 10%", "[moe][measured]") {
  check_points(points("calibration/measurements/h100-x4/moe_ep_2026-11-26/moe_ep.json", 4, "h100-sxm",
                      "h100x4-20261126-2313"),
               36,
               {{"h2048_f1408_e8_k2_t4096_s0.0", "fwd", 32, 1},
                {"h2048_f1408_e8_k2_t4096_s0.8", "fwd", 8, 19},
                {"h2048_f1408_e8_k2_t4096_s1.5", "fwd", 8, 19},
                {"h2048_f1408_e8_k2_t8192_s0.0", "fwd", 15, 1},
                {"h2048_f1408_e8_k2_t8192_s0.8", "fwd", 3, 16},
                {"h2048_f1408_e8_k2_t8192_s1.5", "fwd", 1, 13},
                {"h2048_f1024_e32_k4_t4096_s0.0", "bwd", 33, 1},
                {"h2048_f1024_e32_k4_t4096_s0.8", "bwd", 5, 22},
                {"h2048_f1024_e32_k4_t4096_s1.5", "bwd", 4, 23}});
}

// The 22:12 machine (moe_host_timeline.py): the three shapes at 4K-16K
// tokens, each pass the median over three blocks of 20 rounds (the slowest
// rank's pass per round), with its own host, `h100x4-20261126-2212`, read from its
// hidden-2048 / 8-expert points' host stamps (per-call costs and the
// slowest rank's pace); the 32-expert top-4 and hidden-4096 points are held
// out. Every point and ratio within 10% but the top-4 layer's 4K ones: its
// balanced passes -10.4% (forward) and -13.9% (backward: host-bound on the
// slowest rank, GPU-bound in gcsim), so the ratios +11.0 .. +20.8%; in
// those blocks the slowest rank issued 1.26-1.59x the ranks' median (1.177
// modelled).
TEST_CASE("moe layer on 4 H100s, host timeline run: each point and the ratio within 10%",
          "[moe][measured]") {
  check_points(points("calibration/measurements/h100-x4/moe_host_timeline_2026-11-26/moe_host_timeline.json", 4,
                      "h100-sxm", "h100x4-20261126-2212"),
               27,
               {{"h2048_f1024_e32_k4_t4096_s0.0", "fwd", 11, 1},
                {"h2048_f1024_e32_k4_t4096_s0.0", "bwd", 15, 1},
                {"h2048_f1024_e32_k4_t4096_s0.8", "fwd", 1, 12},
                {"h2048_f1024_e32_k4_t4096_s0.8", "bwd", 5, 22},
                {"h2048_f1024_e32_k4_t4096_s1.5", "fwd", 1, 12},
                {"h2048_f1024_e32_k4_t4096_s1.5", "bwd", 4, 21}});
}

// The 23:13 machine (moe_host_timeline.py, the 4K points, five blocks
// each): `h100x4-20261126-2313` is read from its hidden-2048 / 8-expert points; the top-4
// and hidden-4096 points are held out. Every point -1.5% .. +5.6%, every
// ratio -1.0% .. +3.8%.
TEST_CASE("moe layer on 4 H100s, 4K host timeline run: each point and the ratio within 10%",
          "[moe][measured]") {
  check_points(points("calibration/measurements/h100-x4/moe_host_timeline_4k_2026-11-26/moe_host_timeline_4k.json",
                      4, "h100-sxm", "h100x4-20261126-2313"),
               9, {});
}

// Calibrate the host, then predict (gcsim issue 22): on a fourth 4x H100
// machine (2026-11-27 01:09 UTC, one lease, one run.sh:
// calibration/measurements/h100-x4/eager_host_2026-11-27),
// eager_host_bench.py's generic calls (no MoE layer) first, then the MoE
// layer's plain passes (moe_host_timeline.py: three shapes x 4K-32K tokens
// x skew 0 / 1.5, three blocks of 20 rounds each). The host profile is
// fitted on the generic calls alone (gcsim calibrate --host-fit: router
// 29.1 us, permute 27.2, launch 25.7, nccl 68.9, sync 56.1, expert 18.6,
// loop 32.4 / 39.8, slowest_rank 1.361), the layer's points all held out.
// Every point -8.4% .. +2.9%, every ratio -0.8% .. +8.0%. With a measured
// machine's profile instead (h100x4-20261126-2313 or -2212) 4 of the 48
// miss; with this layer's own stamps (moe_host_timeline_read.py --profile)
// 4 miss too (the top-4 layer's 4K passes).
TEST_CASE("moe layer on 4 H100s, host calibrated on the machine: each point and the ratio within 10%",
          "[moe][measured][host]") {
  const std::string dir = "calibration/measurements/h100-x4/eager_host_2026-11-27/";
  TempDir tmp;
  const std::string host = (tmp / "host.yaml").string();
  const auto fit = run_gcsim({"calibrate", "--host-fit", source_path(dir + "eager_host_bench.json"), "-o", host});
  INFO(fit.err);
  REQUIRE(fit.exit_status == 0);
  // The committed profile is the fit's (but for the "# Made by:" line).
  const auto body = [](const std::string& t) { return t.substr(t.find("kind: host_profile")); };
  CHECK(body(read_text(host)) == body(read_text(source_path(dir + "host.yaml"))));
  check_points(points((dir + "moe_host_timeline.json").c_str(), 4, "h100-sxm", host), 24, {});
}

// Before: the same points with a measured machine's profile, as a user had
// to pick one (h100x4-20261126-2313, once `h100`): the hidden-2048 4K
// forwards and the top-4 layer's 4K backward +12.2 .. +16.6%, one ratio
// -11.4% (4 of 48; h100x4-20261126-2212 also misses 4, other ones).
TEST_CASE("moe layer on 4 H100s, the 2026-11-27 machine with another machine's host: listed",
          "[moe][measured][host]") {
  check_points(points("calibration/measurements/h100-x4/eager_host_2026-11-27/moe_host_timeline.json", 4,
                      "h100-sxm", "h100x4-20261126-2313"),
               24,
               {{"h2048_f1408_e8_k2_t4096_s0.0", "fwd", 17, 1},
                {"h2048_f1408_e8_k2_t4096_s1.5", "fwd", 13, 4},
                {"h2048_f1024_e32_k4_t4096_s0.0", "bwd", 17, 1},
                {"h2048_f1024_e32_k4_t4096_s1.5", "bwd", 4, 12}});
}

// The same machine's host calibrated again right after the layer's points
// (the file's second run, `after`) was steadier and faster: every rank even
// (slowest_rank 1.028, the first run 1.361, the layer's own stamps 1.225)
// and 0.75x the per-call cost. It would put 11 of the 48 outside 10%, all
// host-bound 4K-8K passes (-28.1% .. -10.5%) or ratios over them (to
// +31.7%): the host's state drifts within a minute, which one calibration
// does not follow (README: what calibrating the host does not cover).
TEST_CASE("moe layer on 4 H100s, the host calibrated after the points: the drift, listed",
          "[moe][measured][host]") {
  const std::string dir = "calibration/measurements/h100-x4/eager_host_2026-11-27/";
  TempDir tmp;
  const std::string host = (tmp / "host.yaml").string();
  const auto fit = run_gcsim({"calibrate", "--host-fit", source_path(dir + "eager_host_bench.json"), "--host-run",
                              "after", "-o", host});
  INFO(fit.err);
  REQUIRE(fit.exit_status == 0);
  check_points(points((dir + "moe_host_timeline.json").c_str(), 4, "h100-sxm", host), 24,
               {{"h2048_f1408_e8_k2_t4096_s0.0", "fwd", 21, 1},
                {"h2048_f1408_e8_k2_t4096_s1.5", "fwd", 9, 17},
                {"h2048_f1024_e32_k4_t4096_s0.0", "fwd", 29, 1},
                {"h2048_f1024_e32_k4_t4096_s0.0", "bwd", 14, 1},
                {"h2048_f1024_e32_k4_t4096_s1.5", "fwd", 6, 33},
                {"h2048_f1024_e32_k4_t4096_s1.5", "bwd", 4, 19},
                {"h4096_f2048_e16_k2_t4096_s0.0", "fwd", 14, 1},
                {"h2048_f1408_e8_k2_t8192_s0.0", "fwd", 18, 1},
                {"h2048_f1408_e8_k2_t8192_s1.5", "fwd", 9, 12},
                {"h2048_f1024_e32_k4_t8192_s0.0", "fwd", 11, 1},
                {"h4096_f2048_e16_k2_t8192_s0.0", "fwd", 11, 1}});
}

// The same run on a fifth 4x H100 machine (2026-11-27 01:41 UTC, the second
// lease: calibration/measurements/h100-x4/eager_host_2026-11-27b, skew 0.8
// added): calibrated the same way (router 27.7 us, permute 26.0, launch
// 24.4, nccl 66.4, sync 51.6, expert 16.2, loop 30.0 / 39.8, slowest_rank
// 1.283), 12 of the 72 miss, all host-bound 4K-8K passes under-predicted
// (to -29.3%) or ratios over them (to +46.3%): in the minute after the
// calibration the layer's own host stamps ran 1.4-1.7x slower than the
// calibration read (its first point: expert calls 23.3-25.1 us, NCCL calls
// 104-116), and near the calibration's pace by the repeat of that point at
// the end (expert 16.6-19.4 us, NCCL 64-77; the second calibration right
// after: 14.4, 57.6). Even the layer's own stamps, as one profile, leave 8
// misses here; the 23:13 machine's profile leaves 2. Listed: the host's
// drift is what one calibration does not follow.
TEST_CASE("moe layer on 4 H100s, a second machine calibrated the same way: the drift, listed",
          "[moe][measured][host]") {
  const std::string dir = "calibration/measurements/h100-x4/eager_host_2026-11-27b/";
  TempDir tmp;
  const std::string host = (tmp / "host.yaml").string();
  const auto fit = run_gcsim({"calibrate", "--host-fit", source_path(dir + "eager_host_bench.json"), "-o", host});
  INFO(fit.err);
  REQUIRE(fit.exit_status == 0);
  check_points(points((dir + "moe_host_timeline.json").c_str(), 4, "h100-sxm", host), 36,
               {{"h2048_f1408_e8_k2_t4096_s0.0", "fwd", 26, 1},
                {"h2048_f1408_e8_k2_t4096_s0.8", "fwd", 15, 14},
                {"h2048_f1408_e8_k2_t4096_s1.5", "fwd", 9, 23},
                {"h2048_f1024_e32_k4_t4096_s0.0", "fwd", 29, 1},
                {"h2048_f1024_e32_k4_t4096_s0.0", "bwd", 30, 1},
                {"h2048_f1024_e32_k4_t4096_s0.8", "fwd", 4, 36},
                {"h2048_f1024_e32_k4_t4096_s0.8", "bwd", 5, 47},
                {"h2048_f1024_e32_k4_t4096_s1.5", "fwd", 4, 36},
                {"h2048_f1024_e32_k4_t4096_s1.5", "bwd", 4, 46},
                {"h2048_f1408_e8_k2_t8192_s0.0", "fwd", 15, 1},
                {"h2048_f1408_e8_k2_t8192_s0.8", "fwd", 5, 12},
                {"h2048_f1408_e8_k2_t8192_s1.5", "fwd", 4, 13}});
}

// Capacity factor and token dropping (GShard/Switch: C = ceil(cf x tokens x
// top_k / E) per expert and source) and Megatron's padding to capacity, on
// another 4x H100 machine (calibration/measurements/h100-x4/
// moe_capacity_2026-11-27): the two 2-GPU shapes at 16K and 32K tokens per
// rank, skew 0 and 1.5, each dropless, capacity 1.0 and 1.25 (dropping) and
// 1.25 padded; gcsim gets the routed copies and the capacity keys, and
// drops or pads them itself (workloads/moe/moe_routing.cpp). The skewed
// pass under capacity 1.0 measured 0.45x (hidden 2048, forward) to 0.33x
// (hidden 4096, 32K, backward) of the dropless one, the padded passes
// 1.15-1.25x of the balanced dropless ones. With the 23:13 machine's host
// (these passes are GPU-bound). 2026-11-27: every point -7.4% .. +1.9%
// (the hidden-2048 16K balanced dropless forward -7.4%), every
// skewed/balanced ratio within 10%.
TEST_CASE("moe layer under capacity factors and padding on 4 H100s: each point and ratio within 10%",
          "[moe][measured]") {
  check_points(points("calibration/measurements/h100-x4/moe_capacity_2026-11-27/moe_ep.json", 4, "h100-sxm",
                      "h100x4-20261126-2313"),
               32, {});
}

#include "calibration/fit/host_fit.h"

#include <algorithm>
#include <map>

#include "sim/report/format.h"

namespace gcsim::calibration {

using Json = nlohmann::json;
using cli::fmt;
using workloads::moe::EagerHostCost;
namespace moe = workloads::moe;

const std::vector<HostKindMix>& host_kind_mix() {
  // The layer's calls of each kind (workloads/moe/moe_layer.h HostCall; the
  // calls themselves: calibration/microbench/moe_host_timeline.py) as the
  // bench's ops, forward and backward together.
  static const std::vector<HostKindMix> mix{
      // GEMM, .float(), softmax, top-k
      {"router", {{"mm", 1}, {"cast", 1}, {"softmax", 1}, {"topk", 1}}},
      // the forward's gather of the token copies; the backward's gather and scale
      {"permute", {{"gather", 2}, {"scale", 1}}},
      // sort and unsort, forward and backward (gathers); unpermute: zero, scale and
      // index_add forward, zero and index_add backward; the router's backward GEMMs
      {"launch", {{"gather", 4}, {"zero", 2}, {"scale", 1}, {"index_add", 2}, {"mm", 1}, {"mm_t", 1}}},
      // the counts' exchange (even, no splits); dispatch and combine forward and
      // backward (split lists, a new output buffer each)
      {"nccl", {{"a2a", 1}, {"a2a_splits", 4}}},
  };
  return mix;
}

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A number at `key` of `j`, or HostFitError naming `where`.key.
double number(const Json& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw HostFitError(where + "." + key + ": missing");
  const Json& v = j[key];
  if (!v.is_number()) throw HostFitError(where + "." + key + ": not a number");
  return v.get<double>();
}

const Json& member(const Json& j, const std::string& key, const std::string& where, bool array) {
  if (!j.is_object() || !j.contains(key)) throw HostFitError(where + "." + key + ": missing");
  const Json& v = j[key];
  if (array ? !v.is_array() : !v.is_object()) {
    throw HostFitError(where + "." + key + ": not " + (array ? "a list" : "a map"));
  }
  return v;
}

// The run to fit and its place in the file.
std::pair<const Json*, std::string> pick_run(const Json& doc, const std::string& tag) {
  if (!doc.is_object() || doc.value("schema", "") != "gcsim.eager_host_bench.v1") {
    throw HostFitError(
        "schema: not calibration/microbench/eager_host_bench.py's output (expected "
        "\"gcsim.eager_host_bench.v1\")");
  }
  const Json& runs = member(doc, "runs", "", true);
  std::vector<std::string> tags;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string t = runs[i].is_object() ? runs[i].value("tag", "") : "";
    if (tag.empty() || t == tag) return {&runs[i], "runs[" + std::to_string(i) + "]"};
    tags.push_back("'" + t + "'");
  }
  if (runs.empty()) throw HostFitError("runs: empty");
  std::string have;
  for (const auto& t : tags) have += (have.empty() ? "" : ", ") + t;
  throw HostFitError("runs: no run tagged '" + tag + "' (the file has " + have + ")");
}

// A rank's loop cost per call, forward and backward calls together.
double loop_call_us(double fwd, double bwd) {
  return (kLoopFwdCalls * fwd + kLoopBwdCalls * bwd) / (kLoopFwdCalls + kLoopBwdCalls);
}

void check_range(const char* key, double v, double lo, double hi, const std::string& unit) {
  if (v >= lo && v <= hi) return;
  throw HostFitError("fitted " + std::string(key) + " " + fmt("%.4g", v) + unit +
                     " lies outside its physical range " + fmt("%g", lo) + "-" + fmt("%g", hi) + unit +
                     ": not a host the model covers (or a broken run)");
}

}  // namespace

HostFit fit_host_bench(const Json& doc, const std::string& tag) {
  const auto [run, where] = pick_run(doc, tag);
  const Json& blocks = member(*run, "blocks", where, true);
  std::map<std::string, std::vector<double>> ops;
  std::vector<double> fwd, bwd, fwd_extra, bwd_extra, sync, idle, after_tolist, after_sync, spread;
  int used = 0, ranks = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const std::string bw = where + ".blocks[" + std::to_string(b) + "]";
    const Json& per_rank = member(blocks[b], "per_rank", bw, true);
    // A block where a rank failed has no spread over ranks: left out.
    if (std::any_of(per_rank.begin(), per_rank.end(), [](const Json& p) { return p.contains("error"); })) {
      continue;
    }
    std::vector<double> call;
    for (size_t p = 0; p < per_rank.size(); ++p) {
      const std::string pw = bw + ".per_rank[" + std::to_string(p) + "]";
      const Json& op_us = member(per_rank[p], "op_us", pw, false);
      for (const auto& mix : host_kind_mix()) {
        for (const auto& [op, n] : mix.ops) ops[op].push_back(number(op_us, op, pw + ".op_us"));
      }
      const Json& loop = member(per_rank[p], "loop_us", pw, false);
      const std::string lw = pw + ".loop_us";
      fwd.push_back(number(loop, "fwd", lw));
      bwd.push_back(number(loop, "bwd", lw));
      fwd_extra.push_back(number(loop, "fwd_first_extra", lw));
      bwd_extra.push_back(number(loop, "bwd_first_extra", lw));
      call.push_back(loop_call_us(fwd.back(), bwd.back()));
      sync.push_back(number(per_rank[p], "sync_us", pw));
      idle.push_back(number(per_rank[p], "tolist_idle_us", pw));
      after_tolist.push_back(number(per_rank[p], "a2a_splits_after_tolist_us", pw));
      after_sync.push_back(number(per_rank[p], "launch_after_sync_us", pw));
    }
    if (call.empty()) continue;
    const double mid = median(call);
    if (!(mid > 0)) throw HostFitError(bw + ": a loop cost per call of " + fmt("%g", mid) + " us");
    spread.push_back(*std::max_element(call.begin(), call.end()) / mid);
    ranks = std::max(ranks, static_cast<int>(call.size()));
    ++used;
  }
  if (used == 0) throw HostFitError(where + ".blocks: no block where every rank has readings");

  HostFit fit;
  fit.ranks = ranks;
  fit.blocks = used;
  Json op_med = Json::object();
  for (auto& [op, v] : ops) op_med[op] = median(v);
  auto kind_us = [&](const char* kind) {
    for (const auto& mix : host_kind_mix()) {
      if (std::string(mix.kind) != kind) continue;
      double sum = 0;
      int calls = 0;
      for (const auto& [op, n] : mix.ops) {
        sum += n * op_med[op].get<double>();
        calls += n;
      }
      return sum / calls;
    }
    throw HostFitError(std::string("internal: no mix for ") + kind);
  };
  EagerHostCost& c = fit.cost;
  c.profile.clear();
  c.router_us = kind_us("router");
  c.permute_us = kind_us("permute");
  c.launch_us = kind_us("launch");
  c.collective_us = kind_us("nccl");
  const double fwd_call = median(fwd), bwd_call = median(bwd);
  c.expert_us = loop_call_us(fwd_call, bwd_call);
  // A loop with no measurable fixed cost reads a little below zero (noise):
  // none, as the model's range says.
  c.loop_fwd_us = std::max(0.0, median(fwd_extra));
  c.loop_bwd_us = std::max(0.0, median(bwd_extra));
  c.sync_us = median(sync);
  c.slowest_rank = std::max(1.0, median(spread));

  check_range("router", c.router_us, moe::kHostCallMinUs, moe::kHostCallMaxUs, " us");
  check_range("permute", c.permute_us, moe::kHostCallMinUs, moe::kHostCallMaxUs, " us");
  check_range("launch", c.launch_us, moe::kHostCallMinUs, moe::kHostCallMaxUs, " us");
  check_range("expert", c.expert_us, moe::kHostCallMinUs, moe::kHostCallMaxUs, " us");
  check_range("nccl", c.collective_us, moe::kHostCallMinUs, moe::kHostNcclMaxUs, " us");
  check_range("sync", c.sync_us, moe::kHostSyncMinUs, moe::kHostSyncMaxUs, " us");
  check_range("loop_fwd", c.loop_fwd_us, 0, moe::kHostLoopMaxUs, " us");
  check_range("loop_bwd", c.loop_bwd_us, 0, moe::kHostLoopMaxUs, " us");
  check_range("slowest_rank", c.slowest_rank, 1, moe::kHostSlowestRankMax, "");

  Json& r = fit.readings;
  r["ops_us"] = op_med;
  r["loop_us"] = {{"fwd", fwd_call}, {"bwd", bwd_call}, {"fwd_first_extra", median(fwd_extra)},
                  {"bwd_first_extra", median(bwd_extra)}};
  r["sync_us"] = c.sync_us;
  r["tolist_idle_us"] = median(idle);
  r["a2a_splits_after_tolist_us"] = median(after_tolist);
  r["launch_after_sync_us"] = median(after_sync);
  r["slowest_rank_per_block"] = spread;
  const Json meta = run->contains("meta") && (*run)["meta"].is_object() ? (*run)["meta"] : Json::object();
  for (const char* k : {"script", "script_version", "script_sha256", "date_utc", "hostname", "device_name",
                        "world_size", "cpu_model", "cpus_online", "torch", "cuda_runtime", "nccl",
                        "loadavg_before", "loadavg_after", "setup"}) {
    if (meta.contains(k)) fit.provenance[k] = meta[k];
  }
  fit.provenance["tag"] = run->value("tag", "");
  auto text = [&](const char* k) { return meta.contains(k) && meta[k].is_string() ? meta[k].get<std::string>() : "?"; };
  fit.measured_on = std::to_string(ranks) + "x " + text("device_name") + ", " + text("cpu_model") + ", host " +
                    text("hostname") + ", " + text("date_utc");
  return fit;
}

std::string host_profile_yaml(const HostFit& fit, const std::string& command) {
  const EagerHostCost& c = fit.cost;
  auto us = [](double v) { return fmt("%.2f", v) + "us"; };
  std::string y;
  y += "# gcsim host profile (cluster.host: FILE): what each kind of eager PyTorch call costs\n";
  y += "# this machine's host, fitted on calibration/microbench/eager_host_bench.py's generic calls\n";
  y += "# (no model, no MoE layer). cluster.host reads `costs`; the rest says where they came from.\n";
  y += "# Made by: " + command + "\n";
  y += "kind: host_profile\n";
  y += "measured_on: " + Json(fit.measured_on).dump() + "\n";
  y += "costs:\n";
  y += "  router: " + us(c.router_us) + "      # GEMM, .float(), softmax, top-k: per call\n";
  y += "  permute: " + us(c.permute_us) + "     # the token copies' gather, the backward's gather and scale\n";
  y += "  launch: " + us(c.launch_us) + "      # every other kernel call outside the expert loop\n";
  y += "  nccl: " + us(c.collective_us) + "        # an all_to_all_single (with split lists, a new output)\n";
  y += "  sync: " + us(c.sync_us) + "        # .tolist()'s return after the GPU's end of the exchange\n";
  y += "  expert: " + us(c.expert_us) + "      # a kernel call of the expert loop (slice loop, later iterations)\n";
  y += "  loop_fwd: " + us(c.loop_fwd_us) + "    # the loop's fixed cost per forward pass\n";
  y += "  loop_bwd: " + us(c.loop_bwd_us) + "    # per backward pass\n";
  y += "  slowest_rank: " + fmt("%.3f", c.slowest_rank) + "  # the slowest of " + std::to_string(fit.ranks) +
       " ranks' loop cost per call over their median (median over blocks)\n";
  Json f;
  f["method"] =
      "each op's host cost the median over blocks and ranks (GPU back-logged); a kind the mean of the "
      "ops its calls are (calibration/fit/host_fit.cpp host_kind_mix); expert the slice loop's later "
      "iterations, 4 forward and 9 backward calls weighted by their number; loop_fwd/bwd the output's "
      "allocation plus the first iteration beyond its calls' worth";
  f["ranks"] = fit.ranks;
  f["blocks"] = fit.blocks;
  y += "fit: " + f.dump() + "\n";
  y += "readings: " + fit.readings.dump() + "\n";
  y += "provenance: " + fit.provenance.dump() + "\n";
  return y;
}

}  // namespace gcsim::calibration

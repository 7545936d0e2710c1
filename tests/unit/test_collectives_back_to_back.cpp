// What a loop of back-to-back calls measures (nccl-tests' method, and
// calibration/microbench/nccl_sweep.py's): per call, one run less the part
// the next call overlaps. A broadcast chain's root waits for no one, so
// each call's hops and fill down the chain overlap the next call; a ring's
// ranks wait on their neighbours in every step, so its calls do not.
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "calibration/fit/collective_fit.h"
#include "catch.h"
#include "unit/collective_fit_values.h"
#include "scenario/run_gcsim.h"

using namespace gcsim;
using models::collectives::Algorithm;
using models::collectives::CollectiveOp;
using models::collectives::Protocol;

namespace {

// 450 GB/s each way, 0.6 us GPU to GPU through the switch.
models::gpu::GpuSpec one_switch_gpu() { return test::switch_gpu("test"); }

// No ceilings or slices; LL rings cost 5 us per call and 1 us per step
// beyond the path's 0.6 us.
models::collectives::CollectiveParams latency_only() {
  auto p = models::collectives::ideal_params(24);
  p.latency_of(Algorithm::ring, Protocol::ll).base = sim::us(5.0);
  p.latency_of(Algorithm::ring, Protocol::ll).step_scale_up = sim::us(1.0);
  return p;
}

calibration::NcclMeasurement small(CollectiveOp op, int ranks, int iters) {
  calibration::NcclMeasurement m;
  m.op = op;
  m.ranks = ranks;
  m.bytes = 8;
  m.algorithm = Algorithm::ring;
  m.protocol = Protocol::ll;
  m.iters = iters;
  return m;
}

}  // namespace

TEST_CASE("back-to-back calls: a broadcast chain overlaps its hops, a ring does not",
          "[collectives][collective]") {
  const auto gpu = one_switch_gpu();
  const auto p = latency_only();
  // One 8-byte broadcast on 4 GPUs: 5 us, then 3 hops of 1.6 us = 9.8 us
  // (8 bytes' wire time, 18 ps, aside).
  const double one = calibration::predict_us(p, gpu, small(CollectiveOp::broadcast, 4, 0), false);
  CHECK(one == Approx(5.0 + 3 * 1.6).epsilon(1e-4));
  // 200 back to back: the 4.8 us down the chain overlap the next call for
  // all but the last: 9.8 - 4.8 x 199/200 = 5.024 us per call.
  CHECK(calibration::predict_us(p, gpu, small(CollectiveOp::broadcast, 4, 200), false) ==
        Approx(9.8 - 4.8 * 199.0 / 200.0).epsilon(1e-4));
  // Two GPUs: the one hop overlaps as well (the root's next call starts
  // while its last one lands): 6.6 us alone, 5.006 us per call of 200.
  CHECK(calibration::predict_us(p, gpu, small(CollectiveOp::broadcast, 2, 200), false) ==
        Approx(6.6 - 1.6 * 199.0 / 200.0).epsilon(1e-4));
  // An all-gather ring on 4 GPUs: 3 dependent steps in every call, one
  // call's time however many run back to back.
  const double ring = calibration::predict_us(p, gpu, small(CollectiveOp::all_gather, 4, 0), false);
  CHECK(ring == Approx(5.0 + 3 * 1.6).epsilon(1e-4));
  CHECK(calibration::predict_us(p, gpu, small(CollectiveOp::all_gather, 4, 200), false) ==
        Approx(ring).epsilon(1e-9));
}

TEST_CASE("back-to-back calls: measured on 4x H100, broadcast calls overlap, ring calls do not",
          "[collectives][calibration]") {
  // calibration/measurements/h100-x4/nccl_study_2026-11-26/: one call's
  // end-to-end time is the fenced loop's per-call time less the 8-byte
  // all-reduce's back-to-back time (9.10 us on 4 GPUs).
  const std::string file = "calibration/measurements/h100-x4/nccl_study_2026-11-26/nccl_study.json";
  const auto doc = nlohmann::json::parse(test::read_text(test::source_path(file)));
  auto time_of = [&](const std::string& run, const std::string& op, int64_t bytes) {
    for (const auto& r : doc["results"]) {
      if (r["run"] == run && r["op"] == op && r["bytes"] == bytes &&
          (op != "all_gather" || r["in_place"] == false)) {
        return r["time_us"].get<double>();
      }
    }
    FAIL("no " << op << " " << bytes << " B in " << run);
    return 0.0;
  };
  const double fence = time_of("b2b_n4.json", "all_reduce", 8);
  CHECK(fence == Approx(9.10).margin(0.01));
  for (const int64_t mib : {16, 64}) {
    const int64_t bytes = mib << 20;
    const double bcast_one = time_of("fence_n4.json", "broadcast", bytes) - fence;
    const double bcast_loop = time_of("b2b_n4.json", "broadcast", bytes);
    const double ring_one = time_of("fence_n4.json", "all_gather", bytes) - fence;
    const double ring_loop = time_of("b2b_n4.json", "all_gather", bytes);
    INFO(mib << " MiB: broadcast " << bcast_one << " / " << bcast_loop << " us, all_gather "
              << ring_one << " / " << ring_loop << " us");
    // 16 MiB: 153.9 against 74.4 us; 64 MiB: 294.4 against 224.9.
    CHECK(bcast_one - bcast_loop > 60.0);
    // 16 MiB: 68.6 against 66.8 us; 64 MiB: 195.2 against 192.6.
    CHECK(std::abs(ring_one - ring_loop) < 3.0);
  }
}

TEST_CASE("back-to-back calls: a 4-GPU broadcast's last rank trails its root by whole 512 KiB steps",
          "[collectives][calibration]") {
  // How far one call's last rank trails its root, measured on 4x H100
  // (nccl_study_2026-11-26: one call = fenced - the 8-byte all-reduce;
  // interval = (N x back-to-back - one call) / (N - 1); lag = one call -
  // interval), against the model's back_to_back_overlap: the hops beyond
  // the root's own and a fill of one Simple step (512 KiB, or a channel's
  // bytes if fewer) per middle rank at a channel's share of the link.
  // Measured 19.3, 32.5, 55.6, 83.2, 91.0, 78.2 us at 2-64 MiB, predicted
  // 17.9, 29.2, 51.8, 74.5, 74.5, 74.5; a fill of half a ring slice (115
  // KB: the model before) gave at most ~22 us. 20 %: the fenced loops time
  // 7-38 calls after a barrier whose exit skew between ranks (~50 us, the
  // fenced root's time against the others') is not modelled.
  const std::string file = "calibration/measurements/h100-x4/nccl_study_2026-11-26/nccl_study.json";
  const auto doc = nlohmann::json::parse(test::read_text(test::source_path(file)));
  auto row = [&](const std::string& run, const std::string& op, int64_t bytes) {
    for (const auto& r : doc["results"]) {
      if (r["run"] == run && r["op"] == op && r["bytes"] == bytes) return r;
    }
    FAIL("no " << op << " " << bytes << " B in " << run);
    return nlohmann::json();
  };
  const double fence = row("b2b_n4.json", "all_reduce", 8)["time_us"].get<double>();
  const models::gpu::GpuSpec h100 = test::switch_gpu("h100-sxm", 3350);
  auto p = models::collectives::params_for(h100);
  p.nvls = false;
  for (const int mib : {2, 4, 8, 16, 32, 64}) {
    const int64_t bytes = int64_t{mib} << 20;
    const auto loop = row("b2b_n4.json", "broadcast", bytes);
    const double n = loop["iters"].get<double>();
    const double one = row("fence_n4.json", "broadcast", bytes)["time_us"].get<double>() - fence;
    const double measured = one - (n * loop["time_us"].get<double>() - one) / (n - 1);
    calibration::NcclMeasurement m;
    m.op = CollectiveOp::broadcast;
    m.ranks = 4;
    m.bytes = bytes;
    m.algorithm = Algorithm::ring;
    m.protocol = Protocol::simple;  // NCCL's choice from 2 MiB (the sweep's TUNING probe)
    const double alone = calibration::predict_us(p, h100, m, false);
    m.iters = 1'000'000;
    const double predicted = (alone - calibration::predict_us(p, h100, m, false)) / (1.0 - 1e-6);
    INFO(mib << " MiB: lag measured " << measured << " us, predicted " << predicted);
    CHECK(std::abs(predicted / measured - 1.0) < 0.20);
  }
}

TEST_CASE("back-to-back calls: a 2-GPU broadcast does not depend on the buffer step",
          "[collectives][calibration]") {
  // calibration/measurements/h100-x2/nccl_bcast_2026-11-26/: broadcast on
  // 2x H100 with NCCL_BUFFSIZE 4 MiB (default), 1 MiB and 16 MiB: Simple
  // steps of 512 KiB, 128 KiB and 2 MiB. One hop has nothing to fill and
  // its root pays the hop in every call, so the model's time per call does
  // not depend on the step; measured, 16 MiB 58.5 / 60.6 / 58.6 us, 64 MiB
  // 199.2 / 200.5 / 196.7 us: within 4 % (run to run ~1-2 %).
  const std::string file =
      "calibration/measurements/h100-x2/nccl_bcast_2026-11-26/nccl_bcast_2gpu.json";
  const auto doc = nlohmann::json::parse(test::read_text(test::source_path(file)));
  auto time_of = [&](const std::string& run, int64_t bytes) {
    for (const auto& r : doc["results"]) {
      if (r["run"] == run && r["bytes"] == bytes) return r["time_us"].get<double>();
    }
    FAIL("no broadcast " << bytes << " B in " << run);
    return 0.0;
  };
  for (const int64_t mib : {4, 16, 64}) {
    const double base = time_of("b2b_n2.json", mib << 20);
    for (const char* run : {"b2b_buf1m_n2.json", "b2b_buf16m_n2.json"}) {
      INFO(mib << " MiB, " << run << ": " << time_of(run, mib << 20) << " against " << base);
      CHECK(std::abs(time_of(run, mib << 20) / base - 1.0) < 0.04);
    }
  }
  // The model: a 4x smaller or larger step changes nothing on 2 GPUs.
  const models::gpu::GpuSpec h100 = test::switch_gpu("h100-sxm", 3350);
  auto p = models::collectives::params_for(h100);
  p.nvls = false;
  calibration::NcclMeasurement m;
  m.op = CollectiveOp::broadcast;
  m.ranks = 2;
  m.bytes = int64_t{16} << 20;
  m.algorithm = Algorithm::ring;
  m.protocol = Protocol::simple;
  m.iters = 34;
  const double at_512k = calibration::predict_us(p, h100, m, false);
  for (const int64_t kib : {128, 2048}) {
    auto q = p;
    q.protocol_of(Protocol::simple).step = sim::KiB(kib);
    CHECK(calibration::predict_us(q, h100, m, false) == Approx(at_512k).epsilon(1e-9));
  }
  // A 4-GPU chain does: one 16 MiB call fills two middle ranks with
  // 128 KiB instead of 512 KiB, 2 x 384 KiB at a channel's ~15 GB/s less
  // (~52 us).
  m.ranks = 4;
  m.iters = 0;
  auto small = p;
  small.protocol_of(Protocol::simple).step = sim::KiB(128);
  const double saved =
      calibration::predict_us(p, h100, m, false) - calibration::predict_us(small, h100, m, false);
  CHECK(saved == Approx(2 * 393216 / (370.8e9 / 24) * 1e6).epsilon(1e-3));
}

TEST_CASE("NCCL sweep loader: fenced and buffer-size rows are left out",
          "[collectives][calibration]") {
  // A fenced row times one call plus an 8-byte all-reduce, not a loop of
  // back-to-back calls: nothing predicts it, so the loader drops it. A row
  // run with NCCL_BUFFSIZE (or a channel count) overridden is no NCCL
  // default either.
  test::TempDir tmp;
  const auto path = tmp / "sweep.json";
  std::ofstream(path) << R"({"schema": "gcsim.nccl_sweep.v1", "results": [
    {"op": "all_to_all", "ranks": 2, "bytes": 1048576, "time_us": 12.9, "iters": 155,
     "protocol": "default", "run": "a2a_n2.json"},
    {"op": "all_to_all", "ranks": 2, "bytes": 1048576, "time_us": 30.1, "iters": 66,
     "protocol": "default", "run": "fence_n2.json", "fence": "all_reduce_8B"},
    {"op": "all_to_all", "ranks": 2, "bytes": 1048576, "time_us": 14.0, "iters": 140,
     "protocol": "default", "run": "b2b_buf1m_n2.json", "forced_env": {"NCCL_BUFFSIZE": "1048576"}}]})";
  const auto rows = calibration::load_nccl_sweep(path.string());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].run == "a2a_n2.json");
  CHECK(rows[0].iters == 155);
}

// NCCL's split of a grouped send/recv over its p2p channels
// (models/collectives/p2p_split.h), checked against NCCL 2.28's rules worked
// by hand (32 p2p channels, 32 per peer, 512 KiB chunks), and the
// all-to-all's time from its parts: the busiest p2p channel, the first
// step's start-up, one fixed cost per round and the local copy.
#include <algorithm>
#include <numeric>

#include "calibration/fit/collective_fit.h"
#include "catch.h"
#include "models/collectives/p2p_split.h"

using namespace gcsim;
using models::collectives::all_to_all_channel_load;
using models::collectives::P2pConfig;
using models::collectives::p2p_channel;
using models::collectives::p2p_parts;

namespace {
constexpr double KiB = 1024.0, MiB = 1024.0 * 1024.0;
}

TEST_CASE("p2p split: NCCL's channels per operation and part sizes", "[collectives]") {
  const P2pConfig cfg;
  // 2 ranks: channels per op between 16 (32 x 2 > 32 halves once) and 32.
  // 8 MiB: max(64 KiB, 8 MiB / 16) = 512 KiB parts, 16 of them.
  auto p = p2p_parts(8 * MiB, 2, 1, cfg);
  CHECK(p.parts == 16);
  CHECK(p.part_bytes == 512 * KiB);
  // 512 MiB: 32 MiB over 16 exceeds 32 chunks (16 MiB), so 32 channels of 16 MiB.
  p = p2p_parts(512 * MiB, 2, 1, cfg);
  CHECK(p.parts == 32);
  CHECK(p.part_bytes == 16 * MiB);
  // 2 GiB: at most 32 channels, parts of 64 MiB.
  p = p2p_parts(2048 * MiB, 2, 1, cfg);
  CHECK(p.parts == 32);
  CHECK(p.part_bytes == 64 * MiB);
  // 16 KiB: one part of at least chunk / 8 = 64 KiB holds it all.
  p = p2p_parts(16 * KiB, 2, 1, cfg);
  CHECK(p.parts == 1);
  CHECK(p.part_bytes == 16 * KiB);
  // 100 KiB: ceil(100 / 64) = 2 channels, parts of alignUp(50 KiB, 4 KiB) =
  // 52 KiB (ncclP2pPartBounds), the last 48 KiB.
  p = p2p_parts(100 * KiB, 2, 1, cfg);
  CHECK(p.parts == 2);
  CHECK(p.part_bytes == 52 * KiB);
  // 8 ranks: 4 channels per op at first (32 x 8 > 32 halves three times),
  // doubling up to NCCL's 32 per peer: 1 GiB -> 32 parts of 32 MiB.
  p = p2p_parts(1024 * MiB, 8, 1, cfg);
  CHECK(p.parts == 32);
  CHECK(p.part_bytes == 32 * MiB);
  // 4 ranks: at least 8 channels (32 x 4 > 32 halves twice); 64 MiB -> 8 x 8 MiB.
  p = p2p_parts(64 * MiB, 4, 1, cfg);
  CHECK(p.parts == 8);
  CHECK(p.part_bytes == 8 * MiB);
  // Across hosts a peer has NCCL 2.28.9's 2 net channels (ncclTopoGetNchannels'
  // NET branch; 2 x 4 ranks is within 4 x 32): 64 MiB -> 2 parts of 32 MiB
  // (a part over one step cannot double its channels past 2).
  p = p2p_parts(64 * MiB, 4, 2, cfg);
  CHECK(p.parts == 2);
  CHECK(p.part_bytes == 32 * MiB);
  // EP 64 over 8 hosts: still 2 (2 x 64 = 128 is not above 4 x 32); at 128
  // ranks 2 x 128 > 128 halves to 1.
  CHECK(p2p_parts(8 * MiB, 64, 8, cfg).parts == 2);
  CHECK(p2p_parts(8 * MiB, 128, 16, cfg).parts == 1);
}

TEST_CASE("p2p split: rounds on bit-reversed channels, loads per channel", "[collectives]") {
  const P2pConfig cfg;
  // Part k of round r goes to channel bitreverse5(r) + k (NCCL 2.28.7's
  // ncclP2pChannelBaseForRound + ncclP2pChannelForPart): round 0 starts at
  // channel 0, round 1 at 16, round 2 at 8, round 3 at 24.
  CHECK(p2p_channel(0, 1, 32) == 1);
  CHECK(p2p_channel(0, 3, 32) == 3);
  CHECK(p2p_channel(1, 1, 32) == 17);
  CHECK(p2p_channel(3, 2, 32) == 26);
  CHECK(p2p_channel(1, 20, 32) == 4);  // 16 + 20 wraps to 4
  // 2 ranks, 8 MiB each way: 16 copy parts of 512 KiB on channels 0-15,
  // 16 send + receive pairs on channels 16-31.
  auto load = all_to_all_channel_load(8 * MiB, 2, 1, cfg);
  for (size_t c = 0; c < load.size(); ++c) CHECK(load[c] == (c < 16 ? 512 * KiB : 1 * MiB));
  // 512 MiB: 32 parts per round, so every channel serves a copy part, a
  // send and a receive of 16 MiB each.
  load = all_to_all_channel_load(512 * MiB, 2, 1, cfg);
  for (double l : load) CHECK(l == 48 * MiB);
  // 4 ranks, 64 MiB per peer: 8 parts per round on channels 0-7, 16-23,
  // 8-15 and 24-31, no two rounds on one channel: the copy's channels hold
  // 8 MiB, the peers' 16.
  load = all_to_all_channel_load(64 * MiB, 4, 1, cfg);
  CHECK(*std::max_element(load.begin(), load.end()) == 16 * MiB);
  CHECK(std::accumulate(load.begin(), load.end(), 0.0) == 8 * 8 * MiB + 3 * 8 * 16 * MiB);
}

TEST_CASE("all-to-all time: busiest p2p channel, first step, rounds, local copy",
          "[collectives][collective]") {
  // One host, NVLink 450 GB/s each way and 0.6 us GPU to GPU; no protocol
  // cost but the p2p terms: 36 GB/s per p2p channel, 0.5 us per round.
  models::gpu::GpuSpec gpu;
  gpu.name = "test";
  gpu.nvlink_bandwidth = sim::Bandwidth::gb_per_s(450);
  gpu.nvlink_latency = sim::ns(int64_t{600});
  auto p = models::collectives::ideal_params(24);
  p.p2p_max_per_channel = sim::Bandwidth::gb_per_s(36);
  p.p2p_round_overhead = sim::us(0.5);
  calibration::NcclMeasurement m;
  m.op = models::collectives::CollectiveOp::all_to_all;
  m.ranks = 2;
  m.bytes = 16 << 20;
  m.algorithm = models::collectives::Algorithm::direct;
  m.protocol = models::collectives::Protocol::simple;
  // 8 MiB to the peer: the busiest channel sends and receives 512 KiB,
  // 1 MiB / 36 GB/s = 29.127 us (the link's 8 MiB / 450 GB/s = 18.6 us is
  // shorter); the first 512 KiB step at half the channel, 29.127 us; two
  // rounds (the peer and the rank itself), 1 us; the path's 0.6 us.
  const double step = 1 * MiB / 36e9 * 1e6;
  CHECK(calibration::predict_us(p, gpu, m, false) == Approx(0.6 + step + step + 1.0).epsilon(1e-6));
  // A local copy at 100 GB/s takes 8 MiB / 100 GB/s = 83.886 us: the floor.
  p.local_copy = sim::Bandwidth::gb_per_s(100);
  CHECK(calibration::predict_us(p, gpu, m, false) ==
        Approx(0.6 + 8 * MiB / 100e9 * 1e6 + step + 1.0).epsilon(1e-6));
  // 4 ranks, 4 rounds: 4 MiB to each peer in 8 parts of 512 KiB; each peer
  // round on its own channels (1 MiB each), the link carries 12 MiB:
  // 12 MiB / 450 GB/s = 27.96 us < 29.127.
  p.local_copy = sim::Bandwidth();
  m.ranks = 4;
  CHECK(calibration::predict_us(p, gpu, m, false) == Approx(0.6 + step + step + 2.0).epsilon(1e-6));
}

TEST_CASE("all-to-all time: connection windows share the link (Little's law)",
          "[collectives][collective]") {
  // Each p2p connection (a send part on its channel) keeps a fixed window
  // in flight: on an idle link it moves r = 40 GB/s; k of them through a
  // link of R = 450 GB/s move X with 1/X = 1/(k r) + 1/R. No other p2p
  // cost, so the time is the path's 0.6 us plus the sent bytes over X.
  models::gpu::GpuSpec gpu;
  gpu.name = "test";
  gpu.nvlink_bandwidth = sim::Bandwidth::gb_per_s(450);
  gpu.nvlink_latency = sim::ns(int64_t{600});
  auto p = models::collectives::ideal_params(24);
  p.p2p_connection_rate = sim::Bandwidth::gb_per_s(40);
  calibration::NcclMeasurement m;
  m.op = models::collectives::CollectiveOp::all_to_all;
  m.ranks = 2;
  m.bytes = 16 << 20;
  m.algorithm = models::collectives::Algorithm::direct;
  m.protocol = models::collectives::Protocol::simple;
  // 2 ranks: 8 MiB to the peer in 16 parts, k = 16:
  // 8 MiB / 640 GB/s + 8 MiB / 450 GB/s = 13.107 + 18.641 us.
  CHECK(calibration::predict_us(p, gpu, m, false) ==
        Approx(0.6 + 8 * MiB / 640e9 * 1e6 + 8 * MiB / 450e9 * 1e6).epsilon(1e-6));
  // 4 ranks: 4 MiB to each of 3 peers in 8 parts, k = 24 connections,
  // 12 MiB sent: 12 MiB / 960 GB/s + 12 MiB / 450 GB/s = 13.107 + 27.962
  // us, 0.856 of the link against 0.587 with 2 ranks' 16 connections.
  m.ranks = 4;
  CHECK(calibration::predict_us(p, gpu, m, false) ==
        Approx(0.6 + 12 * MiB / 960e9 * 1e6 + 12 * MiB / 450e9 * 1e6).epsilon(1e-6));
  // Without windows the link alone: 12 MiB / 450 GB/s.
  p.p2p_connection_rate = sim::Bandwidth();
  CHECK(calibration::predict_us(p, gpu, m, false) ==
        Approx(0.6 + 12 * MiB / 450e9 * 1e6).epsilon(1e-6));
}

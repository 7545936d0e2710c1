// Checkpoint write and load times on the storage model, against hand
// computation. The system: 10 GB of model state per GPU (a ZeRO-sharded
// shard), 8 GPUs per node, storage with 2 TB/s aggregate and 50 GB/s per
// node, 25 GB/s device-to-host per GPU, 50 GB/s per node to peers.
#include "catch.h"
#include "models/storage/checkpoint_storage.h"

using gcsim::models::storage::CheckpointMode;
using gcsim::models::storage::CheckpointShape;
using gcsim::models::storage::CheckpointStorage;
using gcsim::models::storage::StorageConfig;
using gcsim::sim::Bandwidth;

namespace {

StorageConfig example_storage() {
  StorageConfig c;
  c.aggregate = Bandwidth::gb_per_s(2000);
  c.per_node = Bandwidth::gb_per_s(50);
  c.device_to_host = Bandwidth::gb_per_s(25);
  c.peer_network = Bandwidth::gb_per_s(50);
  c.replicas = 1;
  return c;
}

CheckpointShape shape(int nodes) {
  CheckpointShape s;
  s.bytes_per_gpu = 10e9;
  s.gpus_per_node = 8;
  s.nodes = nodes;
  return s;
}

}  // namespace

TEST_CASE("storage: aggregate or per-node bandwidth limits a parallel write", "[storage]") {
  const CheckpointStorage st(example_storage());
  // 100 nodes x 50 GB/s = 5 TB/s of clients > 2 TB/s aggregate: 8 TB / 2 TB/s = 4 s.
  CHECK(st.parallel_bandwidth(100).gb_per_s() == Approx(2000));
  CHECK(st.storage_transfer(shape(100)).seconds() == Approx(4.0));
  // 10 nodes x 50 GB/s = 500 GB/s < 2 TB/s: 800 GB / 500 GB/s = 1.6 s.
  CHECK(st.parallel_bandwidth(10).gb_per_s() == Approx(500));
  CHECK(st.storage_transfer(shape(10)).seconds() == Approx(1.6));
}

TEST_CASE("storage: sync, async and in-memory checkpoint costs", "[storage]") {
  const CheckpointStorage st(example_storage());
  const CheckpointShape s = shape(100);
  // Snapshot: 10 GB / 25 GB/s = 0.4 s on every GPU at once.
  CHECK(st.snapshot(s).seconds() == Approx(0.4));

  SECTION("sync: snapshot then 4 s storage write, all blocking; load reads back") {
    const auto c = st.cost(s, CheckpointMode::sync);
    CHECK(c.blocking.seconds() == Approx(4.4));
    CHECK(c.durable.seconds() == Approx(4.4));
    CHECK(c.load.seconds() == Approx(4.4));
  }
  SECTION("async: only the snapshot blocks; durable after the overlapped write") {
    const auto c = st.cost(s, CheckpointMode::async);
    CHECK(c.blocking.seconds() == Approx(0.4));
    CHECK(c.durable.seconds() == Approx(4.4));
    CHECK(c.load.seconds() == Approx(4.4));
  }
  SECTION("in-memory: 80 GB per node to one peer at 50 GB/s = 1.6 s") {
    const auto c = st.cost(s, CheckpointMode::in_memory);
    CHECK(c.blocking.seconds() == Approx(0.4));
    CHECK(c.durable.seconds() == Approx(2.0));
    // The replacement node pulls 80 GB from its peer, then 0.4 s host to GPU.
    CHECK(c.load.seconds() == Approx(2.0));
  }
  SECTION("two replicas double the peer copy: 160 GB / 50 GB/s = 3.2 s") {
    StorageConfig cfg = example_storage();
    cfg.replicas = 2;
    const auto c = CheckpointStorage(cfg).cost(s, CheckpointMode::in_memory);
    CHECK(c.durable.seconds() == Approx(3.6));
  }
}

TEST_CASE("storage: checkpoint mode names", "[storage]") {
  CheckpointMode m = CheckpointMode::sync;
  CHECK(gcsim::models::storage::parse_checkpoint_mode("in-memory", m));
  CHECK(m == CheckpointMode::in_memory);
  CHECK_FALSE(gcsim::models::storage::parse_checkpoint_mode("lazy", m));
}

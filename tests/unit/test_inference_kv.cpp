// KV-cache sizing as vLLM computes it, and PagedAttention block accounting:
// exact block counts through allocate / grow / free, prefix-cache hits by
// chained hashes (a full hit still recomputes the last block), and LRU
// eviction order (a freed request's last block goes first).
#include "catch.h"
#include "test_inference_fixtures.h"
#include "workloads/inference/block_pool.h"
#include "workloads/inference/kv_cache_manager.h"
#include "workloads/inference/kv_capacity.h"

using namespace gcsim;
using namespace gcsim::workloads::inference;
using models::gpu::Dtype;

TEST_CASE("KV bytes per token: GQA sharded over TP, MLA replicated", "[inference][kv]") {
  // REFERENCE.md: Llama-2-70B 2 * 80 layers * 8 KV heads * 128 * 2 B =
  // 327,680 B = 320 KiB per token; at TP8 each GPU holds 1 KV head: 40 KiB.
  const auto llama = test::llama2_70b();
  CHECK(kv_bytes_per_token(llama, Dtype::bf16) == 327'680);
  CHECK(kv_bytes_per_token_per_gpu(llama, Dtype::bf16, {8, 1, 1}) == 40'960);
  // TP16 would split 8 KV heads 16 ways: vLLM replicates, still 1 head.
  CHECK(kv_bytes_per_token_per_gpu(llama, Dtype::bf16, {16, 1, 1}) == 40'960);
  // PP4: each stage caches 20 of the 80 layers.
  CHECK(kv_bytes_per_token_per_gpu(llama, Dtype::bf16, {8, 4, 1}) == 10'240);
  // fp8 KV halves it.
  CHECK(kv_bytes_per_token_per_gpu(llama, Dtype::fp8, {8, 1, 1}) == 20'480);
  // DeepSeek-V3 MLA: 61 layers * (512 latent + 64 rope) * 2 B = 70,272 B,
  // the same on every TP rank.
  const auto ds = test::model_preset("deepseek-v3");
  CHECK(kv_bytes_per_token(ds, Dtype::bf16) == 70'272);
  CHECK(kv_bytes_per_token_per_gpu(ds, Dtype::bf16, {8, 1, 1}) == 70'272);
  // Llama 3 8B: 2 * 32 * 8 * 128 * 2 = 131,072 B (128 KiB).
  CHECK(kv_bytes_per_token(test::model_preset("llama3-8b"), Dtype::bf16) == 131'072);
}

TEST_CASE("num_gpu_blocks for Llama-2-70B at TP8 on 80 GB H100s, by hand", "[inference][kv]") {
  // H100 SXM as nvidia-smi reports it: 81,559 MiB = 85,520,809,984 B;
  // x 0.9 = 76,968,728,985 B.
  // Weights per GPU (bf16): a layer has 150,994,944 attention + 704,643,072
  // MLP + 16,384 norm parameters; sharded over 8 except the norms:
  // 855,638,016 / 8 + 16,384 = 106,971,136; x 80 = 8,557,690,880; plus the
  // embedding and head (32,000 x 8,192 / 8 = 32,768,000 each) and the final
  // norm (8,192): 8,623,235,072 parameters = 17,246,470,144 B.
  // Peak activations of the profiling pass over 8,192 tokens: the MLP live
  // set 8,192 x (2 x 8,192 + 3 x 28,672 / 8) = 222,298,112 elements x 2 B =
  // 444,596,224 B; the sampler's fp32 logits 256 x 32,000 x 4 = 32,768,000
  // B; together 477,364,224 B. Non-torch memory 1 GiB.
  // KV: 76,968,728,985 - 17,246,470,144 - 477,364,224 - 1,073,741,824 =
  // 58,171,152,793 B; a block is 16 x 40,960 = 655,360 B: 88,762 blocks
  // (1,420,192 tokens).
  MemoryInputs in;
  in.parallel = {8, 1, 1};
  in.capacity = sim::Bytes(81559LL * 1048576);
  in.gpu_memory_utilization = 0.9;
  in.block_size = 16;
  in.max_num_batched_tokens = 8192;
  in.max_num_seqs = 256;
  in.non_torch = sim::GiB(1);
  const MemoryPlan p = plan_memory(test::llama2_70b(), in);
  CHECK(p.budget.count() == 76'968'728'985);
  CHECK(p.weights.count() == 17'246'470'144);
  CHECK(p.activations.count() == 477'364'224);
  CHECK(p.kv_cache.count() == 58'171'152'793);
  CHECK(p.block_bytes == 655'360);
  CHECK(p.num_blocks == 88'762);
  CHECK(p.weights_fit());
  // The same model on one GPU does not fit: 138 GB of weights.
  in.parallel = {1, 1, 1};
  const MemoryPlan one = plan_memory(test::llama2_70b(), in);
  CHECK_FALSE(one.weights_fit());
  CHECK(one.num_blocks == 0);
}

TEST_CASE("block accounting is exact through allocate, grow and free", "[inference][kv]") {
  KvCacheManager kv(10, 16, false);
  auto a = test::request(0, 40, 8);
  // 40 tokens need ceil(40/16) = 3 blocks.
  REQUIRE(kv.allocate(a, 40, 0, 40));
  CHECK(a.blocks.size() == 3);
  CHECK(kv.used_blocks() == 3);
  CHECK(kv.free_blocks() == 7);
  // Growing to 48 tokens fits in the third block; 49 needs a fourth.
  REQUIRE(kv.allocate(a, 48, 0, 48));
  CHECK(kv.used_blocks() == 3);
  REQUIRE(kv.allocate(a, 49, 0, 49));
  CHECK(kv.used_blocks() == 4);
  // A second request of 96 tokens takes 6: all 10 used; one more token fails
  // and changes nothing.
  auto b = test::request(1, 96, 8);
  REQUIRE(kv.allocate(b, 96, 0, 96));
  CHECK(kv.used_blocks() == 10);
  CHECK_FALSE(kv.allocate(b, 97, 0, 97));
  CHECK(b.blocks.size() == 6);
  CHECK(kv.used_blocks() == 10);
  kv.free(a);
  CHECK(a.blocks.empty());
  CHECK(kv.used_blocks() == 6);
  CHECK(kv.free_blocks() == 4);
  REQUIRE(kv.allocate(b, 97, 0, 97));
  CHECK(kv.used_blocks() == 7);
  CHECK(kv.peak_used_blocks() == 10);
  kv.free(b);
  CHECK(kv.used_blocks() == 0);
}

TEST_CASE("prefix cache: chained hashes, partial and full hits", "[inference][kv][prefix]") {
  KvCacheManager kv(32, 16, true);
  // A: 64-token prompt whose first 48 tokens are shared prefix 7.
  auto a = test::request(0, 64, 4, 7, 48);
  CHECK(kv.cached_prefix(a) == 0);
  REQUIRE(kv.allocate(a, 64, 0, 64));
  // B shares the prefix: its 3 prefix blocks hit (48 tokens); its 4th block
  // (tokens 48..63) is its own.
  auto b = test::request(1, 60, 4, 7, 48);
  CHECK(kv.cached_prefix(b) == 48);
  REQUIRE(kv.allocate(b, 60, 48, 60));
  CHECK(b.blocks[0] == a.blocks[0]);
  CHECK(b.blocks[2] == a.blocks[2]);
  CHECK(b.blocks[3] != a.blocks[3]);
  CHECK(kv.pool().ref_count(a.blocks[0]) == 2);
  // Shared blocks count once: 4 (A) + 1 (B's own) = 5 used.
  CHECK(kv.used_blocks() == 5);
  // C is the prefix alone (48 tokens): every block is cached, but the last
  // token must be recomputed for its logits, and hits are whole blocks, so
  // at most (48 - 1) / 16 = 2 blocks hit: 32 tokens, 16 recomputed.
  auto c = test::request(2, 48, 4, 7, 48);
  CHECK(kv.cached_prefix(c) == 32);
  // D: 49 tokens of which 48 shared: all 3 prefix blocks hit, 1 token computed.
  auto d = test::request(3, 49, 4, 7, 48);
  CHECK(kv.cached_prefix(d) == 48);
  // A different prefix id shares nothing; chaining means that a prefix
  // differing in block 0 cannot hit block 1 either.
  auto e = test::request(4, 64, 4, 8, 48);
  CHECK(kv.cached_prefix(e) == 0);
  CHECK(kv.block_hash(e, 1) != kv.block_hash(a, 1));
  CHECK(kv.hit_tokens() == 48 + 32 + 48);
}

TEST_CASE("prefix cache: freed blocks stay cached, evicted LRU, last block first",
          "[inference][kv][prefix]") {
  KvCacheManager kv(6, 16, true);
  auto a = test::request(0, 48, 4);  // blocks 0, 1, 2 (the queue starts in id order)
  auto b = test::request(1, 48, 4);  // blocks 3, 4, 5
  REQUIRE(kv.allocate(a, 48, 0, 48));
  REQUIRE(kv.allocate(b, 48, 0, 48));
  CHECK(a.blocks == std::vector<int32_t>{0, 1, 2});
  CHECK(b.blocks == std::vector<int32_t>{3, 4, 5});
  // Freed in reverse order, A before B: the eviction queue is A's last
  // block first.
  kv.free(a);
  kv.free(b);
  CHECK(kv.pool().free_order() == std::vector<int32_t>{2, 1, 0, 5, 4, 3});
  // Still cached: A coming back (a recompute after preemption) hits 2 blocks
  // ((48 - 1) / 16).
  auto a2 = test::request(0, 48, 4);
  CHECK(kv.cached_prefix(a2) == 32);
  // C takes two new blocks from the head: A's blocks 2 then 1, evicting
  // them. A's block 0 survives, so A now hits only its first block.
  auto c = test::request(2, 32, 4);
  REQUIRE(kv.allocate(c, 32, 0, 32));
  CHECK(c.blocks == std::vector<int32_t>{2, 1});
  CHECK(kv.pool().evictions() == 2);
  auto a3 = test::request(0, 48, 4);
  CHECK(kv.cached_prefix(a3) == 16);
  // Taking a cached block with no user (a hit) removes it from the free
  // queue rather than evicting it.
  // Queue before: 0, 5, 4, 3. A's block 0 leaves it as a hit; its two
  // new blocks come from the head (B's 5 and 4, evicted).
  REQUIRE(kv.allocate(a3, 48, 16, 48));
  CHECK(a3.blocks == std::vector<int32_t>{0, 5, 4});
  CHECK(kv.pool().free_order() == std::vector<int32_t>{3});
  CHECK(kv.pool().evictions() == 4);
}

TEST_CASE("block pool: reference counts and cache registration", "[inference][kv]") {
  BlockPool p(3);
  const int32_t b = p.take();
  CHECK(b == 0);
  p.register_hash(b, 42);
  CHECK(p.lookup(42) == 0);
  p.touch(b);
  CHECK(p.ref_count(b) == 2);
  p.release(b);
  p.release(b);
  CHECK(p.is_free(b));
  CHECK(p.lookup(42) == 0);  // still cached while free
  // The head of the queue is block 1 (never used), then 2, then 0.
  CHECK(p.take() == 1);
  CHECK(p.take() == 2);
  CHECK(p.take() == 0);
  CHECK_FALSE(p.lookup(42).has_value());
  CHECK(p.num_free() == 0);
}

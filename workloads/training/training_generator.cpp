#include "workloads/training/training_generator.h"

#include <algorithm>
#include <cmath>
#include <climits>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include "workloads/models/model_formulas.h"
#include "workloads/training/grad_buckets.h"
#include "workloads/training/host_issue.h"
#include "workloads/training/layer_kernels.h"
#include "workloads/training/optimizer_step.h"
#include "workloads/training/pipeline_receives.h"

namespace gcsim::workloads::training {

namespace {

using Message = PipelineMessage;

// Parameters (per GPU, TP-sharded) of one unit of a gradient bucket.
struct GradUnit {
  int layer;  // or kHeadLayer / kEmbeddingLayer
  double dense = 0, expert = 0;
};

// The ranks the optimizer's scalar all-reduces span (kSlotModelParallel):
// those whose gradients differ, tp x ep x pp, or every rank once sharded
// optimizer states make each rank's norm a different part.
Group optimizer_scalar_group(const TrainingConfig& c) {
  return c.optimizer.zero_stage >= 1 ? Group::world : Group::model_parallel;
}

// Everything one program's emission needs.
class ProgramBuilder {
 public:
  ProgramBuilder(const TrainingConfig& c, const PipelinePlan& plan, const GeneratorOptions& o,
                 WorkloadGraph& g, const TrainingStreams& streams, int pr, const EpRouting* ep,
                 int ep_index, double expert_load, int dp_full, int edp_full, int scalar_full)
      : c_(c),
        plan_(plan),
        o_(o),
        g_(g),
        pr_(pr),
        kernels_(c, ep, ep_index),
        main_(g, program_, categories_, streams),
        dp_full_(dp_full),
        edp_full_(edp_full),
        model_parallel_(scalar_full) {
    stages_ = model_stage_layers(c, plan);
    stage_bytes_ = stage_activation_bytes(c, plan, expert_load);
    memory_ = memory_for_rank(c, plan, pr, expert_load);
    const int pp = plan.ranks;
    next_ = (pr + 1) % pp;
    prev_ = (pr + pp - 1) % pp;
    kernels_.set_grad_hook([this](const GradReady& r) { grad_ready(r); });
  }
  ProgramBuilder(const ProgramBuilder&) = delete;  // the grad hook holds `this`
  ProgramBuilder& operator=(const ProgramBuilder&) = delete;

  void build() {
    if (o_.memory_ops) {
      const double fixed = memory_.weights + memory_.gradients + memory_.optimizer_states +
                           memory_.communication_buffers + memory_.reserved;
      em_->memory("model states and buffers", static_cast<int64_t>(std::llround(fixed)), {});
    }
    const auto posts = receive_posts(plan_, pr_, receive_posting(c_.framework, c_.parallel.schedule));
    plan_reduce_passes();
    std::vector<uint32_t> barrier;
    size_t index = 0;
    for (const Pass& p : plan_.passes[static_cast<size_t>(pr_)]) {
      post_receives(posts[index++], barrier);
      std::vector<uint32_t> ends;
      switch (p.kind) {
        case PassKind::forward: ends = {forward(p.f, 0, barrier)}; break;
        case PassKind::backward: ends = {backward(p.b, 0, false, barrier)}; break;
        case PassKind::backward_input: ends = {backward(p.b, 0, true, barrier)}; break;
        case PassKind::weight: ends = {weight(p.b, barrier)}; break;
        case PassKind::forward_backward:
          ends = overlapped(p, barrier);
          break;
      }
      barrier = ends;
    }
    optimizer(barrier);
  }

  RankProgram& program() { return program_; }

 private:
  // DualPipe's overlapped pair (DeepSeek-V3, 3.2.1): the forward of one
  // micro-batch and the backward of another, each chunk's compute run in
  // turns on the one compute stream so that the communication each issues
  // (all-to-all, pipeline) proceeds while the other computes. Both outputs
  // are sent once the pair is done (_forward_backward_chunk).
  std::vector<uint32_t> overlapped(const Pass& p, const std::vector<uint32_t>& barrier) {
    const TrainingStreams& streams = main_.streams();
    RankProgram prog_f, prog_b;
    std::vector<OpCategory> cats_f, cats_b;
    OpEmitter ef(g_, prog_f, cats_f, streams), eb(g_, prog_b, cats_b, streams);
    staging_ = true;
    hold_sends_ = true;
    const uint32_t dp_before = last_dp_;
    em_ = &ef;
    const uint32_t end_f = forward(p.f, 0, barrier);
    const uint32_t dp_f = last_dp_;
    em_ = &eb;
    const uint32_t end_b = backward(p.b, 1, false, barrier);
    const uint32_t dp_b = last_dp_;
    em_ = &main_;
    staging_ = false;
    hold_sends_ = false;
    std::vector<uint32_t> map_f, map_b;
    merge(prog_f, cats_f, prog_b, cats_b, map_f, map_b);
    if (dp_b != dp_f) last_dp_ = map_b[dp_b];
    else if (dp_f != dp_before) last_dp_ = map_f[dp_f];
    lane_cursor_[0] = end_f == kNoOp ? lane_cursor_[0] : map_f[end_f];
    lane_cursor_[1] = end_b == kNoOp ? lane_cursor_[1] : map_b[end_b];
    const std::vector<uint32_t> ends{lane_cursor_[0], lane_cursor_[1]};
    for (const auto& [msg, dst, name] : held_) {
      const uint16_t slot = peer_slot(dst);
      main_.send(name, slot, streams.pp_send[slot == kPeerPpNext ? 0 : 1],
                 kernels_.pipeline_message_bytes(), OpCategory::pp, ends);
    }
    held_.clear();
    return ends;
  }

  // Appends two staged halves to the program, compute on stream 0 only:
  // each half runs until its next kernel waits for communication it issued
  // in that turn, then the other takes over.
  void merge(const RankProgram& f, const std::vector<OpCategory>& cf, const RankProgram& b,
             const std::vector<OpCategory>& cb, std::vector<uint32_t>& map_f,
             std::vector<uint32_t>& map_b) {
    const TrainingStreams& streams = main_.streams();
    const RankProgram* progs[2] = {&f, &b};
    const std::vector<OpCategory>* cats[2] = {&cf, &cb};
    std::vector<uint32_t>* maps[2] = {&map_f, &map_b};
    map_f.assign(f.ops.size(), kNoOp);
    map_b.assign(b.ops.size(), kNoOp);
    size_t next[2] = {0, 0};
    std::vector<uint8_t> issued_this_turn[2] = {std::vector<uint8_t>(f.ops.size(), 0),
                                                std::vector<uint8_t>(b.ops.size(), 0)};
    int cur = 0;
    auto is_comm = [](const Op& op) { return is_communication(op.kind); };
    while (next[0] < f.ops.size() || next[1] < b.ops.size()) {
      if (next[cur] >= progs[cur]->ops.size()) cur = 1 - cur;
      const Op& src = progs[cur]->ops[next[cur]];
      const int other = 1 - cur;
      if (!is_comm(src) && next[other] < progs[other]->ops.size()) {
        bool waits = false;
        for (uint32_t d : src.deps) {
          waits = waits || (!(d & OpEmitter::kExternal) && issued_this_turn[cur][d]);
        }
        if (waits) {
          std::fill(issued_this_turn[cur].begin(), issued_this_turn[cur].end(), 0);
          cur = other;
          continue;
        }
      }
      Op op = src;
      for (uint32_t& d : op.deps) {
        d = (d & OpEmitter::kExternal) ? (d & ~OpEmitter::kExternal) : (*maps[cur])[d];
      }
      if (op.stream == streams.compute[1]) op.stream = streams.compute[0];
      (*maps[cur])[next[cur]] = main_.append_op(std::move(op), (*cats[cur])[next[cur]]);
      if (is_comm(src)) issued_this_turn[cur][next[cur]] = 1;
      ++next[cur];
    }
  }

 public:
  std::vector<OpCategory>& categories() { return categories_; }

 private:
  std::string prefix(char pass, const Work& w) const {
    std::string p(1, pass);
    if (plan_.stages_of(pr_).size() > 1) p += " s" + std::to_string(w.stage);
    return p + " m" + std::to_string(w.micro);
  }
  uint16_t peer_slot(int dst_pr) const { return dst_pr == next_ ? kPeerPpNext : kPeerPpPrev; }

  // The receives posted before a pass (pipeline_receives.h): each waits for
  // `after`, the previous pass's end, as NCCL's stream waits for the
  // compute stream where the framework issues it.
  void post_receives(const std::vector<PostedReceive>& posts, const std::vector<uint32_t>& after) {
    const int64_t bytes = kernels_.pipeline_message_bytes();
    std::vector<uint32_t> deps;
    for (uint32_t d : after) {
      if (d != kNoOp) deps.push_back(d);
    }
    for (const PostedReceive& r : posts) {
      const Message& msg = r.msg;
      const uint16_t slot = peer_slot(r.src);
      const std::string name = std::string(msg.backward ? "recv grad" : "recv act") + " s" +
                               std::to_string(msg.stage) + " m" + std::to_string(msg.micro);
      recvs_[msg] = em_->recv(name, slot, em_->streams().pp_recv[slot == kPeerPpNext ? 0 : 1],
                              bytes, OpCategory::pp, deps);
    }
  }

  void send(const Message& msg, int dst_pr, const std::string& p) {
    if (hold_sends_) {
      held_.push_back({msg, dst_pr, p + (msg.backward ? " send grad" : " send act")});
      return;
    }
    const uint16_t slot = peer_slot(dst_pr);
    em_->send(p + (msg.backward ? " send grad" : " send act"), slot,
            em_->streams().pp_send[slot == kPeerPpNext ? 0 : 1], kernels_.pipeline_message_bytes(),
            OpCategory::pp, {em_->cursor()});
  }

  // An op of the main program named from a staging program.
  uint32_t ext(uint32_t op) const {
    return staging_ && op != kNoOp ? op | OpEmitter::kExternal : op;
  }

  // Makes the first op emitted since `start` wait for `deps`.
  void wait_first(uint32_t start, const std::vector<uint32_t>& deps) {
    if (start >= em_->size()) return;
    for (uint32_t d : deps) {
      if (d != kNoOp) em_->depend(start, ext(d));
    }
  }

  bool zero3() const { return c_.optimizer.zero_stage >= 3 && dp_full_ > 1; }

  // ZeRO-3: the layer's parameters gathered from the data-parallel group
  // (one layer ahead: it waits for the previous layer's first op).
  uint32_t gather_layer(int layer, const std::string& p, uint32_t after) {
    if (!zero3()) return kNoOp;
    const GradUnit u = unit(layer);
    const double w = c_.optimizer.weight_bytes;
    uint32_t last = em_->collective(p + " L" + std::to_string(layer) + " param gather",
                                  CollectiveKind::all_gather,
                                  static_cast<int64_t>(std::ceil(u.dense * w)), kSlotDp,
                                  em_->streams().dp, OpCategory::dp, {after}, false);
    if (u.expert > 0 && edp_full_ > 1) {
      last = em_->collective(p + " L" + std::to_string(layer) + " expert gather",
                           CollectiveKind::all_gather,
                           static_cast<int64_t>(std::ceil(u.expert * w)), kSlotExpertDp,
                           em_->streams().dp, OpCategory::dp, {after}, false);
    }
    return last;
  }

  uint32_t forward(const Work& w, int lane, const std::vector<uint32_t>& barrier) {
    em_->set_lane(lane);
    em_->set_cursor(ext(lane_cursor_[lane]));
    const std::string p = prefix('F', w);
    const uint32_t start = em_->size();
    kernels_.set_micro_batch(w.micro);
    if (o_.memory_ops) {
      em_->memory(p + " activations", static_cast<int64_t>(std::llround(stage_bytes_[w.stage])), {});
    }
    uint32_t incoming = kNoOp;
    if (w.stage == 0) {
      kernels_.embedding_forward(*em_, p);
    } else {
      incoming = ext(recvs_.at({false, w.stage - 1, w.micro}));
      kernels_.pipeline_gather(*em_, p, incoming);
    }
    const StageLayers& s = stages_[static_cast<size_t>(w.stage)];
    uint32_t prev_first = kNoOp;
    for (int l = s.first; l < s.first + s.count; ++l) {
      const uint32_t gathered = gather_layer(l, p, prev_first);
      const uint32_t first = em_->size();
      kernels_.layer_forward(*em_, l, p);
      if (first < em_->size()) {
        if (gathered != kNoOp) em_->depend(first, gathered);
        if (incoming != kNoOp) em_->depend(first, incoming);
        incoming = kNoOp;
      }
      prev_first = first;
    }
    if (w.stage == plan_.model_stages - 1) {
      const bool workspace = loss_workspace_in_forward(c_);
      if (workspace) loss_workspace(p, +1);
      kernels_.head_forward(*em_, p);
      if (workspace) loss_workspace(p, -1);
    } else {
      send({false, w.stage, w.micro}, plan_.rank_of(w.stage + 1, w.micro), p);
    }
    wait_first(start, barrier);
    lane_cursor_[lane] = em_->cursor();
    return em_->cursor();
  }

  uint32_t backward(const Work& w, int lane, bool defer, const std::vector<uint32_t>& barrier) {
    em_->set_lane(lane);
    em_->set_cursor(ext(lane_cursor_[lane]));
    const std::string p = prefix('B', w);
    const uint32_t start = em_->size();
    std::vector<DeferredWeights> deferred;
    kernels_.set_accumulating(w.micro > 0);
    kernels_.set_micro_batch(w.micro);
    // The gradients reduced after this pass: bucketed as they complete.
    if (!defer && reduces_after(w)) start_buckets(w.stage, p);
    uint32_t incoming = kNoOp;
    if (w.stage == plan_.model_stages - 1) {
      begin_unit(kHeadLayer);
      const bool workspace = !loss_workspace_in_forward(c_);
      if (workspace) loss_workspace(p, +1);
      kernels_.head_backward(*em_, p, defer, deferred);
      if (workspace) loss_workspace(p, -1);
      end_unit();
    } else {
      incoming = ext(recvs_.at({true, w.stage + 1, w.micro}));
      kernels_.pipeline_gather(*em_, p, incoming);
    }
    const StageLayers& s = stages_[static_cast<size_t>(w.stage)];
    uint32_t prev_first = kNoOp;
    for (int l = s.first + s.count - 1; l >= s.first; --l) {
      const uint32_t gathered = gather_layer(l, p, prev_first);
      const uint32_t first = em_->size();
      begin_unit(l);
      kernels_.layer_backward(*em_, l, p, defer, deferred);
      end_unit();
      if (gathered != kNoOp) em_->depend(first, gathered);
      if (incoming != kNoOp) em_->depend(first, incoming);
      incoming = kNoOp;
      prev_first = first;
    }
    if (w.stage == 0) {
      begin_unit(kEmbeddingLayer);
      kernels_.embedding_backward(*em_, p, defer, deferred);
      end_unit();
    }
    finish_buckets();
    if (w.stage > 0) send({true, w.stage, w.micro}, plan_.rank_of(w.stage - 1, w.micro), p);
    if (defer) {
      pending_.push_back({w, std::move(deferred)});
    } else if (o_.memory_ops) {
      em_->memory(p + " free", -static_cast<int64_t>(std::llround(stage_bytes_[w.stage])),
                {em_->cursor()});
    }
    wait_first(start, barrier);
    lane_cursor_[lane] = em_->cursor();
    return em_->cursor();
  }

  // The loss's working tensors (memory_model.h, loss_workspace_bytes): held
  // over the head's forward or backward, as the measured peak shows.
  void loss_workspace(const std::string& p, int sign) {
    const double bytes = loss_workspace_bytes(c_);
    if (!o_.memory_ops || bytes <= 0.0) return;
    const auto delta = sign * static_cast<int64_t>(std::llround(bytes));
    if (sign > 0) {
      em_->memory(p + " loss workspace", delta, {});
    } else {
      em_->memory(p + " loss workspace free", delta, {em_->cursor()});
    }
  }

  uint32_t weight(const Work& w, const std::vector<uint32_t>& barrier) {
    em_->set_lane(0);
    em_->set_cursor(ext(lane_cursor_[0]));
    const uint32_t start = em_->size();
    auto item = std::move(pending_.front());
    pending_.pop_front();
    const std::string p = prefix('W', item.first);
    if (reduces_after(item.first)) start_buckets(item.first.stage, p);
    for (const DeferredWeights& d : item.second) {
      begin_unit(d.layer);
      kernels_.emit_weights(*em_, d);
      end_unit();
    }
    if (item.first.stage == 0) {  // its gradient was made in the B pass
      begin_unit(kEmbeddingLayer);
      end_unit();
    }
    finish_buckets();
    if (o_.memory_ops) {
      em_->memory(p + " free", -static_cast<int64_t>(std::llround(stage_bytes_[item.first.stage])),
                {em_->cursor()});
    }
    wait_first(start, barrier);
    lane_cursor_[0] = em_->cursor();
    static_cast<void>(w);
    return em_->cursor();
  }

  // -------------------------------------------------------------------
  // Data-parallel gradient buckets

  GradUnit unit(int layer) const {
    const auto counts = models::count_params(c_.model);
    const double t = c_.parallel.tp;
    GradUnit u{layer};
    if (layer == kHeadLayer) {
      const bool copy = c_.model.tied_embeddings && plan_.model_stages > 1;
      u.dense = (c_.model.tied_embeddings ? (copy ? counts.embedding : 0.0) : counts.output_head) /
                    t + counts.final_norm;
    } else if (layer == kEmbeddingLayer) {
      u.dense = counts.embedding / t + counts.position;
    } else {
      const auto& lp = c_.model.is_moe_layer(layer) ? counts.moe_layer : counts.dense_layer;
      u.dense = lp.attention / t + lp.norms + lp.dense_mlp / t + lp.router + lp.shared_experts / t;
      u.expert = lp.routed_experts / c_.parallel.ep / t;
    }
    return u;
  }

  // The pass after which each stage's gradients are reduced: every one
  // with ZeRO-2/3 (gradients are sharded, so never accumulated whole), else
  // the last that completes its weight gradients.
  void plan_reduce_passes() {
    for (int k : plan_.stages_of(pr_)) {
      for (const Pass& p : plan_.passes[static_cast<size_t>(pr_)]) {
        const bool weights = p.kind == PassKind::backward || p.kind == PassKind::weight ||
                             p.kind == PassKind::forward_backward;
        if (weights && p.b.stage == k) last_weight_micro_[k] = p.b.micro;
      }
    }
  }

  static std::string unit_name(int layer) {
    return layer == kHeadLayer        ? std::string("head")
           : layer == kEmbeddingLayer ? std::string("embedding")
                                      : "L" + std::to_string(layer);
  }

  bool reduces_after(const Work& w) const {
    if (dp_full_ <= 1 && edp_full_ <= 1) return false;
    if (c_.optimizer.zero_stage >= 2) return true;
    auto it = last_weight_micro_.find(w.stage);
    return it != last_weight_micro_.end() && it->second == w.micro;
  }

  // A pass whose gradients are reduced: stage `stage`'s buckets open
  // (grad_buckets.h), filled as its gradients complete (grad_ready, at each
  // unit's end what no hook named) and flushed when the pass ends.
  void start_buckets(int stage, const std::string& p) {
    collecting_ = true;
    bucket_prefix_ = p;
    buckets_closed_ = 0;
    buckets_ = GradBucketFiller(grad_bucket_rule(c_, pr_, stage, plan_.stages_of(pr_).front()),
                                c_.optimizer.grad_bytes);
  }
  void begin_unit(int layer) {
    if (!collecting_) return;
    unit_ = layer;
    unit_left_ = unit(layer);
    unit_pieces_ = 0;
  }
  // A gradient complete (LayerKernels' hook): its parameters taken from
  // what the unit has left (a tied head's logits GEMM makes the
  // embedding's gradient, which completes with the embedding).
  void grad_ready(const GradReady& r) {
    if (!collecting_ || unit_ == kNoUnit) return;
    double& left = r.expert ? unit_left_.expert : unit_left_.dense;
    const double params = std::min(left, r.params);
    left -= params;
    held_grads_.push_back(r.expert ? GradUnit{unit_, 0, params} : GradUnit{unit_, params, 0});
    if (!r.hold) release_grads();
  }
  void end_unit() {
    if (!collecting_) return;
    if (unit_left_.dense > 0 || unit_left_.expert > 0) held_grads_.push_back(unit_left_);
    release_grads();
    unit_ = kNoUnit;
  }
  // The held gradients: a compiled region's come out together, in the
  // order autograd hands them out (grad_buckets.h) of the order its forward
  // used them, the reverse of the backward order the hook named them in.
  void release_grads() {
    std::reverse(held_grads_.begin(), held_grads_.end());
    for (size_t i : autograd_ready_order(held_grads_.size())) bucket_grad(held_grads_[i]);
    held_grads_.clear();
  }
  void bucket_grad(const GradUnit& u) {
    if (u.dense <= 0 && u.expert <= 0) return;
    if (c_.optimizer.zero_stage == 0 && dp_full_ > 1 && u.dense > 0) {
      // DDP (plain PyTorch): the gradient scaled into its bucket by its
      // autograd hook, on the compute stream.
      kernels_.ddp_bucket_copy(*em_, bucket_prefix_ + " " + unit_name(u.layer) + " g" +
                                         std::to_string(unit_pieces_++),
                               u.dense, kNoOp);
    }
    if (!c_.parallel.overlap_grad_reduce) return;  // reduce_after_flush() does it
    emit_bucket(buckets_.add(u.dense, u.expert));
  }
  void finish_buckets() {
    if (!collecting_) return;
    if (c_.parallel.overlap_grad_reduce) emit_bucket(buckets_.flush());
    collecting_ = false;
  }
  // A closed bucket's reduce, beside the chain from its last gradient on.
  void emit_bucket(const GradBucket& b) {
    if (b.dense <= 0 && b.expert <= 0) return;
    const double g = c_.optimizer.grad_bytes;
    const CollectiveKind kind =
        c_.optimizer.zero_stage == 0 ? CollectiveKind::all_reduce : CollectiveKind::reduce_scatter;
    const std::string name = bucket_prefix_ + " grad bucket " + std::to_string(buckets_closed_++);
    if (b.dense > 0 && dp_full_ > 1) {
      last_dp_ = em_->collective(name, kind, static_cast<int64_t>(std::ceil(b.dense * g)), kSlotDp,
                                 em_->streams().dp, OpCategory::dp, {}, false);
    }
    if (b.expert > 0 && edp_full_ > 1) {
      last_dp_ = em_->collective(name + " experts", kind,
                                 static_cast<int64_t>(std::ceil(b.expert * g)), kSlotExpertDp,
                                 em_->streams().dp, OpCategory::dp, {}, false);
    }
  }

  // Without overlap (Megatron-LM's "local" DDP of 2021,
  // overlap_grad_reduce=False): one reduce of the rank's whole gradient
  // buffer once the pipeline has flushed, which the optimizer waits for.
  void reduce_after_flush() {
    const RankParams params = memory_.params;
    const double g = c_.optimizer.grad_bytes;
    const CollectiveKind kind =
        c_.optimizer.zero_stage == 0 ? CollectiveKind::all_reduce : CollectiveKind::reduce_scatter;
    if (params.dense > 0 && dp_full_ > 1) {
      last_dp_ = em_->collective("grad reduce after flush", kind,
                                 static_cast<int64_t>(std::ceil(params.dense * g)), kSlotDp,
                                 em_->streams().dp, OpCategory::dp);
    }
    if (params.expert > 0 && edp_full_ > 1) {
      last_dp_ = em_->collective("expert grad reduce after flush", kind,
                                 static_cast<int64_t>(std::ceil(params.expert * g)),
                                 kSlotExpertDp, em_->streams().dp, OpCategory::dp);
    }
  }

  // -------------------------------------------------------------------
  // Optimizer

  void optimizer(const std::vector<uint32_t>& barrier) {
    em_->set_lane(0);
    em_->set_cursor(ext(lane_cursor_[0]));
    const uint32_t start = em_->size();
    const RankParams params = memory_.params;
    const auto counts = models::count_params(c_.model);
    const double g = c_.optimizer.grad_bytes;
    if (!c_.parallel.overlap_grad_reduce) reduce_after_flush();
    // Gradients of parameters held twice: DualPipe's two copies of each
    // stage, or a tied embedding's copy on the last stage.
    if (plan_.schedule == Schedule::dualpipe && plan_.ranks > 1) {
      em_->collective("pipeline pair grad sync", CollectiveKind::all_reduce,
                    static_cast<int64_t>(std::ceil(params.total() * g)), kSlotEmbedding,
                    em_->streams().dp, OpCategory::dp, {last_dp_});
    } else if (c_.model.tied_embeddings && plan_.model_stages > 1) {
      const auto stages = plan_.stages_of(pr_);
      const bool ends = std::find(stages.begin(), stages.end(), 0) != stages.end() ||
                        std::find(stages.begin(), stages.end(), plan_.model_stages - 1) !=
                            stages.end();
      if (ends) {
        em_->collective("embedding grad sync", CollectiveKind::all_reduce,
                      static_cast<int64_t>(std::ceil(counts.embedding / c_.parallel.tp * g)),
                      kSlotEmbedding, em_->streams().dp, OpCategory::pp, {last_dp_});
      }
    }
    if (c_.optimizer.zero_stage == 0 && dp_full_ > 1) {
      // DDP (plain PyTorch): the reduced buckets back into the .grad tensors.
      const uint32_t back = kernels_.ddp_copy_back(*em_, "grads", params.dense, last_dp_);
      if (back != kNoOp) last_dp_ = back;
    }
    // The mixed-precision step's HBM passes (optimizer_step.h): over this
    // rank's optimizer shard, or over every gradient it holds.
    const OptimizerScope scope = optimizer_scope(params, c_.optimizer.zero_stage, dp_full_, edp_full_);
    for (const OptimizerPass& pass : optimizer_passes(c_.optimizer, c_.precision, c_.framework)) {
      gcsim::models::gpu::MemoryOpShape shape;
      shape.kind = gcsim::models::gpu::MemoryOpKind::elementwise;
      shape.elements = std::max<int64_t>(1, std::llround(pass.over_shard ? scope.shard : scope.held));
      shape.bytes_per_element = pass.bytes();
      shape.flops_per_element = pass.flops;
      shape.dtype = gcsim::models::gpu::Dtype::fp32;
      if (c_.framework != Framework::megatron) {
        shape.bandwidth_efficiency =
            FrameworkProfile(c_.framework, c_.framework_traits).traits().optimizer_bandwidth;
      }
      em_->kernel("optimizer " + pass.name, shape, OpCategory::optimizer, {last_dp_});
      // A blocking all-reduce of one fp32 scalar, in line with the passes.
      if (pass.reduces_scalar && model_parallel_ > 1) {
        em_->collective("optimizer " + pass.name + " all-reduce", CollectiveKind::all_reduce, 4,
                        kSlotModelParallel, em_->streams().tp[0], OpCategory::optimizer);
      }
    }
    const int stage = c_.optimizer.zero_stage;
    if (stage == 1 || stage == 2) {
      const double w = c_.optimizer.weight_bytes;
      if (params.dense > 0 && dp_full_ > 1) {
        em_->collective("param all-gather", CollectiveKind::all_gather,
                      static_cast<int64_t>(std::ceil(params.dense * w)), kSlotDp, em_->streams().dp,
                      OpCategory::dp);
      }
      if (params.expert > 0 && edp_full_ > 1) {
        em_->collective("expert param all-gather", CollectiveKind::all_gather,
                      static_cast<int64_t>(std::ceil(params.expert * w)), kSlotExpertDp,
                      em_->streams().dp, OpCategory::dp);
      }
    }
    wait_first(start, barrier);
  }

  const TrainingConfig& c_;
  const PipelinePlan& plan_;
  const GeneratorOptions& o_;
  WorkloadGraph& g_;
  int pr_;
  LayerKernels kernels_;
  RankProgram program_;
  std::vector<OpCategory> categories_;
  OpEmitter main_;
  OpEmitter* em_ = &main_;  // where ops go: main_, or a staging program
  bool staging_ = false;
  int dp_full_, edp_full_;
  int model_parallel_;  // ranks of the optimizer's scalar all-reduces (kSlotModelParallel)
  int next_ = 0, prev_ = 0;
  std::vector<StageLayers> stages_;
  std::vector<double> stage_bytes_;
  MemoryBreakdown memory_;
  std::map<Message, uint32_t> recvs_;
  uint32_t lane_cursor_[2] = {kNoOp, kNoOp};
  std::deque<std::pair<Work, std::vector<DeferredWeights>>> pending_;
  std::map<int, int> last_weight_micro_;  // stage -> micro-batch
  // The DP buckets of the pass being emitted (start_buckets()).
  static constexpr int kNoUnit = INT32_MIN;
  bool collecting_ = false;
  std::string bucket_prefix_;
  int buckets_closed_ = 0;
  GradBucketFiller buckets_;
  int unit_ = kNoUnit;  // the layer (or head, embedding) whose gradients complete now
  GradUnit unit_left_;  // its parameters no completed gradient has taken yet
  int unit_pieces_ = 0;
  std::vector<GradUnit> held_grads_;  // complete, held in a compiled region
  uint32_t last_dp_ = kNoOp;
  bool hold_sends_ = false;
  std::vector<std::tuple<Message, int, std::string>> held_;
};

int node_of(int rank, int gpus_per_node) { return rank / gpus_per_node; }

// How a group sits on the machine: ranks per node, sorted.
std::vector<int> shape_of(const std::vector<int>& members, int gpus_per_node) {
  std::map<int, int> per_node;
  for (int r : members) ++per_node[node_of(r, gpus_per_node)];
  std::vector<int> shape;
  for (const auto& [node, n] : per_node) shape.push_back(n);
  std::sort(shape.begin(), shape.end());
  return shape;
}

}  // namespace

std::vector<double> expert_loads(const TrainingConfig& c) {
  if (!c.model.is_moe()) return std::vector<double>(static_cast<size_t>(c.parallel.ep), 1.0);
  return EpRouting(c, 0).loads();
}

std::string asymmetry(const TrainingConfig& c, const RankGrid& grid, int gpus_per_node) {
  static const std::pair<Group, const char*> kGroups[] = {
      {Group::tp, "tp"}, {Group::cp, "cp"}, {Group::ep, "ep"}, {Group::dp, "dp"},
      {Group::expert_dp, "expert dp"}};
  for (const auto& [group, name] : kGroups) {
    std::vector<int> first_shape;
    std::vector<bool> seen(static_cast<size_t>(grid.size()), false);
    for (int r = 0; r < grid.size(); ++r) {
      if (seen[static_cast<size_t>(r)]) continue;
      const auto members = grid.group(group, r);
      for (int m : members) seen[static_cast<size_t>(m)] = true;
      const auto shape = shape_of(members, gpus_per_node);
      if (first_shape.empty()) {
        first_shape = shape;
      } else if (shape != first_shape) {
        return std::string(name) + " groups sit differently across nodes (e.g. the group of rank " +
               std::to_string(r) + ")";
      }
    }
  }
  // Pipeline neighbours: every rank of a stage must reach its next stage
  // over the same tier.
  const int pp = c.parallel.pp;
  for (int s = 0; s < pp && pp > 1; ++s) {
    int same = -1;
    for (int r = 0; r < grid.size(); ++r) {
      if (grid.at(r, Axis::pp) != s) continue;
      const int n = grid.moved(r, Axis::pp, (s + 1) % pp);
      const int here = node_of(r, gpus_per_node) == node_of(n, gpus_per_node) ? 1 : 0;
      if (same < 0) same = here;
      if (here != same) return "pipeline stage " + std::to_string(s) + " reaches the next one "
                                "over different tiers from different ranks";
    }
  }
  return "";
}

TrainingWorkload generate_training(const TrainingConfig& c, const GeneratorOptions& o) {
  TrainingWorkload w;
  const auto& p = c.parallel;
  const RankGrid grid(p);
  w.plan = build_pipeline(p.schedule, p.pp, p.virtual_stages, static_cast<int>(c.micro_batches()));
  const auto ep_shape = shape_of(grid.group(Group::ep, 0), o.gpus_per_node);
  w.ep_spans_nodes = ep_shape.size() > 1;
  if (c.model.is_moe()) {
    // Node-limited routing's two legs need the same EP ranks on every node.
    const bool even = ep_shape.front() == ep_shape.back();
    w.ep_routing = std::make_shared<const EpRouting>(c, w.ep_spans_nodes && even ? ep_shape.front() : 0);
    w.expert_load = w.ep_routing->loads();
  } else {
    w.expert_load.assign(static_cast<size_t>(p.ep), 1.0);
  }
  w.max_expert_load = *std::max_element(w.expert_load.begin(), w.expert_load.end());

  // Which axes are mirrored.
  std::array<bool, kAxes> mirrored{};
  if (o.mirror) {
    w.mirror_note = asymmetry(c, grid, o.gpus_per_node);
    if (w.mirror_note.empty()) {
      mirrored[static_cast<size_t>(Axis::tp)] = true;
      mirrored[static_cast<size_t>(Axis::cp)] = true;
      mirrored[static_cast<size_t>(Axis::edp)] = true;
      mirrored[static_cast<size_t>(Axis::ep)] = true;
      if (w.max_expert_load != 1.0 && p.ep > 1) {
        w.mirror_note = "uneven expert load: the simulated EP rank runs each MoE layer's hot rank "
                        "(most rows) and its all-to-alls carry the whole group's splits, so each "
                        "layer takes its slowest rank's time (exact when one rank is hot in every "
                        "layer; an upper bound when the hot rank moves and DualPipe overlaps layers)";
        if (c.model.moe.sample) {
          w.mirror_note += "; sampled, each (MoE layer, micro-batch) draw's hot rank: an upper "
                           "bound, as no one GPU is hot in every draw";
        }
      }
    }
  } else {
    w.mirror_note = "mirroring off (workload.simulate: all)";
  }
  w.mirrored_axis = mirrored;
  w.grid = grid;
  static const char* kAxisNames[] = {"tp", "cp", "ep", "dp", "pp"};
  for (size_t a = 0; a < kAxes; ++a) {
    if (mirrored[a] && grid.extent(static_cast<Axis>(a)) > 1) {
      w.mirrored = true;
      w.mirrored_axes += (w.mirrored_axes.empty() ? "" : ", ") + std::string(kAxisNames[a]);
    }
  }
  auto simulated = [&](int r) { return grid.mirror(r, mirrored) == r; };
  for (int r = 0; r < grid.size(); ++r) {
    if (simulated(r)) w.simulated.push_back(r);
  }

  w.graph = std::make_unique<WorkloadGraph>(grid.size());
  WorkloadGraph& g = *w.graph;
  const TrainingStreams streams = TrainingStreams::intern(g);
  const int dp_full = static_cast<int>(grid.group(Group::dp, 0).size());
  const int edp_full = static_cast<int>(grid.group(Group::expert_dp, 0).size());
  const int scalar_full = static_cast<int>(grid.group(optimizer_scalar_group(c), 0).size());

  // One program per pipeline rank (and EP rank when EP is not mirrored),
  // shared by the simulated ranks that run it through their bindings.
  RankProgram empty;
  const uint32_t idle = g.add_program(empty);
  std::map<std::pair<int, int>, uint32_t> programs;  // (pipeline rank, ep index) -> id
  std::map<uint32_t, std::vector<OpCategory>> categories;
  for (int r : w.simulated) {
    const int pr = grid.at(r, Axis::pp);
    // A mirrored EP rank stands for each layer's hot rank (ep_routing.h).
    const int ei = mirrored[static_cast<size_t>(Axis::ep)] ? -1 : grid.at(r, Axis::ep);
    auto it = programs.find({pr, ei});
    if (it == programs.end()) {
      const double load = ei < 0 ? w.max_expert_load : w.expert_load[static_cast<size_t>(ei)];
      ProgramBuilder b(c, w.plan, o, g, streams, pr, w.ep_routing.get(), ei, load, dp_full,
                       edp_full, scalar_full);
      b.build();
      const uint32_t id = g.add_program(std::move(b.program()));
      categories[id] = std::move(b.categories());
      it = programs.emplace(std::make_pair(pr, ei), id).first;
    }
    RankBinding binding;
    binding.comms.resize(kCommSlots);
    auto bind = [&](uint16_t slot, Group group, bool reversed) {
      const std::vector<int> full = grid.group(group, r);
      std::vector<int> members;
      for (int m : full) {
        if (simulated(m)) members.push_back(m);
      }
      // A second lane needs its own communicator: the same ranks listed
      // the other way round make a distinct one (and its split matrices
      // are listed that way too, ep_routing.h).
      if (reversed) std::reverse(members.begin(), members.end());
      binding.comms[slot] = g.add_communicator(members);
      if (members.size() != full.size()) {
        std::vector<int> widened = full;
        if (reversed) std::reverse(widened.begin(), widened.end());
        w.widened_groups[TrainingWorkload::slot_key(r, slot)] = std::move(widened);
      }
    };
    bind(kSlotTp, Group::tp, false);
    bind(kSlotTp + 1, Group::tp, true);
    bind(kSlotEp, Group::ep, false);
    bind(kSlotEp + 1, Group::ep, true);
    bind(kSlotDp, Group::dp, false);
    bind(kSlotExpertDp, Group::expert_dp, false);
    bind(kSlotModelParallel, optimizer_scalar_group(c), false);
    if (p.schedule == Schedule::dualpipe) {
      std::vector<int> pair{r, grid.moved(r, Axis::pp, p.pp - 1 - pr)};
      std::sort(pair.begin(), pair.end());
      pair.erase(std::unique(pair.begin(), pair.end()), pair.end());
      binding.comms[kSlotEmbedding] = g.add_communicator(pair);
    } else {
      bind(kSlotEmbedding, Group::embedding, false);
    }
    binding.peers.resize(kPeerSlots);
    binding.peers[kPeerPpNext] = grid.moved(r, Axis::pp, (pr + 1) % p.pp);
    binding.peers[kPeerPpPrev] = grid.moved(r, Axis::pp, (pr + p.pp - 1) % p.pp);
    const int cp_rank = grid.at(r, Axis::cp);
    const int cp_next = grid.moved(r, Axis::cp, (cp_rank + 1) % p.cp);
    const int cp_prev = grid.moved(r, Axis::cp, (cp_rank + p.cp - 1) % p.cp);
    if (mirrored[static_cast<size_t>(Axis::cp)] && p.cp > 1) {
      // The mirrored ring sends to itself; the executor times the hop to
      // the real neighbour.
      binding.peers[kPeerCpNext] = r;
      binding.peers[kPeerCpPrev] = r;
      // Both ends of the self-addressed pair stand for the hop into this
      // rank, the one it waits for.
      w.widened_peers[TrainingWorkload::slot_key(r, kPeerCpNext)] = cp_prev;
      w.widened_peers[TrainingWorkload::slot_key(r, kPeerCpPrev)] = cp_prev;
    } else {
      binding.peers[kPeerCpNext] = cp_next;
      binding.peers[kPeerCpPrev] = cp_prev;
    }
    g.assign(r, it->second, std::move(binding));
  }
  for (int r = 0; r < grid.size(); ++r) {
    if (!simulated(r)) g.assign(r, idle, RankBinding{});
  }
  w.categories.resize(g.program_count());
  for (auto& [id, cats] : categories) w.categories[id] = std::move(cats);
  w.host_per_kernel = FrameworkProfile(c.framework, c.framework_traits).host_per_kernel();
  w.host_issue_ps.resize(g.program_count());
  for (uint32_t id = 0; id < g.program_count(); ++id) {
    w.host_issue_ps[id] = host_issue_times(g.program_by_id(id), w.host_per_kernel);
  }
  return w;
}

}  // namespace gcsim::workloads::training

#include "workloads/training/training_config.h"

#include <algorithm>

namespace gcsim::workloads::training {

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::gpipe: return "gpipe";
    case Schedule::one_f_one_b: return "1f1b";
    case Schedule::interleaved: return "interleaved";
    case Schedule::zb1p: return "zb1p";
    case Schedule::dualpipe: return "dualpipe";
  }
  return "?";
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
    case Recompute::norms_up_proj: return "norms_up_proj";
  }
  return "?";
}

std::vector<int> split_layers(int layers, int stages) {
  std::vector<int> split(static_cast<size_t>(stages), layers / stages);
  if (layers % stages == 0) return split;
  // ceil per stage, then the surplus comes off the ends: first, last,
  // second, second-to-last, ...
  const int per = (layers + stages - 1) / stages;
  std::fill(split.begin(), split.end(), per);
  int surplus = per * stages - layers;
  for (int i = 0; surplus > 0; ++i) {
    const int stage = (i % 2 == 0) ? i / 2 : stages - 1 - i / 2;
    --split[static_cast<size_t>(stage)];
    --surplus;
  }
  return split;
}

StrategyProblem check_strategy(const TrainingConfig& c, int cluster_gpus) {
  const auto s = [](int64_t v) { return std::to_string(v); };
  const ParallelConfig& p = c.parallel;
  const models::ModelSpec& m = c.model;
  if (static_cast<int64_t>(p.tp) * p.cp * p.pp * p.dp != cluster_gpus) {
    return {"parallelism", "tp x cp x pp x dp = " + s(p.tp) + " x " + s(p.cp) + " x " + s(p.pp) +
                               " x " + s(p.dp) + " = " +
                               s(static_cast<int64_t>(p.tp) * p.cp * p.pp * p.dp) +
                               ", but the cluster has " + s(cluster_gpus) +
                               " GPUs (nodes x gpus_per_node); EP is carved out of dp"};
  }
  if (m.heads % p.tp != 0) {
    return {"parallelism.tp", "tp (" + s(p.tp) + ") must divide the attention heads (" +
                                  s(m.heads) + "): each GPU computes whole heads"};
  }
  if (m.attention != models::AttentionKind::mla && m.kv_heads % p.tp != 0 &&
      p.tp % m.kv_heads != 0) {
    return {"parallelism.tp", "tp (" + s(p.tp) + ") and kv_heads (" + s(m.kv_heads) +
                                  ") must divide one another (key/value heads are split or "
                                  "replicated whole)"};
  }
  if (m.dense_mlp_layers() > 0 && m.ffn_hidden % p.tp != 0) {
    return {"parallelism.tp",
            "tp (" + s(p.tp) + ") must divide ffn_hidden (" + s(m.ffn_hidden) + ")"};
  }
  if (m.is_moe() && m.moe.expert_ffn_hidden % p.tp != 0) {
    return {"parallelism.tp", "tp (" + s(p.tp) + ") must divide moe.expert_ffn_hidden (" +
                                  s(m.moe.expert_ffn_hidden) + ")"};
  }
  if (p.ep > 1 && !m.is_moe()) {
    return {"parallelism.ep", "ep is " + s(p.ep) + " but the model has no experts"};
  }
  if (p.dp % p.ep != 0) {
    return {"parallelism.ep", "ep (" + s(p.ep) + ") must divide dp (" + s(p.dp) +
                                  "): expert parallelism is carved out of data parallelism"};
  }
  if (m.is_moe() && m.moe.experts % p.ep != 0) {
    return {"parallelism.ep", "ep (" + s(p.ep) + ") must divide the experts (" +
                                  s(m.moe.experts) + "): each GPU holds whole experts"};
  }
  if (p.layer_split == LayerSplit::even && m.layers % p.pp != 0) {
    return {"parallelism.pp", "pp (" + s(p.pp) + ") must divide the layers (" + s(m.layers) +
                                  "), or set parallelism.layer_split: fewer_at_ends"};
  }
  if (m.layers < p.pp) {
    return {"parallelism.pp",
            "pp (" + s(p.pp) + ") exceeds the layers (" + s(m.layers) + "): a stage would be empty"};
  }
  if (p.cp > 1 && m.seq_len % (2 * p.cp) != 0) {
    return {"parallelism.cp", "2 x cp (" + s(2 * p.cp) + ") must divide seq_len (" +
                                  s(m.seq_len) +
                                  "): ring attention splits each sequence into 2 x cp balanced "
                                  "chunks"};
  }
  if (c.batch.global % (c.batch.micro * p.dp) != 0) {
    return {"batch.global", "the global batch (" + s(c.batch.global) +
                                ") must be a multiple of micro (" + s(c.batch.micro) +
                                ") x dp (" + s(p.dp) + ") = " + s(c.batch.micro * p.dp)};
  }
  const int64_t mb = c.micro_batches();
  const int64_t tokens = c.batch.micro * m.seq_len / p.cp;
  if (p.sequence_parallel && tokens % p.tp != 0) {
    return {"parallelism.sequence_parallel",
            "sequence parallelism splits the " + s(tokens) + " tokens of a micro-batch over tp (" +
                s(p.tp) + "), which must divide them"};
  }
  switch (p.schedule) {
    case Schedule::interleaved:
      if (p.pp < 2) return {"parallelism.schedule", "interleaved needs pp >= 2"};
      if (p.virtual_stages < 2) {
        return {"parallelism.virtual_stages", "interleaved needs virtual_stages >= 2"};
      }
      if (p.layer_split == LayerSplit::even && m.layers % (p.pp * p.virtual_stages) != 0) {
        return {"parallelism.virtual_stages",
                "pp x virtual_stages (" + s(p.pp * p.virtual_stages) +
                    ") must divide the layers (" + s(m.layers) +
                    ") for the interleaved schedule, or set parallelism.layer_split: fewer_at_ends"};
      }
      if (m.layers < p.pp * p.virtual_stages) {
        return {"parallelism.virtual_stages",
                "pp x virtual_stages (" + s(p.pp * p.virtual_stages) + ") exceeds the layers (" +
                    s(m.layers) + "): a model chunk would be empty"};
      }
      if (mb % p.pp != 0) {
        return {"batch.global", "the interleaved schedule needs the micro-batches per pipeline (" +
                                    s(mb) + " = global / (micro x dp)) to be a multiple of pp (" +
                                    s(p.pp) + ")"};
      }
      break;
    case Schedule::dualpipe:
      if (p.pp < 2 || p.pp % 2 != 0) {
        return {"parallelism.pp", "dualpipe needs an even pp (each rank holds stage i and "
                                  "stage pp-1-i), got " + s(p.pp)};
      }
      if (mb % 2 != 0 || mb < 2 * p.pp) {
        return {"batch.global", "dualpipe needs an even number of micro-batches per pipeline, at "
                                "least 2 x pp = " + s(2 * p.pp) + ", got " + s(mb)};
      }
      break;
    default:
      if (p.virtual_stages != 1) {
        return {"parallelism.virtual_stages", std::string("virtual_stages applies to the "
                                                          "interleaved schedule only, not ") +
                                                  schedule_name(p.schedule)};
      }
      break;
  }
  if (c.optimizer.zero_stage < 0 || c.optimizer.zero_stage > 3) {
    return {"optimizer.zero_stage", "must be 0, 1, 2 or 3"};
  }
  return {};
}

}  // namespace gcsim::workloads::training

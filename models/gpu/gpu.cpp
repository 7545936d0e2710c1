#include "models/gpu/gpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <deque>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/gpu/hbm.h"
#include "models/gpu/kernel_cost_model.h"
#include "models/gpu/memory_clock.h"
#include "models/gpu/memory_spread.h"
#include "models/gpu/rest_clock.h"
#include "models/gpu/sm_array.h"

namespace gcsim::models::gpu {

namespace {
// Event tags: the kind in the top two bits, a slot index below.
enum EventKind : uint64_t { kArrive = 0, kWaveEnd = 1, kSchedule = 2 };
constexpr int kKindShift = 62;
constexpr uint64_t kIndexMask = (uint64_t{1} << kKindShift) - 1;
uint64_t tag_of(EventKind kind, uint64_t index) { return (uint64_t{kind} << kKindShift) | index; }

// The scheduling pass runs after every ordinary event of the same instant,
// so kernels that arrive (or waves that end) together share the free SMs
// instead of the first one taking them all.
constexpr int32_t kSchedulePriority = 1'000'000;

// Slots reused through a free list; indices stay valid while in use.
template <typename T>
class SlotPool {
 public:
  uint32_t add(T value) {
    if (!free_.empty()) {
      const uint32_t i = free_.back();
      free_.pop_back();
      slots_[i] = std::move(value);
      return i;
    }
    slots_.push_back(std::move(value));
    return static_cast<uint32_t>(slots_.size() - 1);
  }
  T& operator[](uint32_t i) { return slots_[i]; }
  const T& operator[](uint32_t i) const { return slots_[i]; }
  void remove(uint32_t i) {
    slots_[i] = T{};
    free_.push_back(i);
  }

 private:
  std::vector<T> slots_;
  std::vector<uint32_t> free_;
};
}  // namespace

class Gpu::Impl : public sim::EventHandler {
 public:
  Impl(sim::Simulator& sim, const GpuSpec& spec, GpuOptions options)
      : sim_(sim),
        spec_(spec),
        coalesce_(options.coalesce_waves),
        interference_(options.interference),
        activity_at_(sim.now()),
        sms_(spec.sm_count),
        hbm_(spec) {
    if (options.clock_model) {
      if (!spec.power.enabled()) {
        throw std::invalid_argument("the clock model needs the power parameters of " + spec.name);
      }
      gov_.emplace(spec.power, sim.now(), options.initial_state);
      if (options.pinned_clock > 0.0) gov_->pin(options.pinned_clock);
    }
  }

  const ClockGovernor* governor() const { return gov_ ? &*gov_ : nullptr; }
  void set_power_listener(PowerListener l) { power_listener_ = std::move(l); }

  void launch(const KernelDesc& kernel, KernelDone done) {
    if (kernel.tiles < 0) {
      throw std::invalid_argument("kernel '" + kernel.name + "' has a negative grid");
    }
    // A kernel the GPU cannot run (no rate for its unit, negative work) is
    // refused here, at the caller, rather than from inside the event loop.
    if (kernel.tiles > 0) static_cast<void>(wave_time(spec_, kernel, 1));
    Run r;
    r.kernel = kernel;
    r.done = std::move(done);
    r.tiles_left = kernel.tiles;
    if (spreads(kernel)) r.grid = kernel;
    r.seq = launched_++;
    const uint32_t run = runs_.add(std::move(r));
    // Kernels land in launch order (holds and wave batching rely on it): one
    // launched while a GEMM before it is still in its setup lands after it.
    const sim::Time arrival =
        std::max(sim_.now() + spec_.kernel_launch_latency + kernel.setup, last_arrival_);
    sim_.schedule_at(arrival, *this, tag_of(kArrive, run));
    // Holds requested from now until it lands wait for it (hold()).
    ++unlanded_;
    last_arrival_ = arrival;
    if (coalesce_) {
      // Batches end no later than the arrivals known when they start
      // (start_batch); this one is new, so a batch reaching it is split now.
      // Reaching it exactly counts too: which of the arrival and the last
      // wave end goes first at that instant depends on when the per-wave
      // schedule would have queued that wave end.
      std::erase_if(batches_, [this, arrival](uint32_t wave) {
        if (batch_end(waves_[wave]) < arrival) return false;
        split(wave);
        return true;
      });
      arrivals_.push_back(arrival);
    }
  }

  void hold(int count, std::function<void()> granted) {
    if (count < 0) throw std::invalid_argument("cannot hold a negative number of SMs");
    const int promised = sms_.held() + sms_.debt() + deferred_sms_;
    if (promised + count > sms_.total()) {
      throw std::invalid_argument("holding " + std::to_string(count) + " SMs would exceed the " +
                                  std::to_string(sms_.total()) + " SMs of the GPU (already held " +
                                  std::to_string(promised) + ")");
    }
    if (coalesce_) split_all();
    if (unlanded_ > 0 || !waiting_.empty()) {
      // Behind the kernels launched before it (CTAs of equal-priority grids
      // are dispatched in launch order): served in the pass where the last
      // of them has landed and started its last wave. While a hold is
      // deferred, batches leave a tile unstarted (start_batch), so that pass
      // is not coalesced away.
      deferred_.push_back(Hold{count, std::move(granted), launched_});
      deferred_sms_ += count;
      return;
    }
    serve(Hold{count, std::move(granted), launched_});
  }

  void release(int count) {
    if (count < 0) throw std::invalid_argument("cannot release a negative number of SMs");
    if (count > sms_.held() + sms_.debt() + deferred_sms_) {
      throw std::invalid_argument("releasing more SMs than are held");
    }
    if (coalesce_) split_all();
    // More than is held: the newest holds' parts not yet held are cancelled
    // (deferred holds, then owed SMs), their `granted` dropped if nothing
    // is left of them.
    int cancel = std::max(0, count - sms_.held());
    const int from_held = count - cancel;
    while (cancel > 0 && !deferred_.empty()) {
      Hold& h = deferred_.back();
      const int c = std::min(cancel, h.owed);
      h.owed -= c;
      deferred_sms_ -= c;
      cancel -= c;
      if (h.owed == 0) deferred_.pop_back();
    }
    while (cancel > 0) {
      Hold& h = owed_.back();
      const int c = std::min(cancel, h.owed);
      h.owed -= c;
      sms_.cancel_debt(c);
      cancel -= c;
      if (h.owed == 0) owed_.pop_back();
    }
    // Held SMs go to the holds still owed SMs, oldest first; the rest free.
    grant_repaid(sms_.release_held(from_held));
    request_schedule();
  }

  void handle_event(uint64_t tag) override {
    const auto index = static_cast<uint32_t>(tag & kIndexMask);
    switch (static_cast<EventKind>(tag >> kKindShift)) {
      case kArrive:
        arrive(index);
        break;
      case kWaveEnd:
        wave_end(index);
        break;
      case kSchedule:
        schedule();
        break;
    }
  }

  const SmArray& sms() const { return sms_; }
  int promised_sms() const { return sms_.held() + sms_.debt() + deferred_sms_; }
  Hbm& hbm() { return hbm_; }

  // ---- collectives streaming through HBM (interference.h) -----------------

  void add_hbm_load(double bytes_per_s) { change_hbm_load(bytes_per_s, +1); }
  void remove_hbm_load(double bytes_per_s) { change_hbm_load(bytes_per_s, -1); }
  double hbm_load() const { return hbm_load_; }

  GpuActivityIntegral activity_integral() const {
    const double dt = (sim_.now() - activity_at_).seconds();
    return {busy_sm_s_ + live_sms_ * dt, demand_bytes_ + live_demand_ * dt};
  }

 private:
  // A launched kernel between its arrival and its last wave's end.
  struct Run {
    KernelDesc kernel;
    KernelDone done;
    int64_t tiles_left = 0;  // not yet started on an SM (batches: see Wave)
    int sms_in_use = 0;      // SMs running its tiles now
    int waves_in_flight = 0;
    bool started = false;
    // Persistent: the SMs it took at its first pass and keeps to its end (0
    // before). Those not running its tiles are reserved in the SM array.
    int kept = 0;
    uint64_t seq = 0;  // launch order on this GPU
    sim::Time first_start;
    std::vector<uint32_t> waves;  // its waves (and batches) in flight
    // Clock model: a memory-bound kernel's wave when its SM side bounds it
    // at its clock (memory_clock.h; zero: it does not).
    sim::Duration issue_wave = sim::Duration::zero();
    // Clock model: the clock fraction it got at its first wave, and what
    // that does to its arithmetic time (1: the spec's clock).
    double clock = 1.0;
    double stretch = 1.0;
    // A spreading kernel (memory_spread.h) as launched, its work over
    // its full grid; until it starts, `kernel` is this spread over the SMs
    // communication holds leave (spread()).
    std::optional<KernelDesc> grid;
  };
  // A hold not yet wholly granted: `owed` SMs still to come. Served (in
  // owed_: its owed SMs are part of the SM array's debt), or deferred behind
  // the kernels launched before it (in deferred_: those with Run::seq below
  // `behind`), to be served in the first pass after which none of them has
  // a tile left to start. Every deferred hold is newer than every served
  // one: a hold asked for while one is deferred finds the same kernels
  // still pending, so is deferred too, behind at least as many.
  struct Hold {
    int owed = 0;
    std::function<void()> granted;
    uint64_t behind = 0;
  };
  // One wave, or with count > 1 a batch: `count` identical back-to-back
  // waves standing for as many of the per-wave schedule's (coalescing
  // only). Only the first wave's tiles are counted out of the kernel's
  // tiles_left while the batch is live; the rest when it ends or splits.
  // `active` (SMs running tiles when it started) fixes its HBM share and so
  // its length.
  struct Wave {
    uint32_t run = 0;
    int sms = 0;
    int active = 0;
    sim::Time start;       // the (first) wave's start
    sim::Duration length;  // one wave
    int64_t count = 1;
    uint32_t ticket = 0;  // its pending end event
    // Clock model: what it adds to the GPU's activity and board power.
    Activity activity;
    double arithmetic_w = 0.0;  // its arithmetic's power at its clock (W)
    // The collective HBM load it started under (load_epoch_: a batch
    // restarts a wave only under the same load) and the HBM bytes/s its
    // tiles would move without interference.
    uint64_t epoch = 0;
    double demand = 0.0;
  };
  // A pending wave-end event. The engine cannot cancel events, so a batch
  // cut short voids its ticket and the event fires as a no-op; a ticket is
  // freed only when its event fires, so no index is reused while pending.
  struct Ticket {
    uint32_t wave = 0;
    bool live = false;
  };

  static sim::Time batch_end(const Wave& w) { return w.start + w.length * w.count; }

  // Waves of a batch started by `now`: its first, and each later one whose
  // start is before now (one due exactly now would start only at this
  // instant's pass, which the batch stands in for but has not reached).
  static int64_t waves_started(const Wave& w, sim::Time now) {
    const int64_t elapsed = (now - w.start).ps(), length = w.length.ps();
    return std::max<int64_t>(1, elapsed / length + (elapsed % length != 0 ? 1 : 0));
  }

  void arrive(uint32_t run) {
    if (coalesce_) {
      // Arrivals fire in launch order, which is also time order (a fixed
      // latency after each launch), so this one is the front.
      arrivals_.pop_front();
      split_all();  // a no-op in practice: batches end no later than arrivals
    }
    ++arrived_;  // it lands in this instant's pass
    if (runs_[run].tiles_left == 0) {
      // An empty grid: nothing to run, but it lands in that pass all the
      // same (holds may wait for it).
      request_schedule(true);
      finish(run);
      return;
    }
    waiting_.push_back(run);
    request_schedule();
  }

  void wave_end(uint32_t ticket) {
    const Ticket t = tickets_[ticket];
    tickets_.remove(ticket);
    if (!t.live) return;  // a batch cut short: its wave end was rescheduled
    const Wave w = waves_[t.wave];
    if (w.count > 1) std::erase(batches_, t.wave);  // its own end: all its waves ended
    remove_wave(t.wave);
    Run& r = runs_[w.run];
    // A batch's later waves started on time at its boundaries: their tiles.
    r.tiles_left -= (w.count - 1) * w.sms;
    r.sms_in_use -= w.sms;
    --r.waves_in_flight;
    if (!r.kernel.persistent) {
      grant_repaid(sms_.finish_tiles(w.sms));  // repays communication holds first
    } else if (r.tiles_left > 0) {
      sms_.keep_tiles(w.sms);  // for its next wave: no hold or kernel gets them
    } else {
      // Its end (one wave at a time: this was the last): every SM it kept
      // comes free, repaying holds first.
      grant_repaid(sms_.finish_tiles(w.sms) + sms_.release_kept(r.kept - w.sms));
      r.kept = 0;
    }
    if (!coalesce_) {
      request_schedule();
    } else if (!start_batch(w)) {
      // Not an identical restart: the next pass sees a changed GPU, and
      // it needs every batch's tiles counted.
      split_all();
      if (r.tiles_left == 0) drop_waiting(w.run);
      request_schedule();
    }
    if (r.tiles_left == 0 && r.waves_in_flight == 0) finish(w.run);
  }

  void finish(uint32_t run) {
    KernelDone done = std::move(runs_[run].done);
    const sim::Time start = runs_[run].started ? runs_[run].first_start : sim_.now();
    runs_.remove(run);  // before the callback: it may launch and reuse slots
    if (done) done(start, sim_.now());
  }

  // `always`: even with nothing waiting (a kernel lands in it).
  void request_schedule(bool always = false) {
    if (schedule_pending_) return;
    // With nothing waiting and no hold deferred the pass would do nothing
    // (an arrival requests its own); skipping it only saves the event.
    if (coalesce_ && !always && waiting_.empty() && deferred_.empty()) return;
    schedule_pending_ = true;
    sim_.schedule_at(sim_.now(), *this, tag_of(kSchedule, 0), kSchedulePriority);
  }

  int cap(const Run& r) const {
    return r.kernel.max_sms > 0 ? std::min(r.kernel.max_sms, spec_.sm_count) : spec_.sm_count;
  }
  // SMs a waiting kernel would take from a pass if they were free.
  int64_t want(const Run& r, int64_t tiles_left) const {
    if (r.kept > 0) return 0;  // persistent and started: keeps its SMs, takes no more
    return std::min<int64_t>(tiles_left, std::max(0, cap(r) - r.sms_in_use));
  }

  // The scheduling pass. Persistent kernels between waves restart on the
  // SMs they keep (a last wave narrower than them gives the rest back), and
  // grow, in launch order, into SMs that came free (their queued CTAs take
  // them: measured on 2x H100, a GEMM beside a short all-reduce loses its
  // SMs only while the all-reduce runs); persistent kernels about to start
  // take the free SMs they want in launch order; the rest are split evenly
  // among the other waiting kernels (earlier launches get the remainder),
  // each bounded by its unstarted tiles and max_sms; one wave starts per
  // kernel that got SMs (plan_range, apply_range).
  // Deferred holds keep launch order: if the kernels launched before the
  // oldest one would all start their last tiles in this pass (on the SMs
  // they would get without the younger kernels), they do, then the hold is
  // served from what is left, then the kernels launched after it share
  // the rest (so a collective issued before a GEMM gets its SMs before
  // that GEMM's CTAs, as Megatron's CUDA_DEVICE_MAX_CONNECTIONS=1 orders
  // them); otherwise the hold waits and every kernel shares as above.
  void schedule() {
    schedule_pending_ = false;
    if (coalesce_) split_all();  // none is live here: every pass follows a split
    unlanded_ -= arrived_;       // the kernels that arrived this instant land here
    arrived_ = 0;
    // Scratch vectors kept as members: this runs after every wave.
    std::vector<int>& grant = grant_;
    grant.assign(waiting_.size(), 0);
    want_.assign(waiting_.size(), 0);
    grow_.assign(waiting_.size(), 0);
    // A persistent kernel between waves whose last wave is narrower than
    // its SMs frees the rest (repaying holds first): the grid has no CTA
    // left to put there.
    for (const uint32_t run : waiting_) {
      Run& r = runs_[run];
      if (r.kept > 0 && r.waves_in_flight == 0 && r.tiles_left < r.kept) {
        const int surplus = r.kept - static_cast<int>(r.tiles_left);
        grant_repaid(sms_.release_kept(surplus));
        r.kept -= surplus;
      }
    }
    spread();
    // waiting_ is in launch order: the kernels before a hold are a prefix.
    size_t begin = 0;
    for (;;) {
      if (deferred_.empty()) {
        plan_range(begin, waiting_.size());
        apply_range(begin, waiting_.size());
        break;
      }
      const uint64_t limit = deferred_.front().behind;
      size_t end = begin;
      while (end < waiting_.size() && runs_[waiting_[end]].seq < limit) ++end;
      plan_range(begin, end);
      bool last_tiles = launched_ - static_cast<uint64_t>(unlanded_) >= limit;  // all older landed
      for (size_t i = begin; i < end && last_tiles; ++i) {
        last_tiles = runs_[waiting_[i]].tiles_left <= grant[i] + grow_[i];
      }
      if (!last_tiles) {
        plan_range(begin, waiting_.size());  // the hold waits: all share
        apply_range(begin, waiting_.size());
        break;
      }
      apply_range(begin, end);
      begin = end;
      // Holds no earlier kernel keeps waiting any longer: in order, before
      // the kernels launched after them.
      const uint64_t oldest = oldest_pending();
      while (!deferred_.empty() && deferred_.front().behind <= oldest) {
        Hold h = std::move(deferred_.front());
        deferred_.pop_front();
        deferred_sms_ -= h.owed;
        serve(std::move(h));
      }
    }
    // HBM share: every SM running tiles once these waves start.
    const int active = sms_.busy();
    const sim::Time now = sim_.now();
    for (size_t i = 0; i < grant.size(); ++i) {
      if (grant[i] == 0) continue;
      const uint32_t run = waiting_[i];
      Run& r = runs_[run];
      if (!r.started) {
        r.started = true;
        r.first_start = now;
        if (gov_) set_clock(r, now);
      }
      r.tiles_left -= grant[i];
      r.sms_in_use += grant[i];
      ++r.waves_in_flight;
      const sim::Duration length = wave_length(r, active);
      schedule_end(add_wave(Wave{run, grant[i], active, now, length, 1, 0, Activity{}, 0.0}), now + length);
    }
    std::erase_if(waiting_, [this](uint32_t run) { return runs_[run].tiles_left == 0; });
  }

  // Spreading kernels not yet started take their work over the SMs that
  // communication holds leave them (held now, or owed and taken before any
  // kernel), as the real grid's small CTAs share those SMs in one pass; SMs
  // busy with other kernels' waves come free at those waves' ends, so they
  // still count. Recomputed from the launched grid at every pass until the
  // kernel starts: holds may have come or gone meanwhile.
  void spread() {
    const int denied = sms_.held() + sms_.debt();
    for (const uint32_t run : waiting_) {
      Run& r = runs_[run];
      if (!r.grid || r.started) continue;
      const int64_t tiles = spread_tiles(spec_, *r.grid, denied);
      if (tiles == r.kernel.tiles) continue;
      r.kernel = spread_over(*r.grid, tiles);
      r.tiles_left = tiles;
    }
  }

  // The SMs the waiting kernels waiting_[begin, end) would get in this pass
  // from the free ones (grant_, grow_ and want_ for them; nothing changes).
  void plan_range(size_t begin, size_t end) {
    std::vector<int>& grant = grant_;
    std::vector<int>& want = want_;
    std::vector<int>& grow = grow_;
    bool any = false;
    for (size_t i = begin; i < end; ++i) {
      const Run& r = runs_[waiting_[i]];
      grant[i] = grow[i] = 0;
      if (r.kept > 0) {
        // Persistent, between waves: its next wave, on its own SMs.
        if (r.waves_in_flight == 0) grant[i] = r.kept;
        want[i] = grant[i];
      } else {
        want[i] = static_cast<int>(this->want(r, r.tiles_left));
      }
      any = any || want[i] > 0;
    }
    int left = sms_.free();
    // Persistent kernels restarting grow first, in launch order: they were
    // launched before anything that has not started.
    for (size_t i = begin; i < end && left > 0; ++i) {
      const Run& r = runs_[waiting_[i]];
      if (r.kept == 0 || grant[i] == 0) continue;
      grow[i] = growth(r, left);
      left -= grow[i];
    }
    // A persistent kernel about to start takes what it wants first, in
    // launch order: its CTAs fill whole SMs, and on an H100 a GEMM enqueued
    // beside a copy or a layer norm ran at full width while the other op
    // waited (calibration/measurements/h100-sxm/concurrent_kernels_*).
    for (size_t i = begin; i < end; ++i) {
      const Run& r = runs_[waiting_[i]];
      if (!r.kernel.persistent || r.kept > 0 || want[i] == 0) continue;
      grant[i] = std::min(want[i], left);
      want[i] = grant[i];
      left -= grant[i];
    }
    // Water-filling among the others: each round offers every unsatisfied
    // kernel an equal share; a kernel that needs less frees the rest.
    while (any) {
      int hungry = 0;
      for (size_t i = begin; i < end; ++i) hungry += grant[i] < want[i];
      if (left == 0 || hungry == 0) break;
      const int share = left / hungry;
      int extra = left % hungry;
      for (size_t i = begin; i < end && left > 0; ++i) {
        if (grant[i] >= want[i]) continue;
        int offer = share + (extra > 0 ? 1 : 0);
        if (extra > 0) --extra;
        const int take = std::min(offer, want[i] - grant[i]);
        grant[i] += take;
        left -= take;
      }
    }
  }

  // Takes the SMs plan_range gave waiting_[begin, end) (a restarting
  // persistent kernel's growth joins its grant).
  void apply_range(size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      Run& r = runs_[waiting_[i]];
      if (r.kept > 0) {
        sms_.resume_tiles(grant_[i]);
        sms_.start_tiles(grow_[i]);
        r.kept += grow_[i];
        grant_[i] += grow_[i];
        grow_[i] = 0;
      } else {
        sms_.start_tiles(grant_[i]);
        if (r.kernel.persistent) r.kept = grant_[i];  // its SMs from now to its end
      }
    }
  }

  // SMs a persistent kernel restarting on its kept SMs takes besides, of
  // `free`: up to its cap and its unstarted tiles beyond the kept SMs.
  int growth(const Run& r, int free) const {
    const int64_t room = std::min<int64_t>(cap(r) - r.kept, r.tiles_left - r.kept);
    return static_cast<int>(std::clamp<int64_t>(room, 0, free));
  }

  // Launch number of the oldest kernel with tiles not yet started once the
  // current pass's grants (grant_) start (landed and waiting, or not yet
  // landed: they land in launch order), or launched_ when there is none.
  uint64_t oldest_pending() const {
    uint64_t oldest = launched_ - static_cast<uint64_t>(unlanded_);
    for (size_t i = 0; i < waiting_.size(); ++i) {
      const Run& r = runs_[waiting_[i]];
      if (r.tiles_left > grant_[i]) oldest = std::min(oldest, r.seq);
    }
    return oldest;
  }

  // A hold takes the free SMs now; the rest it is owed, after older holds.
  void serve(Hold h) {
    h.owed -= sms_.hold(h.owed);
    if (h.owed == 0) {
      notify(std::move(h.granted));
    } else {
      owed_.push_back(std::move(h));
    }
  }

  // `count` SMs repaid the debt: they go to the owed holds, oldest first.
  void grant_repaid(int count) {
    while (count > 0) {
      if (owed_.empty()) throw std::logic_error("SMs repaid to no owed hold");
      Hold& h = owed_.front();
      const int g = std::min(count, h.owed);
      h.owed -= g;
      count -= g;
      if (h.owed == 0) {
        std::function<void()> granted = std::move(h.granted);
        owed_.pop_front();
        notify(std::move(granted));
      }
    }
  }

  // Calls a hold's `granted` from an event at this instant, so that it may
  // launch, hold and release as any other event does.
  void notify(std::function<void()> granted) {
    if (granted) sim_.call_at(sim_.now(), std::move(granted));
  }

  uint32_t add_wave(Wave w) {
    w.epoch = load_epoch_;
    if (interference_.enabled) {
      const Run& r = runs_[w.run];
      // Its own pace: the length it has when no collective streams.
      const sim::Duration own = hbm_load_ == 0.0 ? w.length : own_wave_time(r, w.active);
      w.demand = own > sim::Duration::zero()
                     ? w.sms * r.kernel.hbm_bytes_per_tile() / own.seconds()
                     : 0.0;
      advance_activity();
      live_sms_ += w.sms;
      live_demand_ += w.demand;
      ++live_waves_;
    }
    if (gov_) {
      charge(w);
      gov_->add(sim_.now(), w.activity, w.arithmetic_w);
      ++governed_waves_;
      effective_clock_ = runs_[w.run].clock;
      report_power();
    }
    const uint32_t wave = waves_.add(w);
    runs_[w.run].waves.push_back(wave);
    return wave;
  }
  void remove_wave(uint32_t wave) {
    if (interference_.enabled) {
      advance_activity();
      live_sms_ -= waves_[wave].sms;
      live_demand_ -= waves_[wave].demand;
      if (--live_waves_ == 0) live_demand_ = 0.0;  // no rounding residue left
    }
    if (gov_) {
      gov_->remove(sim_.now(), waves_[wave].activity, waves_[wave].arithmetic_w);
      --governed_waves_;
      report_power();
    }
    std::erase(runs_[waves_[wave].run].waves, wave);
    waves_.remove(wave);
  }

  // ---- interference ----------------------------------------------------------

  // One wave of `r` starting now with `active` SMs running tiles: its
  // length alone, or beside the collectives streaming hbm_load_ bytes/s from
  // the SMs they hold, with the HBM left to kernels (shared max-min fairly
  // per SM: the kernel's own demand on `active` SMs against the
  // collectives') and its arithmetic stretched.
  sim::Duration own_wave_time(const Run& r, int active) const {
    return sim::max(wave_time(spec_, r.kernel, active, r.stretch), r.issue_wave);
  }
  sim::Duration wave_length(const Run& r, int active) const {
    const sim::Duration own = own_wave_time(r, active);
    if (hbm_load_ == 0.0 || !interference_.enabled) return own;
    const double b = achieved_hbm_bandwidth(spec_).bytes_per_s();
    const double demand =
        own > sim::Duration::zero()
            ? std::min(b, active * r.kernel.hbm_bytes_per_tile() / own.seconds())
            : 0.0;
    const double fraction = kernel_hbm_fraction(b, active, demand, sms_.held(), hbm_load_);
    const double sensitivity = r.kernel.fused_attention        ? interference_.attention_sensitivity
                               : r.kernel.unit == ExecUnit::memory ? interference_.memory_sensitivity
                                                                   : interference_.kernel_sensitivity;
    const double stretch = kernel_compute_stretch(b, hbm_load_, sensitivity);
    return sim::max(wave_time(spec_, r.kernel, active, r.stretch * stretch, fraction), r.issue_wave);
  }

  void change_hbm_load(double bytes_per_s, int sign) {
    if (!(bytes_per_s >= 0.0)) throw std::invalid_argument("an HBM load must be >= 0 bytes/s");
    if (sign < 0 && load_count_ == 0) throw std::logic_error("removing an HBM load never added");
    if (coalesce_) split_all();  // waves from now on see the new load
    ++load_epoch_;
    load_count_ += sign;
    hbm_load_ = load_count_ == 0 ? 0.0 : std::max(0.0, hbm_load_ + sign * bytes_per_s);
    if (gov_) {
      // The collective's HBM traffic draws power (its SMs' copy loops are
      // not counted: their arithmetic is small); the governor prices it
      // with whatever arithmetic runs beside it.
      Activity a;
      a.hbm = bytes_per_s / spec_.hbm_bandwidth.bytes_per_s();
      if (sign > 0) {
        gov_->add(sim_.now(), a, 0.0);
      } else {
        gov_->remove(sim_.now(), a, 0.0);
      }
      report_power();
    }
  }

  void advance_activity() {
    const double dt = (sim_.now() - activity_at_).seconds();
    busy_sm_s_ += live_sms_ * dt;
    demand_bytes_ += live_demand_ * dt;
    activity_at_ = sim_.now();
  }

  // ---- clock model ---------------------------------------------------------

  // The clock a kernel starting now gets (the power loops' clock, at most
  // the clock where its own power meets the instantaneous limiter's cap
  // now: rest_clock.h), and its arithmetic's stretch against its rest clock,
  // which its calibrated time stands for. A pinned clock (the power fit's)
  // is taken as given.
  void set_clock(Run& r, sim::Time now) {
    const double loops = gov_->clock(now);
    double rest = 1.0;
    r.clock = loops;
    if (spec_.power.instant_limit()) {
      const Activity alone = rest_activity(spec_, r.kernel);
      rest = instant_clock(spec_.power, alone);
      // The limiter's cap falls as the averaged power rises (instant_budget_w).
      if (!gov_->pinned()) r.clock = std::min(loops, cap_clock(spec_.power, alone, gov_->instant_budget_w(now)));
    }
    const bool derated = r.kernel.unit == ExecUnit::tensor && spec_.at_sustained_clocks;
    const double baseline = derated ? spec_.sustained_tensor_fraction : 1.0;
    r.stretch = baseline / relative_speed(spec_.power, r.clock, rest);
    r.issue_wave = r.kernel.unit == ExecUnit::memory ? memory_issue_wave(spec_, r.kernel, r.clock)
                                                     : sim::Duration::zero();
  }

  // A wave's activity (time fractions of the whole GPU) and dynamic power.
  void charge(Wave& w) const {
    const Run& r = runs_[w.run];
    const double length = w.length.seconds();
    if (!(length > 0.0)) return;
    const Activity a = wave_activity(spec_, r.kernel, w.sms, w.active, length, r.stretch);
    const PowerParams& p = spec_.power;
    w.activity = a;
    // The memory path's power the governor takes from the sum of what runs
    // (its on-chip part is shared with arithmetic beside it).
    w.arithmetic_w = (p.tensor_w * a.tensor + p.vector_w * a.vector) * dynamic_scale(p, r.clock);
  }

  // Tells the listener the clock and board power now, when either moved by
  // at least 1 MHz or 1 W (a counter per wave would bloat the trace). The
  // clock is the one the SMs run at: the last started wave's kernel's while
  // work runs (under the instantaneous limiter it can lie below the loops'),
  // the loops' when the GPU is idle.
  void report_power() {
    if (!power_listener_) return;
    const double loops = gov_->clock(sim_.now());
    const bool effective = governed_waves_ > 0 && spec_.power.instant_limit();
    const double mhz = (effective ? effective_clock_ : loops) * spec_.sm_clock_ghz * 1e3;
    const double w = gov_->power_w();
    if (std::abs(mhz - reported_mhz_) < 1.0 && std::abs(w - reported_w_) < 1.0) return;
    reported_mhz_ = mhz;
    reported_w_ = w;
    power_listener_(sim_.now(), mhz, w);
  }
  void schedule_end(uint32_t wave, sim::Time when) {
    const uint32_t ticket = tickets_.add(Ticket{wave, true});
    waves_[wave].ticket = ticket;
    sim_.schedule_at(when, *this, tag_of(kWaveEnd, ticket));
  }
  void drop_waiting(uint32_t run) { std::erase(waiting_, run); }

  // ---- coalescing ----------------------------------------------------------
  //
  // A persistent kernel restarts every wave on the SMs it keeps, holds owed
  // SMs or not (its SMs never come free before its end). Any other kernel
  // alone on the GPU (or beside held SMs, or beside kernels at their
  // max_sms) restarts every wave that ends on the same SMs: the pass at its
  // end gives the freed SMs straight back to it, with the same number of
  // SMs active, so the same HBM share and length. After an overlap or a
  // release it may run as several such lanes of different widths and
  // phases. Each lane's identical waves become one batch, started at the end
  // of a real wave in place of the pass that would restart it. Anything else
  // (an arrival, a hold or release, a wave end that is not an identical
  // restart) first splits every batch back into the wave the per-wave
  // schedule has in flight then (split_all), and the normal passes resume.
  // Live batches all belong to one kernel, whose lanes never end at the same
  // instant (they would have merged into one wave), so every event of the
  // GPU keeps its per-wave place among events of the same instant.

  // Tiles of `run` not started by now in the per-wave schedule: its batches
  // count only their first wave in tiles_left.
  int64_t unstarted(const Run& r, sim::Time now) const {
    int64_t tiles = r.tiles_left;
    for (const uint32_t wave : r.waves) {
      const Wave& w = waves_[wave];
      if (w.count > 1) tiles -= (waves_started(w, now) - 1) * w.sms;
    }
    return tiles;
  }

  // Called as the wave `ended` finishes, before this instant's pass. If that
  // pass would only restart it (same kernel, SMs and active count), starts
  // as many identical waves at once as the per-wave schedule would, as a
  // batch with one end event.
  bool start_batch(const Wave& ended) {
    // Something else happened this instant (the pass will see it), holds
    // are owed SMs (the next finishing wave repays them, not this kernel),
    // or zero-length waves (all at one instant: nothing to gain).
    Run& r = runs_[ended.run];
    // A persistent kernel's waves never repay holds (its SMs stay with it),
    // so owed holds do not stop its batches.
    if (schedule_pending_ || (sms_.debt() != 0 && r.kept == 0) ||
        ended.length <= sim::Duration::zero() || ended.epoch != load_epoch_) {
      return false;
    }
    for (const uint32_t wave : batches_) {
      if (waves_[wave].run != ended.run) return false;
    }
    const sim::Time now = sim_.now();
    const int width = ended.sms;
    const int64_t tiles = unstarted(r, now);
    if (tiles < 2 * int64_t{width}) return false;
    // Every other waiting kernel must want nothing (its tiles_left may
    // still count a batch's waves; that only errs towards refusing), so the
    // pass gives this one min(want, free): the same at every later boundary
    // while its unstarted tiles stay >= width.
    for (const uint32_t other : waiting_) {
      if (other == ended.run) continue;
      const Run& o = runs_[other];
      if (want(o, o.tiles_left) > 0) return false;
      if (o.kept > 0 && o.waves_in_flight == 0) return false;  // a persistent restart due
    }
    if (r.kept > 0) {
      // Persistent: the pass would restart it on the SMs it keeps, unless it
      // would grow into free SMs.
      if (width != r.kept || growth(r, sms_.free()) > 0) return false;
    } else if (std::min<int64_t>(want(r, tiles), sms_.free()) != width) {
      return false;
    }
    if (sms_.busy() + width != ended.active) return false;
    const int64_t length = ended.length.ps();
    // End no later than the next known arrival (its pass shares the SMs),
    // and inside the clock's range.
    int64_t limit = std::min(tiles / width, (sim::Time::max() - now).ps() / length);
    if (!arrivals_.empty()) limit = std::min(limit, (arrivals_.front() - now).ps() / length);
    if (limit < 2) return false;
    // A deferred hold is served in the pass that starts the kernel's last
    // tiles: while one waits, every wave of a batch leaves a tile unstarted
    // (on any lane), so that the last ones start at a real wave end.
    const int64_t reserve = deferred_.empty() ? 0 : 1;
    const int64_t count = funded_waves(r, width, now, ended.length, tiles, limit, reserve);
    if (count < 2) return false;
    if (r.kept > 0) {
      sms_.resume_tiles(width);
    } else {
      sms_.start_tiles(width);
    }
    r.tiles_left -= width;  // the first wave; the rest when the batch ends or splits
    r.sms_in_use += width;
    ++r.waves_in_flight;
    const uint32_t wave = add_wave(Wave{ended.run, width, ended.active, now, ended.length, count, 0, Activity{}, 0.0});
    batches_.push_back(wave);
    schedule_end(wave, now + ended.length * count);
    return true;
  }

  // How many waves of `width` starting at now + k * length (k = 0, 1, ...,
  // at most `limit`) find `width` tiles unstarted (and `reserve` more left
  // after them), when the kernel's other
  // lanes also restart at each of their boundaries. The lanes share the
  // tiles in time order; a lane that would find fewer is where the kernel
  // runs short, a real event that splits the rest. Counting every other
  // wave as restarting (even one that will not) only shortens the batch.
  int64_t funded_waves(const Run& r, int width, sim::Time now, sim::Duration length,
                       int64_t tiles, int64_t limit, int64_t reserve) const {
    // Tiles the other lanes start at boundaries up to and including t.
    auto taken_by_others = [&](sim::Time t) {
      __int128 taken = 0;
      for (const uint32_t wave : r.waves) {
        const Wave& w = waves_[wave];
        const int64_t period = w.length.ps();
        if (period <= 0) return static_cast<__int128>(tiles);  // never here: all fund nothing
        // Its next boundary at or after now.
        const sim::Time next = w.count > 1 ? w.start + w.length * waves_started(w, now)
                                           : w.start + w.length;
        if (t < next) continue;
        taken += static_cast<__int128>(w.sms) * (1 + (t - next).ps() / period);
      }
      return taken;
    };
    auto funded = [&](int64_t k) {  // the wave starting at now + k * length
      return static_cast<__int128>(tiles) - static_cast<__int128>(k) * width -
                 taken_by_others(now + length * k) >=
             width + reserve;
    };
    // funded is monotone: find the last k that is funded (none: 0).
    if (!funded(0)) return 0;
    int64_t lo = 0, hi = limit - 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (funded(mid)) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo + 1;
  }

  // Turns every live batch back into the one wave the per-wave schedule has
  // in flight now.
  void split_all() {
    if (batches_.empty()) return;
    splitting_.swap(batches_);  // split() may not touch batches_
    for (const uint32_t wave : splitting_) split(wave);
    splitting_.clear();
  }

  // The waves of the batch that ended before now stay ended, the one in
  // progress keeps its end, and the rest never start. The caller removes
  // `wave` from batches_.
  void split(uint32_t wave) {
    Wave& w = waves_[wave];
    Run& r = runs_[w.run];
    const sim::Time now = sim_.now();
    if (now == w.start) {
      // The batch started at this instant, at its predecessor's end, in
      // place of the pass that would restart it: undo that start and let
      // the pass, which will also see what changed, decide.
      if (r.kept > 0) {
        sms_.keep_tiles(w.sms);  // back to the persistent kernel's kept SMs
      } else {
        sms_.finish_tiles(w.sms);  // no debt: start_batch required none, holds split first
      }
      r.tiles_left += w.sms;
      r.sms_in_use -= w.sms;
      --r.waves_in_flight;
      tickets_[w.ticket].live = false;
      remove_wave(wave);
      request_schedule();
      return;
    }
    const int64_t started = waves_started(w, now);
    r.tiles_left -= (started - 1) * w.sms;
    const bool last = started == w.count;
    w.start = w.start + w.length * (started - 1);  // the wave in progress (or ending now)
    w.count = 1;
    if (r.tiles_left == 0) drop_waiting(w.run);
    if (!last) {
      // The wave in progress ends before the batch would: a new end event,
      // queued now where the per-wave one was queued at this wave's start
      // (nothing happened on the GPU in between). At an exact boundary the
      // wave ending now gets its event after the current one, as the
      // per-wave end (queued a wave ago) follows the GPU's own earlier
      // queued events of this instant.
      tickets_[w.ticket].live = false;
      schedule_end(wave, w.start + w.length);
    }
  }

  sim::Simulator& sim_;
  const GpuSpec& spec_;
  std::optional<ClockGovernor> gov_;
  PowerListener power_listener_;
  double reported_mhz_ = -1.0, reported_w_ = -1.0;
  int governed_waves_ = 0;        // waves the governor is charged for now
  double effective_clock_ = 1.0;  // the clock of the last wave started (fraction of f_max)
  const bool coalesce_;
  const InterferenceParams interference_;
  // Collectives streaming through HBM: their bytes/s summed, how many, and
  // a counter bumped at every change.
  double hbm_load_ = 0.0;
  int load_count_ = 0;
  uint64_t load_epoch_ = 0;
  // Compute tiles running now (SMs, and their HBM demand in bytes/s) and
  // their integrals up to activity_at_ (with interference on).
  int live_sms_ = 0;
  int live_waves_ = 0;
  double live_demand_ = 0.0;
  double busy_sm_s_ = 0.0;
  double demand_bytes_ = 0.0;
  sim::Time activity_at_;
  SmArray sms_;
  Hbm hbm_;
  SlotPool<Run> runs_;
  SlotPool<Wave> waves_;
  SlotPool<Ticket> tickets_;
  std::vector<uint32_t> waiting_;  // runs with unstarted tiles, in launch order
  std::vector<int> grant_, want_, grow_;  // SMs granted / wanted / grown per waiting run
  bool schedule_pending_ = false;
  // With coalescing: the live batches (wave indices, all of one kernel), and
  // the arrival times of launched kernels not yet arrived, earliest first.
  std::vector<uint32_t> batches_, splitting_;
  std::deque<sim::Time> arrivals_;
  // Holds: owed SMs (served, oldest first; their owed SMs sum to the SM
  // array's debt) and deferred (not yet served, oldest first).
  std::deque<Hold> owed_, deferred_;
  int deferred_sms_ = 0;  // SMs the deferred holds will ask for
  // Kernels launched and not yet through the pass at their arrival (those
  // arrived among them: arrived_), and the latest launch's arrival time.
  int64_t unlanded_ = 0, arrived_ = 0;
  sim::Time last_arrival_;
  uint64_t launched_ = 0;  // kernels launched so far (the next Run::seq)
};

Gpu::Gpu(sim::Simulator& sim, const GpuSpec& spec, int rank, GpuOptions options)
    : spec_(spec), rank_(rank), impl_(std::make_unique<Impl>(sim, spec_, options)) {}

Gpu::~Gpu() = default;

void Gpu::launch(const KernelDesc& kernel, KernelDone done) {
  impl_->launch(kernel, std::move(done));
}
void Gpu::hold_sms(int count, std::function<void()> granted) {
  impl_->hold(count, std::move(granted));
}
void Gpu::release_sms(int count) { impl_->release(count); }
int Gpu::free_sms() const { return impl_->sms().free(); }
int Gpu::held_sms() const { return impl_->sms().held(); }
int Gpu::promised_sms() const { return impl_->promised_sms(); }
int Gpu::busy_sms() const { return impl_->sms().busy(); }
int Gpu::reserved_sms() const { return impl_->sms().reserved(); }
bool Gpu::allocate(sim::Bytes bytes) { return impl_->hbm().allocate(bytes); }
void Gpu::free(sim::Bytes bytes) { impl_->hbm().free(bytes); }
sim::Bytes Gpu::memory_used() const { return impl_->hbm().used(); }
sim::Bytes Gpu::memory_peak() const { return impl_->hbm().peak(); }
const ClockGovernor* Gpu::governor() const { return impl_->governor(); }
void Gpu::add_hbm_load(double bytes_per_s) { impl_->add_hbm_load(bytes_per_s); }
void Gpu::remove_hbm_load(double bytes_per_s) { impl_->remove_hbm_load(bytes_per_s); }
double Gpu::hbm_load() const { return impl_->hbm_load(); }
GpuActivityIntegral Gpu::activity_integral() const { return impl_->activity_integral(); }
void Gpu::set_power_listener(PowerListener listener) { impl_->set_power_listener(std::move(listener)); }

}  // namespace gcsim::models::gpu

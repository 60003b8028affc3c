#include "coreclr/clr_runtime.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "coreclr/clr_calls.h"
#include "coreclr/frame_shape.h"
#include "coreclr/il_body.h"
#include "coreclr/mono_names.h"
#include "mlpd/format.h"
#include "mlpd/utf16.h"
#include "mlpd/capture/late_sampler.h"
#include "mlpd/capture/sampling.h"
#include "capture/sample_capture.h"
#include "mlpd/rt/clock.h"
#include "mlpd/rt/events.h"

namespace mlpd::coreclr {

using namespace mlpd::format;
using rt::now_ns;

namespace {
uint64_t self_tid() { return static_cast<uint64_t>(pthread_self()); }

// The lock implementation's own methods (Monitor.Enter and its slow paths, System.Threading.Lock's):
// a contention's backtrace starts at the code that asked for the lock, as Mono's does (its monitor
// callback runs under the runtime's own Monitor.Enter, which has no managed frame of its own there).
bool is_lock_method(std::string_view name) {
  return name.starts_with("System.Threading.Monitor:") || name.starts_with("System.Threading.Lock:") ||
         name.starts_with("System.Threading.Lock/");
}

// What the file's event mask asks of the runtime's callbacks (COR_PRF_MONITOR_* and _HIGH_*). Only
// JIT, threads, modules and assemblies, suspensions, GC and exceptions so far (docs/dotnet.md).
void runtime_mask(uint32_t mask, DWORD& low, DWORD& high) {
  low = monitor::kThreads | monitor::kModuleLoads | monitor::kAssemblyLoads | monitor::kJitCompilation |
        monitor::kCacheSearches;
  high = monitor_high::kDynamicFunctionUnloads;
  if (mask & MASK_GC) {
    low |= monitor::kSuspends;
    high |= monitor_high::kBasicGc;  // start/end of every collection, concurrent GC kept on
  }
  if (mask & MASK_EXCEPTION) low |= monitor::kExceptions;
}
}  // namespace

std::string ClrRuntime::summary() const {
  return "runtime: .NET " + (about_.version.empty() ? std::string("?") : about_.version) +
         " (CoreCLR), ICorProfilerInfo" + std::to_string(about_.info_level);
}

// What .NET forbids a profiler attached to a running program (the event mask after attach: no
// enter/leave hooks, no ObjectAllocated; docs/attach.md).
std::string ClrRuntime::late_refusal(const runtime::Config& config) const {
  if (config.calls)
    return "calls (.NET gives a profiler attached to a running program no enter/leave hooks)";
  if ((config.mask & MASK_GC_ALLOC) && !config.alloc_sample)
    return "alloc (.NET gives an attached profiler no allocation callback; alloc-sample=100k works after attach "
           "on .NET 10)";
  return {};
}

// A second attach after a detach: the runtime hands the profiler a new ICorProfilerInfo.
void ClrRuntime::rebind(ProfilerInfo* info, const RuntimeInfo& about) {
  info_ = info;
  about_ = about;
  names_.rebind(info);
}

bool ClrRuntime::install(const runtime::Config& config, const runtime::Env& env, std::string& error) {
  // What .NET cannot give mlpd yet: refused with one line naming the option (docs/dotnet.md).
  // alloc-sample and monitor come through an EventPipe session of the profiler's own (Info12).
  const bool alloc_sampled = (config.mask & MASK_GC_ALLOC) && config.alloc_sample;
  if (alloc_sampled && (about_.major < 10 || about_.info_level < 12))
    return error = "alloc-sample: sampled allocations need .NET 10's AllocationSampled event; this runtime is .NET " +
                   (about_.version.empty() ? std::to_string(about_.major) : about_.version) +
                   " (use alloc for every allocation)",
           false;
  if (alloc_sampled && config.alloc_sample != event_pipe::kAllocationSamplingMean)
    return error = "alloc-sample=" + std::to_string(config.alloc_sample) +
                   ": .NET samples allocations every 100k (102400 bytes) on average, fixed by the runtime; "
                   "give alloc-sample=100k",
           false;
  if ((config.mask & MASK_MONITOR) && about_.info_level < 12)
    return error = "monitor: lock contention on .NET needs ICorProfilerInfo12's EventPipe session (.NET 5 or later)",
           false;
  if (config.mask & (MASK_GC_HANDLE | MASK_GC_FINALIZATION))
    return error = "gchandle/finalization: not built on .NET yet (issue 35)", false;
  if (config.late && !late_refusal(config).empty()) return error = late_refusal(config), false;
  // The runtime's own settings are Mono's (callspec=, walker=, roots-every-gc): a callspec the user
  // gave cannot be honoured here; the others only choose Mono's internals and mean nothing on .NET.
  callspec_ = CallSpec();
  for (size_t pos = 0; pos < config.options.size();) {
    size_t end = config.options.find('\n', pos);
    if (end == std::string::npos) end = config.options.size();
    const std::string_view line = std::string_view(config.options).substr(pos, end - pos);
    pos = end + 1;
    if (line.starts_with("callspec=")) {
      if (!callspec_.parse(line.substr(9), error)) return false;
    } else if (!line.empty()) {
      return error = "unknown runtime option '" + std::string(line) + "'", false;
    }
  }
  if (!callspec_.empty()) program_assembly_ = program_assembly_name();
  config_ = config;
  env_ = env;
  // gcmove and gcroot come with `alloc` (Mono's alias: gc, gcalloc, gcmove, and gcroot in the compat
  // mode) and gcroot with heapshot-on-shutdown: not recorded on .NET yet (a heapshot's roots are), said
  // once with verbose, rather than refusing those options.
  if ((config.mask & (MASK_GC_MOVE | MASK_GC_ROOT)) && config.verbose) {
    static const char kNote[] =
        "mlpd: .NET: gcmove and gcroot (part of alloc and heapshot-on-shutdown) are not recorded yet (a heapshot's "
        "roots are)\n";
    (void)!::write(2, kNote, sizeof kNote - 1);
  }
  config_.mask &= ~(MASK_GC_MOVE | MASK_GC_ROOT);
  const uint32_t mask = config.start_paused ? 0 : config_.mask;
  saved_mask_ = config_.mask;
  paused_.store(config.start_paused, std::memory_order_release);
  mask_.store(mask, std::memory_order_release);
  DWORD low = 0, high = 0;
  // The callbacks are set for everything a mask may switch on later (the runtime's immutable flags
  // are none of these); a callback whose kind is off returns at once.
  runtime_mask(MASK_GC | MASK_EXCEPTION, low, high);
  // Attached: the cached-function searches are not among the flags allowed after attach (ReadyToRun
  // code met by the samples is named through GetFunctionFromIP instead: describe_late()).
  if (config.late) low &= ~monitor::kCacheSearches;
  late_ = config.late;
  // A later attach's file starts with one body per method described before (the agent's seed): every
  // body is described again at the catch-up (tier 0, tier 1 and OSR bodies of one method).
  // The classes a heapshot described in its walk's own buffer are not in that seed either: described
  // again when next used.
  if (config.late) {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    bodies_.clear();
    for (ClassID k : classes_in_logs_) classes_.erase(k);
    classes_in_logs_.clear();
  }
  // Exact allocations: the runtime's allocation callback exists only when asked for at Initialize
  // (it takes the allocator off its fast path for the whole run), so only when `alloc` was given.
  // With alloc-sample, the runtime's AllocationSampled events instead (its fast path kept).
  alloc_sampled_ = alloc_sampled;
  if ((config_.mask & MASK_GC_ALLOC) && !alloc_sampled_)
    low |= monitor::kObjectAllocated | monitor::kEnableObjectAllocated;
  // Stack snapshots: the innermost managed frame of an allocation or a contention (backtrace()).
  if (config_.mask & (MASK_GC_ALLOC | MASK_MONITOR)) low |= monitor::kEnableStackSnapshot;
  alloc_at_start_ = (config_.mask & MASK_GC_ALLOC) != 0;
  // `calls`: the enter/leave hooks (fast path: no frame info, arguments or return values asked for),
  // in every method the JIT compiles from now on, and no inlining (an inlined callee would have no
  // enter and leave of its own; .NET 8 and 10 were seen not to inline a hooked method anyway, the flag
  // makes it so on any runtime). ReadyToRun code has no hooks: see r2r_disabled_for_calls.
  calls_ = config_.calls;
  if (calls_) {
    low |= monitor::kEnterLeave | monitor::kDisableInlining;
    if (r2r_disabled_for_calls()) low |= monitor::kDisableAllNgenImages;
  }
  monitor_at_start_ = (config_.mask & MASK_MONITOR) != 0;
  const uint64_t keywords = (monitor_at_start_ ? event_pipe::kContentionKeyword : 0) |
                            (alloc_sampled_ ? event_pipe::kAllocationSamplingKeyword : 0);
  if (keywords) high |= monitor_high::kEventPipe;  // EventPipeEventDelivered
  // Heapshots: COR_PRF_MONITOR_GC now (only at Initialize does the runtime turn concurrent GC off,
  // which it needs before it lets MONITOR_GC be set later); cleared once the runtime has started.
  ClrHeapshots::Hooks hooks;
  hooks.monitor_gc = [this](bool on) { return set_heap_monitoring(on); };
  hooks.log = [this] { return log(); };
  hooks.describe_class = [this](ClassID klass, rt::ThreadLog& l) { describe_class_in(klass, l); };
  hooks.active = [this] { return active(); };
  hooks.paused = [this] { return paused_.load(std::memory_order_acquire); };
  heap_low_ = heapshots_.configure(config_, info_, about_.info_level, std::move(hooks)) ? monitor::kGc : 0;
  low_ = low;
  high_ = high;
  const HRESULT hr = info_->table->SetEventMask2(info_, low | heap_low_, high);
  if (!succeeded(hr)) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(hr));
    return error = std::string("the runtime refused the event mask (") + text + ")", false;
  }
  sync_environment();
  if (calls_ && !calls::install(info_, &ClrRuntime::map_function_thunk, this,
                                config.start_paused ? 0 : config_.calldepth, config_.calls_min_ns, error)) {
    info_->table->SetEventMask2(info_, 0, 0);
    return false;
  }
  // Attached (InitializeForAttach): the runtime turned concurrent GC off inside SetEventMask2 itself,
  // and no first module load is to come: the heapshots' mask may change from now on.
  if (config.late) heapshots_.runtime_started();
  if (keywords && !start_event_pipe(keywords, session_, error)) {
    info_->table->SetEventMask2(info_, 0, 0);
    return false;
  }
  // `sample`, `sample-real`: the capture code Mono's attached agent uses (per-thread CPU timers, else
  // our sampler thread signalling every thread), with no managed walk in the handler: the helper
  // unwinds each sample from its stack copy, through the JIT's frame-pointer chains, and the JIT
  // ranges in the file name the managed frames.
  if (config_.sample_mode != runtime::kSampleOff) {
    hooks::SamplingConfig sc;
    sc.mode = config_.sample_mode;
    sc.freq = config_.sample_freq;
    sc.pool = config_.sample_pool;
    sc.maxframes = std::min<uint32_t>(config_.maxframes, kMaxFrames);
    hooks::set_managed_thread_check(nullptr);
    if (!hooks::start_late_sampling(sc, env.meta, error)) {
      if (session_) info_->table->EventPipeStopSession(info_, session_);
      session_ = 0;
      return false;
    }
    sampling_ = true;
    // Attached: the threads that started before were named before us (their samples get their OS
    // names), and code compiled before (or ReadyToRun code, whose searches are not reported after an
    // attach) is described when a sample first meets it (describe_late()).
    hooks::set_attached_late(config.late);
    hooks::set_describe_methods(config.late ? &ClrRuntime::describe_late_entry : nullptr);
    // OSR bodies: their frame records skip the tier-0 frame's (sample_capture.h).
    hooks::ReplacedFrames replaced;
    replaced.other_body = [](uint64_t ip, uint64_t ret) {
      const ClrRuntime* r = instance();
      return r && r->code_map_.other_body_of_same_method(ip, ret);
    };
    replaced.is_code = [](uint64_t address) {
      const ClrRuntime* r = instance();
      return r && r->code_map_.find(address) != 0;
    };
    replaced.frameless_depth = [](uint64_t ip, bool leaf) {
      const ClrRuntime* r = instance();
      return r ? r->code_map_.frameless_depth(ip, leaf) : -1;
    };
    hooks::set_replaced_frames(replaced);
  }
  set_instance(this);
  active_.store(true, std::memory_order_release);
  saved_calldepth_ = config_.calldepth;
  if (calls_) calls::set_active(true);
  // The runtime's one domain (CoreCLR has a single AppDomain), as Mono's root domain is described.
  Event e;
  e.kind = EventKind::domain_load;
  e.ptr = 0;  // Mono's root domain id
  meta(e);
  return true;
}

// The runtime keeps its own copy of the environment (what managed code and Process.Start see), made
// before the agent started: what the agent changed in the C library's (nochildren takes MLPD_OPTIONS,
// our LD_PRELOAD entry and the CORECLR_ profiler variables naming us out) is written into the
// runtime's copy too (ICorProfilerInfo11::SetEnvironmentVariable, allowed in Initialize).
void ClrRuntime::sync_environment() {
  if (about_.info_level < 11 || !info_->table->GetEnvironmentVariable || !info_->table->SetEnvironmentVariable)
    return;
  const auto utf16 = [](std::string_view s) { return utf8_to_utf16(s); };
  for (const char* name : {"MLPD_OPTIONS", "LD_PRELOAD", "CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER",
                           "CORECLR_PROFILER_PATH", "CORECLR_PROFILER_PATH_64"}) {
    const std::u16string wname = utf16(name);
    WCHAR value[4096];
    ULONG length = 0;
    const bool in_runtime =
        succeeded(info_->table->GetEnvironmentVariable(info_, wname.c_str(), 4096, &length, value)) && length > 0;
    const char* libc = std::getenv(name);
    const std::u16string wlibc = libc ? utf16(libc) : std::u16string();
    const bool same = in_runtime ? (libc && std::u16string(value, length && value[length - 1] == 0 ? length - 1 : length) == wlibc)
                                 : !libc;
    if (same) continue;
    info_->table->SetEnvironmentVariable(info_, wname.c_str(), libc ? wlibc.c_str() : nullptr);
  }
}

void ClrRuntime::stop() {
  active_.store(false, std::memory_order_release);
  calls::set_active(false);
  if (sampling_) hooks::stop_sampling();  // a signal from now on is counted, not recorded
}

bool ClrRuntime::set_heap_monitoring(bool on) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  const DWORD want = on ? monitor::kGc : 0;
  if (want == heap_low_) return true;
  if (!succeeded(info_->table->SetEventMask2(info_, low_ | want, high_))) return false;
  heap_low_ = want;
  return true;
}

void ClrRuntime::detach() {
  stop();
  heapshots_.stop();
  if (late_) {
    hooks::set_describe_methods(nullptr);
    hooks::set_attached_late(false);
  }
  hooks::set_replaced_frames({});
  if (sampling_) hooks::stop_late_sampling();  // the timers or our sampler thread ended, the signal given back
  sampling_ = false;
  if (info_ && session_) info_->table->EventPipeStopSession(info_, session_);
  if (info_ && contention_session_) info_->table->EventPipeStopSession(info_, contention_session_);
  session_ = contention_session_ = 0;
  if (info_) info_->table->SetEventMask2(info_, 0, 0);
}

void ClrRuntime::final_round(bool) {
  if (sampling_) hooks::drain_samples(true);  // sampling is stopped: a record still being written is counted lost
}

runtime::SampleStats ClrRuntime::sample_stats() const { return sampling_ ? hooks::sample_stats() : runtime::SampleStats{}; }

std::string ClrRuntime::cpu_timers_not_used() const { return sampling_ ? hooks::cpu_timers_not_used() : std::string(); }

void ClrRuntime::meta(Event& e) { env_.meta->add(e, now_ns); }

rt::ThreadLog* ClrRuntime::log() { return env_.registry ? env_.registry->get() : nullptr; }

void ClrRuntime::set_event_mask(uint32_t mask) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  // `events +monitor` on a run started without it: a second session of ours, with the contention
  // keyword only (EventPipe sessions and COR_PRF_HIGH_MONITOR_EVENT_PIPE may come after Initialize).
  if ((mask & MASK_MONITOR) && !monitor_at_start_.load() && active() && about_.info_level >= 12 &&
      !contention_session_) {
    std::string error;
    if (!(high_ & monitor_high::kEventPipe) &&
        succeeded(info_->table->SetEventMask2(info_, low_ | heap_low_, high_ | monitor_high::kEventPipe)))
      high_ |= monitor_high::kEventPipe;
    EVENTPIPE_SESSION session = 0;
    if ((high_ & monitor_high::kEventPipe) && start_event_pipe(event_pipe::kContentionKeyword, session, error)) {
      contention_session_ = session;
      monitor_at_start_.store(true);
    }
  }
  // What was not asked for at start cannot be switched on (the runtime needs it at Initialize or it
  // is not built): only the kinds recorded here may come and go.
  mask &= MASK_GC | MASK_EXCEPTION | MASK_JIT | MASK_COUNTER | (alloc_at_start_ ? MASK_GC_ALLOC : 0) |
          (monitor_at_start_ ? MASK_MONITOR : 0);
  if (paused_.load()) {
    saved_mask_ = mask;
    return;
  }
  mask_.store(mask, std::memory_order_release);
}

bool ClrRuntime::pause() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (paused_.load()) return false;
  saved_mask_ = mask_.load();
  mask_.store(0, std::memory_order_release);
  saved_calldepth_ = calls::depth();
  calls::set_depth(0);  // the hooks stay; nothing is recorded at depth 0, open frames still get leaves
  paused_.store(true, std::memory_order_release);
  paused_since_read_.store(true, std::memory_order_release);
  pause_generation_.fetch_add(1, std::memory_order_acq_rel);
  write_sync_point(SYNC_POINT_PERIODIC);
  return true;
}

bool ClrRuntime::resume() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (!paused_.load()) return false;
  mask_.store(saved_mask_, std::memory_order_release);
  calls::set_depth(saved_calldepth_);
  paused_.store(false, std::memory_order_release);
  pause_generation_.fetch_add(1, std::memory_order_acq_rel);
  write_sync_point(SYNC_POINT_PERIODIC);
  return true;
}

// ReadyToRun code has no hooks, and `calls` wants every method's (docs/dotnet.md, "ReadyToRun code").
// Measured side by side, COR_PRF_DISABLE_ALL_NGEN_IMAGES and refusing each method's cached code at
// its search (JITCachedFunctionSearchStarted) cost the same start-up and give the same methods: every
// method then goes through the JIT (and .NET 8 and 10 already ignore the precompiled code of a method
// once enter/leave hooks are on: the per-method answer is a guard). The per-method answer is kept: it
// can still say yes to a method that gets no hooks, the switch is for every image and only at start.
bool ClrRuntime::r2r_disabled_for_calls() { return false; }

bool ClrRuntime::use_cached_code(FunctionID function) { return !calls_ || !hooked(function); }

bool ClrRuntime::hooked(FunctionID function) {
  if (!calls_) return false;
  if (callspec_.empty()) return true;
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    if (const auto it = hooked_.find(function); it != hooked_.end()) return it->second;
  }
  ClassID klass = 0;
  ModuleID module = 0;
  mdToken token = 0;
  ULONG32 count = 0;
  info_->table->GetFunctionInfo2(info_, function, 0, &klass, &module, &token, 0, &count, nullptr);
  std::string assembly;
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    if (const auto it = module_assembly_.find(module); it != module_assembly_.end()) assembly = it->second;
  }
  if (assembly.empty() && module) {
    AssemblyID id = 0;
    ULONG length = 0;
    if (succeeded(info_->table->GetModuleInfo(info_, module, nullptr, 0, &length, nullptr, &id)) && id)
      assembly = names_.assembly_name(id);
    std::lock_guard<std::mutex> lock(meta_mutex_);
    module_assembly_[module] = assembly;
  }
  const bool hook = callspec_.matches(names_.method_name(function), assembly,
                                      !program_assembly_.empty() && assembly == program_assembly_);
  std::lock_guard<std::mutex> lock(meta_mutex_);
  hooked_[function] = hook;
  return hook;
}

std::string ClrRuntime::calls_notice() const {
  const uint64_t n = dynamic_unhooked_.load(std::memory_order_relaxed);
  if (!calls_ || n == 0) return {};
  return "mlpd: calls: " + std::to_string(n) + " dynamic method" + (n == 1 ? "" : "s") +
         " (DynamicMethod, compiled Expressions) ran without enter/leave events (.NET puts no hooks into them)";
}

uint32_t ClrRuntime::call_depth() const { return calls_ ? calls::depth() : 0; }

void ClrRuntime::set_call_depth(uint32_t depth) {
  if (!calls_) return;
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (paused_.load()) saved_calldepth_ = depth;
  else calls::set_depth(depth);
}

// The mapper (at compilation, on the compiling thread, before the code can run): the method is
// described now, so its first enter never reaches the file before its name. Dynamic methods are not
// hooked (the runtime does not ask for them: seen on .NET 10; clr_calls.h), nor the methods a
// callspec leaves out.
uint64_t ClrRuntime::map_function(FunctionID function, bool& hook) {
  hook = false;
  if (!function || calls::compiling_dynamic(function) || !hooked(function)) return function;
  ensure_function(function);
  hook = true;
  return function;
}

uint64_t ClrRuntime::paused_since_last_read() {
  const bool now = paused_.load(std::memory_order_acquire);
  return (paused_since_read_.exchange(now, std::memory_order_acq_rel) || now) ? 1 : 0;
}

void ClrRuntime::write_sync_point(uint8_t type) {
  if (!active()) return;
  if (rt::ThreadLog* l = log()) rt::write_sync_point(*l, now_ns(), type);
}

// ---- metadata

void ClrRuntime::ensure_module(ModuleID module) {
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    if (!modules_.insert(module).second) return;
  }
  Event e;
  e.kind = EventKind::image_load;
  e.ptr = module;
  e.name = names_.module_name(module);
  meta(e);
}

void ClrRuntime::module_loaded(ModuleID module) {
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    if (!first_module_) {
      first_module_ = module;
      corelib_.store(module, std::memory_order_release);
    }
  }
  if (active()) ensure_module(module);
  heapshots_.runtime_started();  // Initialize has returned: the heapshots' mask may change now
}

void ClrRuntime::assembly_loaded(AssemblyID assembly) {
  if (!active()) return;
  WCHAR text[4];
  ULONG length = 0;
  AppDomainID domain = 0;
  ModuleID manifest = 0;
  info_->table->GetAssemblyInfo(info_, assembly, 0, &length, text, &domain, &manifest);
  if (manifest) ensure_module(manifest);
  Event e;
  e.kind = EventKind::assembly_load;
  e.ptr = assembly;
  e.ptr2 = manifest;
  e.name = names_.assembly_name(assembly);
  meta(e);
}

// The code bodies the runtime has for `function` now: tier 0, tier 1, OSR and ReJIT versions each have
// their own code start (GetNativeCodeStartAddresses, Info9), each its range (GetCodeInfo4); before
// Info9, the current body only (GetCodeInfo2). The hot part of each (a cold part would be a second chunk).
std::vector<CodeInfo> ClrRuntime::code_bodies(FunctionID function) {
  std::vector<CodeInfo> bodies;
  UINT_PTR starts[16];
  ULONG32 count = 0;
  if (about_.info_level >= 9 &&
      succeeded(info_->table->GetNativeCodeStartAddresses(info_, function, 0, 16, &count, starts))) {
    for (ULONG32 i = 0; i < count && i < 16; ++i) {
      CodeInfo chunks[4];
      ULONG32 n = 0;
      if (starts[i] && succeeded(info_->table->GetCodeInfo4(info_, starts[i], 4, &n, chunks)) && n > 0)
        bodies.push_back(chunks[0]);
    }
  }
  if (bodies.empty()) {
    CodeInfo chunks[4];
    ULONG32 n = 0;
    if (succeeded(info_->table->GetCodeInfo2(info_, function, 4, &n, chunks)) && n > 0 && chunks[0].start_address)
      bodies.push_back(chunks[0]);
  }
  return bodies;
}

// Every body of `function` not described yet, each with its own range, so a sample in any body
// resolves. A method is named once; one whose code the runtime has not published yet (ReadyToRun code
// at its cached-function search) is described without code now and its code later (round()).
//
// A dynamic method (`dynamic`: its DynamicMethodJITCompilationFinished) is compiled once in its life,
// but the runtime frees its code and its FunctionID when it is collected and gives both to later
// dynamic methods (compiled Expressions do this all the time): each compilation is a new method. The
// first keeps its FunctionID as the file's method id; a later one that reuses it gets a new id (the
// FunctionID with a generation above bit 48, never a user-space pointer), its code replaces whatever
// the map had there, and it is always described (with the new name), so samples, backtraces and
// clauses in it name it, not the method that was there before.
uint64_t ClrRuntime::file_method_id(FunctionID function) {
  std::lock_guard<std::mutex> lock(meta_mutex_);
  const auto it = dynamic_generation_.find(function);
  return it == dynamic_generation_.end() ? function : (uint64_t{it->second} << 48 | function);
}

void ClrRuntime::ensure_function(FunctionID function, bool dynamic) {
  if (!function) return;
  const std::vector<CodeInfo> bodies = code_bodies(function);
  bool named;
  uint64_t id = function;
  std::vector<CodeInfo> fresh;
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    named = functions_.count(function) != 0;
    if (dynamic && named) {  // a FunctionID given again to a new dynamic method
      // The generation goes in bits 48-55, 1 to 255 then 1 again: a method id with its top byte set
      // can become a buffer's method_base, which mprof-report misreads (its read_int64 shifts the
      // eighth byte by 54 bits; docs/format.md).
      uint32_t& generation = dynamic_generation_[function];
      generation = generation % 255 + 1;
      named = false;
    }
    if (const auto it = dynamic_generation_.find(function); it != dynamic_generation_.end())
      id = uint64_t{it->second} << 48 | function;
    for (const CodeInfo& b : bodies)
      if (bodies_.insert(b.start_address).second || dynamic) fresh.push_back(b);
    if (bodies.empty()) without_code_.insert(function);
    else without_code_.erase(function);
  }
  if (named && fresh.empty()) return;
  std::string name = dynamic ? names_.dynamic_method_name(function) : names_.method_name(function);
  if (name.empty()) name = names_.dynamic_method_name(function);
  if (fresh.empty()) fresh.push_back(CodeInfo{0, 0});  // named without code (yet)
  for (const CodeInfo& b : fresh) {
    const uint32_t shape = b.start_address ? frame_shape(b.start_address, b.size) : 0;
    if (dynamic) code_map_.replace(b.start_address, b.size, id, shape);
    else code_map_.add(b.start_address, b.size, id, shape);
    Event e;
    e.kind = EventKind::method_jit;
    e.method = id;
    e.ptr = b.start_address;
    e.size = b.size;
    e.name = name;
    meta(e);
  }
  std::lock_guard<std::mutex> lock(meta_mutex_);
  functions_.insert(function);
  if (is_lock_method(name)) lock_functions_.insert(function);
}

// ---- attach

namespace {
// Every id an enumerator gives (ICorProfilerModuleEnum, ...Function..., ...Thread...), then released.
template <class T>
std::vector<T> drain_enum(void* unknown) {
  std::vector<T> out;
  auto* e = static_cast<IdEnum*>(unknown);
  if (!e || !e->table) return out;
  T batch[256];
  ULONG fetched = 0;
  while (out.size() < (size_t{1} << 22) && succeeded(e->table->Next(e, 256, batch, &fetched)) && fetched > 0) {
    out.insert(out.end(), batch, batch + std::min<ULONG>(fetched, 256));
    if (fetched < 256) break;
  }
  e->table->Release(e);
  return out;
}
}  // namespace

void ClrRuntime::catch_up() {
  if (!active() || !info_) return;
  void* e = nullptr;
  if (succeeded(info_->table->EnumModules(info_, &e)))
    for (ModuleID m : drain_enum<ModuleID>(e)) module_loaded(m);
  e = nullptr;
  size_t jitted = 0;
  if (about_.info_level >= 4 && succeeded(info_->table->EnumJITedFunctions2(info_, &e))) {
    for (const FunctionAndRejit& f : drain_enum<FunctionAndRejit>(e)) {
      ensure_function(f.function_id);
      ++jitted;
    }
  }
  e = nullptr;
  size_t threads = 0;
  if (succeeded(info_->table->EnumThreads(info_, &e))) {
    for (ThreadID t : drain_enum<ThreadID>(e)) {
      DWORD os = 0;
      info_->table->GetThreadInfo(info_, t, &os);
      std::lock_guard<std::mutex> lock(threads_mutex_);
      ThreadState& st = threads_[t];
      if (!st.os_tid) st.os_tid = static_cast<int>(os);
      ++threads;
    }
  }
  if (config_.verbose) {
    size_t modules = 0;
    {
      std::lock_guard<std::mutex> lock(meta_mutex_);
      modules = modules_.size();
    }
    const std::string line = "mlpd: attached: " + std::to_string(modules) + " modules, " + std::to_string(jitted) +
                             " compiled methods, " + std::to_string(threads) + " managed threads found\n";
    (void)!::write(2, line.data(), line.size());
  }
}

bool ClrRuntime::request_detach(std::string& error) {
  if (!info_) return error = "no runtime to detach from", false;
  // The runtime checks for callbacks in progress after the time it is told to expect (300 ms at the
  // least), then only every few minutes: ours return at once once the mask is cleared (detach()).
  const HRESULT hr = info_->table->RequestProfilerDetach(info_, 300);
  if (succeeded(hr)) return true;
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(hr));
  error = std::string("the runtime refused the detach (") + text + ")";
  return false;
}

void ClrRuntime::describe_late_entry(const uint64_t* methods, const uint64_t* code, uint64_t* resolved, size_t count,
                                     std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  ClrRuntime* r = instance();
  for (size_t i = 0; i < count; ++i) resolved[i] = 0;
  if (r) r->describe_late(methods, code, resolved, count, ranges);
}

// The drain's question after an attach (helper thread): the methods of code addresses no JIT range
// of the file holds: compiled before the attach and not enumerated (a body replaced since), or
// ReadyToRun code. Asked of the runtime (GetFunctionFromIP2: off the signal path, its locks are
// fine here); each method is described with every body, as at its compilation.
void ClrRuntime::describe_late(const uint64_t*, const uint64_t* code, uint64_t* resolved, size_t count,
                               std::vector<std::pair<uint64_t, uint64_t>>& ranges) {
  if (!active() || !info_) return;
  for (size_t i = 0; i < count; ++i) {
    FunctionID f = 0;
    ReJITID rejit = 0;
    if (!code[i] || !succeeded(info_->table->GetFunctionFromIP2(info_, reinterpret_cast<LPCBYTE>(code[i]), &f, &rejit)) || !f) {
      if (code[i]) ranges.emplace_back(code[i], 0);
      continue;
    }
    ensure_function(f);
    resolved[i] = file_method_id(f);
    for (const CodeInfo& b : code_bodies(f)) ranges.emplace_back(b.start_address, b.size);
  }
}

// The helper's round: the code of methods named before their code was published.
void ClrRuntime::round() {
  // The samples first (their native symbols into the MetaLog); their managed frames are named by the
  // JIT ranges, which may come later in the file (the reader names a frame at the end).
  if (sampling_) hooks::drain_samples();
  if (!active()) return;
  std::vector<FunctionID> waiting;
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    for (FunctionID f : without_code_) {
      waiting.push_back(f);
      if (waiting.size() == 4096) break;  // bounded work per round
    }
  }
  for (FunctionID f : waiting) ensure_function(f);
}

void ClrRuntime::function_compiled(FunctionID function, bool dynamic) {
  if (!active()) return;
  if (dynamic && calls_) dynamic_unhooked_.fetch_add(1, std::memory_order_relaxed);
  counts_[kJitted].fetch_add(1, std::memory_order_relaxed);
  ensure_function(function, dynamic);
}

// ---- threads

void ClrRuntime::thread_created(ThreadID thread) {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(threads_mutex_);
  threads_.try_emplace(thread);
}

void ClrRuntime::thread_assigned(ThreadID thread, DWORD os_thread) {
  if (!active()) return;
  // Called on the thread itself when it starts running managed code: its pthread id is the file's
  // thread id (as Mono's, so the thread's own events and its start/name events agree).
  if (static_cast<pid_t>(os_thread) != static_cast<pid_t>(::syscall(SYS_gettid))) return;
  std::string name;
  uint64_t tid = self_tid();
  {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    ThreadState& t = threads_[thread];
    if (t.started) return;
    t.started = true;
    t.tid = tid;
    t.os_tid = static_cast<int>(os_thread);
    name = t.name;
  }
  counts_[kThreads].fetch_add(1, std::memory_order_relaxed);
  Event e;
  e.kind = EventKind::thread_start;
  e.ptr = tid;
  meta(e);
  if (!name.empty()) {
    Event n;
    n.kind = EventKind::thread_name;
    n.ptr = tid;
    n.name = name;
    meta(n);
  }
}

void ClrRuntime::thread_named(ThreadID thread, const WCHAR* text, ULONG length) {
  if (!active()) return;
  std::string name = text ? utf8(text, length) : std::string();
  uint64_t tid = 0;
  {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    ThreadState& t = threads_[thread];
    t.name = name;
    if (!t.started || t.ended) return;  // written when the thread starts
    tid = t.tid;
  }
  Event e;
  e.kind = EventKind::thread_name;
  e.ptr = tid;
  e.name = name;
  meta(e);
}

void ClrRuntime::thread_destroyed(ThreadID thread) {
  if (!active()) return;
  uint64_t tid = 0;
  {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    auto it = threads_.find(thread);
    if (it == threads_.end()) return;
    const bool write = it->second.started && !it->second.ended;
    if (it->second.started) counts_[kThreads].fetch_sub(1, std::memory_order_relaxed);
    tid = it->second.tid;
    threads_.erase(it);
    if (!write) return;
  }
  Event e;
  e.kind = EventKind::thread_end;
  e.ptr = tid;
  meta(e);
}

void ClrRuntime::end_remaining_threads() {
  std::vector<uint64_t> ending;
  {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    for (auto& [id, t] : threads_)
      if (t.started && !t.ended) {
        t.ended = true;
        ending.push_back(t.tid);
      }
  }
  for (uint64_t tid : ending) {
    Event e;
    e.kind = EventKind::thread_end;
    e.ptr = tid;
    meta(e);
  }
}

std::vector<runtime::OsThread> ClrRuntime::os_threads() const {
  std::vector<runtime::OsThread> out;
  std::lock_guard<std::mutex> lock(threads_mutex_);
  for (const auto& [id, t] : threads_)
    if (t.started) out.push_back(runtime::OsThread{t.os_tid, t.tid, t.name});
  return out;
}

// ---- collections: the world stopped and started (suspensions for a GC), each collection's start
// and end with the oldest generation collected, the heap's size after it. Written to the calling
// thread's own log (the MetaLog's lock must not be taken while the world is stopped).

void ClrRuntime::suspend_started(SuspendReason reason) {
  gc_suspension_ = reason == SuspendReason::kForGc || reason == SuspendReason::kForGcPrep;
  if (gc_suspension_) suspend_start_ns_.store(now_ns(), std::memory_order_relaxed);
  if (!gc_suspension_ || !recording(MASK_GC)) return;
  if (rt::ThreadLog* l = log()) rt::write_gc_event(*l, now_ns(), GC_EVENT_PRE_STOP_WORLD, 0);
}
void ClrRuntime::suspend_finished() {
  if (!gc_suspension_ || !recording(MASK_GC)) return;
  if (rt::ThreadLog* l = log()) rt::write_gc_event(*l, now_ns(), GC_EVENT_POST_STOP_WORLD, 0);
}
void ClrRuntime::resume_started() {
  if (!gc_suspension_ || !recording(MASK_GC)) return;
  rt::ThreadLog* l = log();
  if (!l) return;
  // The heap's size, once the collection is over (GetGenerationBounds is not allowed inside one).
  GenerationRange ranges[64];
  ULONG n = 0;
  if (succeeded(info_->table->GetGenerationBounds(info_, 64, &n, ranges))) {
    uint64_t size = 0;
    for (ULONG i = 0; i < n && i < 64; ++i) size += ranges[i].range_length;
    counts_[kHeapBytes].store(size, std::memory_order_relaxed);
    rt::write_gc_resize(*l, now_ns(), size);
  }
  rt::write_gc_event(*l, now_ns(), GC_EVENT_PRE_START_WORLD, 0);
}
void ClrRuntime::resume_finished() {
  const bool was = gc_suspension_.exchange(false);
  if (was) {
    const uint64_t start = suspend_start_ns_.load(std::memory_order_relaxed), end = now_ns();
    if (start && end > start) counts_[kPauseNs].fetch_add(end - start, std::memory_order_relaxed);
  }
  if (!was || !recording(MASK_GC)) return;
  if (rt::ThreadLog* l = log()) rt::write_gc_event(*l, now_ns(), GC_EVENT_POST_START_WORLD, 0);
}
void ClrRuntime::gc_started(int generations, const BOOL* collected) {
  uint8_t oldest = 0;
  for (int g = 0; collected && g < generations && g < 5; ++g)
    if (collected[g]) oldest = static_cast<uint8_t>(g < 2 ? g : 2);  // LOH, POH: collected with gen 2
  gc_generation_ = oldest;
  // dotnet.gc.collections by generation: a collection of generation N collects the younger ones too,
  // counted as .NET counts them (GC.CollectionCount(n) includes the older collections).
  for (uint8_t g = 0; g <= oldest; ++g) counts_[kGen0 + g].fetch_add(1, std::memory_order_relaxed);
  heapshots_.gc_started(oldest == 2);
  if (!recording(MASK_GC)) return;
  if (rt::ThreadLog* l = log()) rt::write_gc_event(*l, now_ns(), GC_EVENT_START, oldest);
}
void ClrRuntime::gc_finished() {
  heapshots_.gc_finished(gc_generation_ == 2);
  if (!recording(MASK_GC)) return;
  if (rt::ThreadLog* l = log()) rt::write_gc_event(*l, now_ns(), GC_EVENT_END, gc_generation_);
}

// ---- exceptions

void ClrRuntime::exception_thrown(ObjectID object) {
  counts_[kExceptions].fetch_add(1, std::memory_order_relaxed);
  if (!recording(MASK_EXCEPTION)) return;
  rt::Backtrace bt;
  const rt::Backtrace* frames = backtrace(bt);
  if (rt::ThreadLog* l = log()) rt::write_throw(*l, now_ns(), object, frames);
}

void ClrRuntime::exception_clause(uint8_t clause, FunctionID function) {
  if (!recording(MASK_EXCEPTION)) return;
  ensure_function(function);  // described before the event that names it
  if (rt::ThreadLog* l = log()) rt::write_clause(*l, now_ns(), clause, 0, file_method_id(function), 0);
}

// ---- unhandled exceptions
//
// The runtime's first pass calls SearchFunctionEnter(F) for each managed frame from the throw outward,
// SearchCatcherFound when F catches, SearchFunctionLeave after each. When the thread's outermost
// managed frame catches nothing, the runtime reports the exception unhandled and aborts the process
// right after its SearchFunctionEnter (no Leave, no shutdown, no atexit), which lost the thread's
// unflushed events, the throw among them. So when the search enters the thread's outermost managed
// frame with no catcher found yet, and that method has no catch or filter clause in its IL (only then
// is the exception certainly unhandled), every thread's events are written now: a live round of the
// helper, waited for at most 2 s. Per thread, 16 bytes: the frame being searched (its low bit: a
// catcher was found) and the thread's outermost managed method (its low bit: it may catch), learned by
// one walk of the whole chain; a second walk confirms it for this entry (a thread entered from native
// code more than once may have several) before the round. Costs a compare per search step and a walk
// per thread that searches; an outermost method with a catch clause of its own (Main catching) costs
// nothing more, and an unhandled exception through it still loses the thread's unflushed events.
namespace {
thread_local uint64_t t_searching = 0;  // the FunctionID being searched | 1 once a catcher was found
thread_local uint64_t t_outermost = 0;  // this thread's outermost managed method (0: not known yet)
constexpr int kUnhandledRoundLimitMs = 2000;
// heapshot-on-shutdown's wait: given up when the runtime's collection makes no progress for this long
// (not begun, or no callback of the walk: the marking of a very large heap between the roots and the
// objects reports nothing for seconds, so the bound is generous; it is there for a runtime that cannot
// collect at all, never to cut a walk short).
constexpr uint32_t kFinalHeapshotStallMs = 30000;
}  // namespace

uint64_t ClrRuntime::outermost_managed_method() {
  uint64_t lo, hi;
  if (!thread_stack(lo, hi)) return 0;
  constexpr unsigned kChunk = 64;
  uint64_t ips[kChunk], methods[kChunk];
  uint64_t outermost = 0;
  unsigned n = 0;
  auto lookup = [&] {
    code_map_.find_all(ips, n, methods);
    for (unsigned i = 0; i < n; ++i)
      if (methods[i]) outermost = methods[i];
    n = 0;
  };
  walk_frame_pointers(reinterpret_cast<uint64_t>(__builtin_frame_address(0)), lo, hi, 1u << 16, [&](uint64_t ret) {
    ips[n++] = ret - 1;
    if (n == kChunk) lookup();
    return true;
  });
  lookup();
  return outermost;
}

void ClrRuntime::search_catcher_found() { t_searching |= 1; }

// Whether `method`'s IL has a catch or filter clause (or cannot be read): its frame may stop an
// exception, so reaching it says nothing for certain.
bool ClrRuntime::may_catch(uint64_t method) {
  const FunctionID function = method & ((uint64_t{1} << 48) - 1);  // a dynamic method's file id: its FunctionID
  ClassID klass = 0;
  ModuleID module = 0;
  mdToken token = 0;
  LPCBYTE body = nullptr;
  ULONG size = 0;
  if (!succeeded(info_->table->GetFunctionInfo(info_, function, &klass, &module, &token)) ||
      !succeeded(info_->table->GetILFunctionBody(info_, module, token, &body, &size)))
    return true;
  return il_catch_clauses(body, size) != IlCatch::none;
}

void ClrRuntime::search_function_enter(FunctionID function) {
  const uint64_t caught = t_searching & 1;  // a catcher found further in: this exception is handled
  t_searching = function | caught;
  if (caught || !function || !env_.live_round || !active()) return;
  if (!t_outermost) {  // learned once per thread; its low bit: it may catch (then nothing is certain)
    const uint64_t m = outermost_managed_method();
    t_outermost = m ? (m | (may_catch(m) ? 1 : 0)) : 1;
  }
  if (t_outermost & 1) return;
  if (function != t_outermost && file_method_id(function) != t_outermost) return;
  const uint64_t now_outermost = outermost_managed_method();  // this entry's outermost frame, now
  if (now_outermost != function && now_outermost != file_method_id(function)) return;
  if (config_.verbose) {
    static const char kNote[] = "mlpd: an exception reached the thread's outermost frame: the events so far are written now\n";
    (void)!::write(2, kNote, sizeof kNote - 1);
  }
  // heapshot-on-shutdown: the process ends right after this callback (abort, no Shutdown), so the last
  // heapshot is taken now, while the throwing thread's frames are still there (the runtime calls this
  // callback in preemptive mode: a collection can run while it waits).
  heapshots_.take_final("unhandled exception", kFinalHeapshotStallMs, config_.verbose);
  env_.live_round(kUnhandledRoundLimitMs);
}

// ---- allocations (`alloc`: every object, through ObjectAllocated)

// The module a class comes from (an array's: its element's); CoreLib's when none says.
ModuleID ClrRuntime::class_module(ClassID klass, int depth) {
  ModuleID module = 0;
  mdTypeDef type = 0;
  ClassID parent = 0;
  ULONG32 n = 0;
  if (succeeded(info_->table->GetClassIDInfo2(info_, klass, &module, &type, &parent, 0, &n, nullptr)) && module)
    return module;
  std::uint32_t element_type = 0;
  ClassID element = 0;
  ULONG rank = 0;
  if (depth < 8 && info_->table->IsArrayClass(info_, klass, &element_type, &element, &rank) == kS_OK && element)
    return class_module(element, depth + 1);
  std::lock_guard<std::mutex> lock(meta_mutex_);
  return first_module_;
}

// A ClassID is both the file's class and its vtable (CoreCLR has one MethodTable per type): the
// class_load and vtable_load an alloc event needs, once each, before it.
void ClrRuntime::ensure_class(ClassID klass) {
  {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    if (classes_.count(klass)) return;
  }
  const ModuleID module = class_module(klass);
  if (module) ensure_module(module);
  std::string name = names_.class_name(klass);
  std::lock_guard<std::mutex> lock(meta_mutex_);
  if (!classes_.insert(klass).second) return;  // another thread described it meanwhile
  Event c;
  c.kind = EventKind::class_load;
  c.ptr = klass;
  c.ptr2 = module;
  c.name = std::move(name);
  meta(c);
  Event v;
  v.kind = EventKind::vtable_load;
  v.ptr = klass;
  v.ptr2 = 0;  // the root domain
  v.ptr3 = klass;
  meta(v);
}

// The classes described, in a lossy direct-mapped table shared by all threads (relaxed atomics: a
// stale or evicted slot only costs a trip to the locked set). Not thread_local: libmlpd.so's TLS is
// static (initial-exec, for the hot paths) and must stay small, or dlopen (CORECLR_PROFILER_PATH,
// mono --profile) fails with "cannot allocate memory in static TLS block".
void ClrRuntime::note_class(ClassID klass) {
  static std::atomic<uint64_t> seen[1024];
  std::atomic<uint64_t>& slot = seen[(klass >> 4) & 1023];
  if (slot.load(std::memory_order_relaxed) != klass) {
    ensure_class(klass);
    slot.store(klass, std::memory_order_relaxed);
  }
}

// A class met by a heapshot's walk (the world stopped): described in the walk's own buffer, as Mono's
// heapshot engine does, so that it comes before the objects in the file. The described set's lock
// only with try_lock (a thread the collection stopped may hold it): a class described twice is
// harmless to every reader.
void ClrRuntime::describe_class_in(ClassID klass, rt::ThreadLog& l) {
  {
    std::unique_lock<std::mutex> lock(meta_mutex_, std::try_to_lock);
    if (lock.owns_lock() && classes_.count(klass)) return;
  }
  ModuleID module = 0;
  mdTypeDef type = 0;
  ClassID parent = 0;
  ULONG32 n = 0;
  if (!succeeded(info_->table->GetClassIDInfo2(info_, klass, &module, &type, &parent, 0, &n, nullptr)) || !module) {
    std::uint32_t element_type = 0;
    ClassID element = 0;
    ULONG rank = 0;
    if (info_->table->IsArrayClass(info_, klass, &element_type, &element, &rank) == kS_OK && element)
      info_->table->GetClassIDInfo2(info_, element, &module, &type, &parent, 0, &n, nullptr);
  }
  if (!module) module = corelib_.load(std::memory_order_acquire);  // as class_module() says for what names none
  std::string name = names_.class_name(klass);
  if (name.size() > 1024) name.resize(1024);
  const uint64_t now = now_ns();
  rt::write_class_load(l, now, klass, module, name.data(), name.size());
  rt::write_vtable_load(l, now, klass, 0, klass);
  std::unique_lock<std::mutex> lock(meta_mutex_, std::try_to_lock);
  if (lock.owns_lock() && classes_.insert(klass).second) classes_in_logs_.insert(klass);
}

void ClrRuntime::object_allocated(ObjectID object, ClassID klass) {
  if (!recording(MASK_GC_ALLOC) || !klass || alloc_sampled_) return;
  note_class(klass);
  SIZE_T size = 0;
  info_->table->GetObjectSize2(info_, object, &size);
  rt::Backtrace bt;
  const rt::Backtrace* frames = backtrace(bt);
  if (rt::ThreadLog* l = log()) rt::write_alloc(*l, now_ns(), klass, object, size, frames);
}

// ---- the runtime's events through our EventPipe session (`monitor`, `alloc-sample`)

// One session of the profiler's own: the runtime provider with the keywords asked for, at the
// informational level, no rundown. Its events are delivered synchronously, on the thread that raises
// them, to EventPipeEventDelivered (COR_PRF_HIGH_MONITOR_EVENT_PIPE, set with the event mask).
bool ClrRuntime::start_event_pipe(uint64_t keywords, EVENTPIPE_SESSION& out, std::string& error) {
  EventPipeProviderConfig provider{event_pipe::kRuntimeProvider, keywords, event_pipe::kLevelInformational, nullptr};
  EVENTPIPE_SESSION session = 0;
  const HRESULT hr = info_->table->EventPipeStartSession(info_, 1, &provider, 0, &session);
  if (!succeeded(hr) || !session) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(hr));
    error = std::string((keywords & event_pipe::kContentionKeyword) ? "monitor" : "alloc-sample") +
            ": the runtime refused an EventPipe session (" + text + ")";
    return false;
  }
  out = session;
  return true;
}

// Whether `provider` is Microsoft-Windows-DotNETRuntime (asked once, then remembered).
bool ClrRuntime::runtime_provider(EVENTPIPE_PROVIDER provider) {
  if (!provider) return false;
  if (provider_.load(std::memory_order_relaxed) == provider) return true;
  WCHAR name[64];
  ULONG length = 0;
  if (!succeeded(info_->table->EventPipeGetProviderInfo(info_, provider, 64, &length, name))) return false;
  constexpr size_t kLen = sizeof event_pipe::kRuntimeProvider / sizeof(char16_t) - 1;
  if (length < kLen || length > 64) return false;
  for (size_t i = 0; i < kLen; ++i)
    if (name[i] != event_pipe::kRuntimeProvider[i]) return false;
  if (length > kLen && name[kLen] != 0) return false;
  provider_.store(provider, std::memory_order_relaxed);
  return true;
}

void ClrRuntime::event_pipe_event(EVENTPIPE_PROVIDER provider, DWORD id, DWORD version, const BYTE* data,
                                  ULONG size, ThreadID, ULONG, const UINT_PTR*) {
  if (!active() || !runtime_provider(provider)) return;
  switch (id) {
    case event_pipe::kContentionStart: contention_started(data, size, version); break;
    case event_pipe::kContentionStop: contention_stopped(data, size, version); break;
    case event_pipe::kAllocationSampled: allocation_sampled(data, size); break;
    default: break;
  }
}

namespace {
// The lock this thread waits for, from its ContentionStart to its ContentionStop (whose payload
// names none): the file's done event names the same object as its contention (8 bytes of static TLS).
thread_local uint64_t tls_contended = 0;
}  // namespace

// Mono's monitor events: contention when a thread finds the lock taken (with its backtrace), done when
// it has it. The object is the one locked (Monitor.Enter's argument), else the lock's own id.
void ClrRuntime::contention_started(const BYTE* data, ULONG size, DWORD version) {
  event_pipe::ContentionStart c;
  if (!event_pipe::parse_contention_start(data, size, version, c) || c.flags != event_pipe::kContentionManaged)
    return;
  counts_[kContentions].fetch_add(1, std::memory_order_relaxed);  // dotnet.monitor.lock_contentions
  const uint64_t object = c.object ? c.object : c.lock_id;
  // A done is written only after a contention written (monitor may come on between the two).
  tls_contended = 0;
  if (!recording(MASK_MONITOR)) return;
  tls_contended = object ? object : 1;
  rt::Backtrace bt;
  const rt::Backtrace* frames = backtrace(bt);
  if (frames && bt.count) {
    std::lock_guard<std::mutex> lock(meta_mutex_);
    while (bt.count > 1 && lock_functions_.count(bt.frames[bt.count - 1])) --bt.count;  // innermost last
  }
  if (rt::ThreadLog* l = log()) rt::write_monitor(*l, now_ns(), MONITOR_CONTENTION, object, frames);
}

void ClrRuntime::contention_stopped(const BYTE* data, ULONG size, DWORD version) {
  event_pipe::ContentionStop c;
  if (!event_pipe::parse_contention_stop(data, size, version, c) || c.flags != event_pipe::kContentionManaged)
    return;
  const uint64_t object = tls_contended;
  tls_contended = 0;
  if (!object || !recording(MASK_MONITOR)) return;
  if (rt::ThreadLog* l = log()) rt::write_monitor(*l, now_ns(), MONITOR_DONE, object == 1 ? 0 : object, nullptr);
}

// alloc-sample: each AllocationSampled event is one sampled allocation, written as Mono's side writes
// one (class, object, size, backtrace); the file's alloc-sample=100k gives the reader the weight
// (1 / (1 - exp(-size / 102400)), the runtime's own sampling probability).
void ClrRuntime::allocation_sampled(const BYTE* data, ULONG size) {
  if (!alloc_sampled_ || !recording(MASK_GC_ALLOC)) return;
  event_pipe::AllocationSampled a;
  if (!event_pipe::parse_allocation_sampled(data, size, a) || !a.type_id) return;
  note_class(a.type_id);
  rt::Backtrace bt;
  const rt::Backtrace* frames = backtrace(bt);
  if (rt::ThreadLog* l = log()) rt::write_alloc(*l, now_ns(), a.type_id, a.address, a.size, frames);
}

// Our own walk: the frame-pointer chain from here up (the runtime's native frames keep theirs; the
// JIT's code keeps rbp frames on Linux), each return address looked up in the code map; no runtime
// call. Only frames inside this thread's stack are read.
// This thread's stack bounds (asked once per thread).
bool ClrRuntime::thread_stack(uint64_t& lo, uint64_t& hi) {
  static thread_local uint64_t stack_lo = 0, stack_hi = 0;  // 16 bytes: libmlpd.so's TLS is static
  if (!stack_hi) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        stack_lo = reinterpret_cast<uint64_t>(addr);
        stack_hi = stack_lo + size;
      }
      pthread_attr_destroy(&attr);
    }
    if (!stack_hi) return false;
  }
  lo = stack_lo;
  hi = stack_hi;
  return true;
}

const rt::Backtrace* ClrRuntime::backtrace(rt::Backtrace& bt) {
  const uint32_t max = std::min<uint32_t>(config_.maxframes, static_cast<uint32_t>(rt::kMaxBacktrace));
  if (!max) return nullptr;
  uint64_t stack_lo, stack_hi;
  if (!thread_stack(stack_lo, stack_hi)) return nullptr;
  // The return addresses first (the runtime's native frames among them), then one shared lock of the
  // code map for all of them.
  constexpr unsigned kMaxWalked = 128;
  uint64_t ips[kMaxWalked], fps[kMaxWalked], methods[kMaxWalked];
  uint32_t shapes[kMaxWalked];
  const unsigned walked = walk_frame_pointers(reinterpret_cast<uint64_t>(__builtin_frame_address(0)), stack_lo,
                                              stack_hi, kMaxWalked, [&, i = 0u](uint64_t ret, uint64_t fp) mutable {
                                                fps[i] = fp;
                                                ips[i++] = ret - 1;
                                                return true;
                                              });
  code_map_.find_all(ips, walked, methods, shapes);
  // One pass, innermost first: the chain's records, the hidden frame where it sits (above the last
  // record below its return address's place; when that place is not known, right below the chain's
  // first managed frame), after each frame without a record of its own (frame_shape.h) the callers its
  // stack space hides, and OSR records put right (osr_caller()). Stops once `max` frames are kept.
  uint64_t inner[rt::kMaxBacktrace];
  uint32_t n = 0;
  uint64_t prev_ip = 0, prev_method = 0;  // the frame before (method 0: native, or none)
  auto keep = [&](uint64_t ip, uint64_t method) {
    if (method) inner[n++] = method;
    prev_ip = ip;
    prev_method = method;
  };
  auto frameless_callers = [&](uint64_t sp, uint32_t shape, uint64_t bound) {
    while ((shape & kFrameless) && n < max) {
      const uint64_t slot = sp + frameless_depth_of(shape);
      if (slot < sp || slot < stack_lo || slot + 8 > bound) return;
      const uint64_t ret = *reinterpret_cast<const uint64_t*>(slot);
      uint32_t next = 0;
      const uint64_t m = ret ? code_map_.find(ret - 1, next) : 0;
      if (!m) return;  // not a return address into JIT'd code: the chain goes on as it was
      keep(ret - 1, m);
      sp = slot + 8;
      shape = next;
    }
  };
  uint64_t hidden_ip = 0, hidden_at = 0;
  const uint64_t hidden = hidden_frame(ips, fps, methods, walked, stack_hi, hidden_ip, hidden_at);
  unsigned hidden_before = walked;
  if (hidden) {
    hidden_before = 0;
    if (hidden_at)
      while (hidden_before < walked && fps[hidden_before] < hidden_at) ++hidden_before;
    else
      while (hidden_before < walked && !methods[hidden_before]) ++hidden_before;
  }
  for (unsigned i = 0; i <= walked && n < max; ++i) {
    if (hidden && i == hidden_before) {
      keep(hidden_ip, hidden);
      if (hidden_at) {
        uint32_t shape = 0;
        (void)code_map_.find(hidden_ip, shape);
        frameless_callers(hidden_at + 8, shape, i < walked ? fps[i] : stack_hi);
      }
    }
    if (i == walked || n == max) break;
    uint64_t ip = ips[i], method = methods[i];
    uint32_t shape = shapes[i];
    if (method && method == prev_method && i + 1 < walked && code_map_.other_body_of_same_method(prev_ip, ip)) {
      osr_caller(fps[i], fps[i + 1], fps[0], ip, method);
      shape = 0;
    }
    keep(ip, method);
    if (method) frameless_callers(fps[i] + 16, shape, i + 1 < walked ? fps[i + 1] : stack_hi);
  }
  bt.count = n;
  for (uint32_t i = 0; i < n / 2; ++i) std::swap(inner[i], inner[n - 1 - i]);  // the file's order: outermost first
  std::copy(inner, inner + n, bt.frames);
  return &bt;
}

// On-stack replacement in a backtrace (the samples' unwinder does the same: sample_capture.h's
// set_replaced_frames): the record at `fp` belongs to an OSR body when the return address it holds
// (`ip`) lies in another body of the method of the frame before it (the one it returned into): a
// pseudo return address into the tier-0 body, and the record links past the tier-0 frame's own. That
// record is the highest slot between the two records holding the same saved frame pointer
// (`caller_fp`) with an address of code above it: its return address replaces the pseudo one (the
// caller's method, or none when the caller is native code: the pseudo frame is dropped). The tier-0
// frame lies at a fixed distance above the OSR frame, so the distance found is kept per pseudo return
// address (osr_records_) and checked, not searched again, the next time (the search read 16% of the
// agent's time on an allocating OSR loop).
void ClrRuntime::osr_caller(uint64_t fp, uint64_t caller_fp, uint64_t lowest_fp, uint64_t& ip, uint64_t& method) {
  const uint64_t lowest = fp + 16;
  if (caller_fp < lowest + 16) return;
  auto take = [&](uint64_t x) {
    const uint64_t* slot = reinterpret_cast<const uint64_t*>(x);
    if (slot[0] != caller_fp || !slot[1]) return false;
    const uint64_t m = code_map_.find(slot[1] - 1);
    // A managed caller replaces the pseudo frame; a native one (Main's caller) removes it. A stack
    // address is not a return address.
    if (!m && slot[1] >= lowest_fp && slot[1] <= caller_fp + (uint64_t{1} << 20)) return false;
    ip = slot[1] - 1;
    method = m;
    return true;
  };
  const uint64_t key = HiddenFrames::key(&ip, 1);
  const int64_t learned = osr_records_.lookup(key);
  const uint64_t top = (std::min(caller_fp, lowest + 8192) - 16) & ~uint64_t{7};
  if (learned >= 0 && fp + static_cast<uint64_t>(learned) >= lowest && fp + static_cast<uint64_t>(learned) <= top &&
      take(fp + static_cast<uint64_t>(learned)))
    return;
  for (uint64_t x = top; x >= lowest; x -= 8)
    if (take(x)) {
      osr_records_.learn(key, static_cast<int64_t>(x - fp));
      return;
    }
}

// The allocating method when the chain skipped it (HiddenFrames, code_map.h): its optimised code
// called one of the runtime's allocation helpers, which make no frame record (35-100% of allocations
// in tier-1 code lost their innermost frame, or were charged to the caller). The native return
// addresses below the chain's first managed frame are looked up: a learned chain says where the hidden
// return address is (read, and kept if it is in JIT code) or that there is none. An unknown one asks
// the runtime's own walk once (DoStackSnapshot, stopped at the first managed frame: exact, about
// 1.5 us) and learns from it where that frame's return address sits. Returns the hidden method, 0: none;
// `hidden_at`: where its return address was found (0: not known).
uint64_t ClrRuntime::hidden_frame(const uint64_t* ips, const uint64_t* fps, const uint64_t* methods, unsigned walked,
                                  uint64_t stack_hi, uint64_t& hidden_ip, uint64_t& hidden_at) {
  hidden_ip = 0;
  hidden_at = 0;
  unsigned first_managed = walked;
  for (unsigned i = 0; i < walked; ++i)
    if (methods[i]) {
      first_managed = i;
      break;
    }
  auto gap_end = [&](unsigned i) { return i + 1 < walked ? fps[i + 1] : std::min(stack_hi, fps[i] + 16 + 1024); };
  const uint64_t key = HiddenFrames::key(ips, first_managed);
  const int64_t where = hidden_.lookup(key);
  if (where == HiddenFrames::kNone) return 0;
  if (where >= 0) {
    const auto record = static_cast<unsigned>(where >> 32);
    const uint64_t at = record < first_managed ? fps[record] + 16 + static_cast<uint32_t>(where) : 0;
    if (at && at + 8 <= gap_end(record)) {
      const uint64_t ret = *reinterpret_cast<const uint64_t*>(at);
      if (const uint64_t m = code_map_.find(ret - 1)) {
        hidden_ip = ret - 1;
        hidden_at = at;
        return m;
      }
    }
  }
  // Not learned, or the learned place does not hold a return address into JIT code now.
  if (!info_->table->DoStackSnapshot) return 0;
  Innermost first{};
  (void)info_->table->DoStackSnapshot(info_, 0, reinterpret_cast<void*>(&ClrRuntime::innermost_frame), 0, &first,
                                      nullptr, 0);
  if (!first.function) return 0;
  if (first_managed < walked && ips[first_managed] + 1 == first.ip) {
    hidden_.learn(key, HiddenFrames::kNone);
    return 0;
  }
  // Where the runtime's innermost frame's return address sits: between two records below the first
  // managed one (or above the last record when the chain has no managed frame).
  uint64_t found = 0;
  for (unsigned i = 0; i < first_managed && !found; ++i) {
    const uint64_t lo = fps[i] + 16, hi = gap_end(i);
    for (uint64_t at = lo; at + 8 <= hi && at - lo < 1024; at += 8) {
      if (*reinterpret_cast<const uint64_t*>(at) != first.ip) continue;
      hidden_.learn(key, HiddenFrames::at(i, static_cast<uint32_t>(at - lo)));
      found = at;
      break;
    }
  }
  uint64_t m = code_map_.find(first.ip - 1);
  if (!m) {
    ensure_function(first.function);
    m = code_map_.find(first.ip - 1);
  }
  if (m) hidden_ip = first.ip - 1, hidden_at = found;
  return m;
}

// DoStackSnapshot's callback: the first managed frame (function and its IP), then stop.
HRESULT ClrRuntime::innermost_frame(FunctionID function, UINT_PTR ip, COR_PRF_FRAME_INFO, ULONG32, BYTE*, void* data) {
  if (!function) return kS_OK;  // a run of native frames: go on to the first managed one
  auto* first = static_cast<Innermost*>(data);
  first->function = function;
  first->ip = ip;
  return kS_FALSE;
}

void ClrRuntime::take_new_counters(std::vector<runtime::Counter>& out) {
  if (counters_given_) return;
  counters_given_ = true;
  struct Spec {
    CounterId id;
    const char* name;
    uint64_t unit, variance;
  };
  static constexpr Spec kSpecs[] = {
      {kGen0, "dotnet.gc.collections.gen0", COUNTER_UNIT_COUNT, COUNTER_VARIANCE_MONOTONIC},
      {kGen1, "dotnet.gc.collections.gen1", COUNTER_UNIT_COUNT, COUNTER_VARIANCE_MONOTONIC},
      {kGen2, "dotnet.gc.collections.gen2", COUNTER_UNIT_COUNT, COUNTER_VARIANCE_MONOTONIC},
      {kPauseNs, "dotnet.gc.pause.time (ns)", COUNTER_UNIT_RAW, COUNTER_VARIANCE_MONOTONIC},
      {kJitted, "dotnet.jit.compiled_methods", COUNTER_UNIT_COUNT, COUNTER_VARIANCE_MONOTONIC},
      {kExceptions, "dotnet.exceptions", COUNTER_UNIT_COUNT, COUNTER_VARIANCE_MONOTONIC},
      {kHeapBytes, "dotnet.gc.heap.size", COUNTER_UNIT_BYTES, COUNTER_VARIANCE_VARIABLE},
      {kThreads, "dotnet.thread.count", COUNTER_UNIT_COUNT, COUNTER_VARIANCE_VARIABLE},
      {kContentions, "dotnet.monitor.lock_contentions", COUNTER_UNIT_COUNT, COUNTER_VARIANCE_MONOTONIC},
  };
  for (const Spec& s : kSpecs) {
    // Lock contentions are counted from the contention events: only when `monitor` started the session.
    if (s.id == kContentions && !monitor_at_start_) continue;
    runtime::Counter c;
    c.handle = &counts_[s.id];
    c.desc.section = COUNTER_SECTION_PERFCOUNTERS;
    c.desc.section_name = "System.Runtime";
    c.desc.name = s.name;
    c.desc.type = COUNTER_ULONG;
    c.desc.unit = s.unit;
    c.desc.variance = s.variance;
    c.size = 8;
    out.push_back(std::move(c));
  }
}

bool ClrRuntime::read_counter(const runtime::Counter& counter, uint64_t& bits) {
  for (const auto& c : counts_)
    if (counter.handle == &c) {
      bits = c.load(std::memory_order_relaxed);
      return true;
    }
  return false;
}

// The runtime's Shutdown (a return from Main, Environment.Exit): `heapshot-on-shutdown` takes its
// heapshot here, from our thread while this one waits (the runtime refuses ForceGC inside a callback;
// the calling thread is in preemptive mode, so the collection can stop the world around it).
void ClrRuntime::runtime_shutdown() {
  if (active()) heapshots_.take_final("runtime shutdown", kFinalHeapshotStallMs, config_.verbose);
  heapshots_.stop();
  if (env_.on_shutdown_begin) env_.on_shutdown_begin();
  if (env_.on_shutdown_end) env_.on_shutdown_end();
}

}  // namespace mlpd::coreclr

// Test support: every number, name and id a Profile (reader/profile) holds, as one string, so that two
// builds of one file can be compared whole (the parallel build against the one-thread build: the unit
// test profile_parallel_test.cpp and the fuzz target profile_fuzz). Header-only: the fuzz target
// compiles it with its own instrumentation.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "mlpd/profile.h"

namespace mlpd::test {

inline std::string profile_fingerprint(const profile::Profile& p) {
  using namespace mlpd::profile;
  std::string s;
  auto num = [&s](uint64_t v) {
    s += std::to_string(v);
    s += ' ';
  };
  auto dbl = [&](double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    num(bits);
  };
  auto str = [&](const std::string& t) {
    num(t.size());
    s += t;
    s += ' ';
  };
  s += "hdr ";
  num(p.header_ok());
  num(p.header().pid);
  str(p.header().args);
  str(p.program());
  const DecodeSummary& d = p.summary();
  num(d.header_ok), num(d.buffers), num(d.events), num(d.bytes), num(d.problems), num(d.truncated);
  s += "\nproblems ";
  num(p.problem_count());
  for (const Problem& pr : p.problems()) num(pr.offset), num(static_cast<uint64_t>(pr.buffer)), str(pr.message);
  s += "\ntimes ";
  num(p.window_from()), num(p.window_to()), num(p.first_time()), num(p.last_time());
  s += "\nframes ";
  for (const Frame& f : p.frames()) num(static_cast<uint64_t>(f.kind)), num(f.address), str(f.name), str(f.module);
  s += "\nnodes ";
  for (size_t n = 0; n < p.nodes().size(); ++n) {
    const Node& nd = p.nodes()[n];
    num(nd.parent), num(nd.frame), num(nd.thread), num(nd.depth);
    const CallStat c = p.calls(static_cast<NodeId>(n));
    num(c.calls), num(c.self_ns), num(c.total_ns);
    for (size_t w = 0; w < kWhatCount; ++w) num(p.weight(static_cast<What>(w), static_cast<NodeId>(n)));
    s += '\n';
  }
  s += "whats ";
  for (size_t w = 0; w < kWhatCount; ++w) num(p.has(static_cast<What>(w))), num(p.total(static_cast<What>(w)));
  s += "\nthreads ";
  for (const ThreadInfo& t : p.threads())
    num(t.id), str(t.name), num(t.first_time), num(t.last_time), num(t.started), num(t.ended), num(t.start_time),
        num(t.end_time);
  s += "\nmethods ";
  for (const MethodStat& m : p.methods())
    num(m.samples_self), num(m.samples_total), num(m.calls), num(m.self_ns), num(m.total_ns), num(m.alloc_objects),
        num(m.alloc_bytes), num(m.throws), num(m.contentions), num(m.jit_code_bytes);
  s += "\ntotals ";
  num(p.sample_hits()), num(p.call_count()), num(p.alloc_objects()), num(p.alloc_bytes()), num(p.throws());
  num(p.monitor_contentions()), num(p.monitor_done()), num(p.monitor_fails()), num(p.monitor_wait_ns());
  num(p.jit_methods()), num(p.jit_helpers()), num(p.jit_code_bytes()), num(p.unmatched_leaves());
  num(p.unclosed_calls()), num(p.clauses()), num(p.gc_resizes()), num(p.alloc_sample_interval());
  num(p.alloc_samples()), num(p.pauses_recorded());
  s += "\ntypes ";
  for (const TypeStat& t : p.alloc_types()) str(t.name), num(t.count), num(t.bytes);
  s += "| ";
  for (const TypeStat& t : p.exception_types()) str(t.name), num(t.count), num(t.bytes);
  s += "\ngc ";
  for (const GcPause& g : p.gc_pauses()) num(g.start), num(g.end), num(g.generation), num(g.thread);
  for (uint64_t c : p.gc_collections()) num(c);
  s += "\ncounters ";
  for (const CounterInfo& c : p.counters())
    num(c.index), str(c.name), num(c.section), num(c.type), num(c.unit), num(c.variance), num(c.samples), dbl(c.last),
        str(c.last_string), num(c.is_string);
  s += "\nheapshots ";
  for (const HeapshotInfo& h : p.heapshots()) num(h.start), num(h.end), num(h.objects), num(h.bytes), num(h.thread);
  s += "\nrecorded ";
  for (const RecordedInterval& r : p.recorded_intervals()) num(r.start), num(r.end);
  s += '\n';
  return s;
}

}  // namespace mlpd::test

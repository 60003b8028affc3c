// One obvious hot method for perf (tests/integration/agent/test_perf.py): PerfHot.Spin burns the CPU
// for the given milliseconds of CPU time (default 1500) in JIT'd code; everything else is short.
// With the argument `domains`, the hot code is DomainWork.Hot, JIT'd in an AppDomain created after
// another one was unloaded: Hot's code lands on addresses where the unloaded domain's code was, and
// perf must not blame that code for Hot's samples.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

// Run in their own AppDomains (DoCallBack): ColdEntry JITs and runs Cold briefly, HotEntry JITs Hot
// and spins in it. In a domain created after the cold one was unloaded, Hot's code can land where
// the unloaded domain's code was.
static class DomainWork {
  [MethodImpl(MethodImplOptions.NoInlining)]
  static long Cold(long ms) { return PerfHot.Loop(ms); }
  [MethodImpl(MethodImplOptions.NoInlining)]
  static long Hot(long ms) { return PerfHot.Loop(ms); }
  public static void ColdEntry() { Cold(10); }
  public static void HotEntry() { Hot(long.Parse((string)AppDomain.CurrentDomain.GetData("ms"))); }
}

static class PerfHot {
  // Spin's loop, for the domain methods (inlined into them: the whole loop is in their code).
  [MethodImpl(MethodImplOptions.AggressiveInlining)]
  public static long Loop(long ms) {
    // CPU time, not wall time: on a loaded machine the hot method still gets its share of the samples.
    var self = Process.GetCurrentProcess();
    var end = self.TotalProcessorTime.TotalMilliseconds + ms;
    long x = 1;
    while (self.TotalProcessorTime.TotalMilliseconds < end) {
      self.Refresh();
      for (int i = 0; i < 100000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
    }
    return x;
  }

  static void InDomain(bool hot, long ms) {
    var d = AppDomain.CreateDomain(hot ? "hot" : "cold");
    d.SetData("ms", ms.ToString());
    d.DoCallBack(hot ? new CrossAppDomainDelegate(DomainWork.HotEntry) : new CrossAppDomainDelegate(DomainWork.ColdEntry));
    AppDomain.Unload(d);
  }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static long Spin(long ms) {
    // CPU time, not wall time: on a loaded machine the hot method still gets its share of the samples.
    var self = Process.GetCurrentProcess();
    var end = self.TotalProcessorTime.TotalMilliseconds + ms;
    long x = 1;
    while (self.TotalProcessorTime.TotalMilliseconds < end) {
      self.Refresh();
      for (int i = 0; i < 100000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
    }
    return x;
  }

  static int Main(string[] args) {
    long ms = 1500;
    bool domains = false;
    foreach (var a in args) {
      if (a == "domains") domains = true;
      else ms = long.Parse(a);
    }
    long r;
    if (domains) {
      InDomain(false, 10);
      InDomain(true, ms);
      r = 1;
    } else {
      r = Spin(ms);
    }
    Console.WriteLine("done {0}", r & 1);
    return 0;
  }
}

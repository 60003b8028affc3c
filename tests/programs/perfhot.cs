// One obvious hot method for perf (tests/integration/agent/test_perf.py): PerfHot.Spin burns the CPU
// for the given milliseconds (default 1500) in JIT'd code; everything else is short.
// With the argument `domains`, the hot code is DomainWork.Hot, JIT'd in an AppDomain created after
// another one was unloaded: Hot's code lands on addresses where the unloaded domain's code was, and
// perf must not blame that code for Hot's samples.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

// Runs in its own AppDomain: `cold` JITs and runs Cold briefly, `hot` JITs Hot and spins in it. In a
// domain created after the cold one was unloaded, Hot's code can land where Cold's was.
public class DomainWork : MarshalByRefObject {
  [MethodImpl(MethodImplOptions.NoInlining)]
  static long Cold(long ms) { return PerfHot.Loop(ms); }
  [MethodImpl(MethodImplOptions.NoInlining)]
  static long Hot(long ms) { return PerfHot.Loop(ms); }
  public long Run(bool hot, long ms) { return hot ? Hot(ms) : Cold(ms); }
  public long Address(bool hot) {
    var m = typeof(DomainWork).GetMethod(hot ? "Hot" : "Cold", System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.NonPublic);
    return (long)m.MethodHandle.GetFunctionPointer();
  }
}

static class PerfHot {
  // Spin's loop, for the domain methods (inlined into them: the whole loop is in their code).
  [MethodImpl(MethodImplOptions.AggressiveInlining)]
  public static long Loop(long ms) {
    var sw = Stopwatch.StartNew();
    long x = 1;
    while (sw.ElapsedMilliseconds < ms) {
      for (int i = 0; i < 100000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
    }
    return x;
  }

  static long InDomain(bool hot, long ms) {
    var d = AppDomain.CreateDomain(hot ? "hot" : "cold");
    var w = (DomainWork)d.CreateInstanceAndUnwrap(typeof(DomainWork).Assembly.FullName, "DomainWork");
    long r = w.Run(hot, ms);
    Console.WriteLine("{0} at 0x{1:x}", hot ? "Hot" : "Cold", w.Address(hot));
    AppDomain.Unload(d);
    return r;
  }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static long Spin(long ms) {
    var sw = Stopwatch.StartNew();
    long x = 1;
    while (sw.ElapsedMilliseconds < ms) {
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
      r = InDomain(false, 10) + InDomain(true, ms);
    } else {
      r = Spin(ms);
    }
    Console.WriteLine("done {0}", r & 1);
    return 0;
  }
}

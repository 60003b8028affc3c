// Dies of an unhandled exception in the way argv[0] says, after some known work (200 `Crumb`
// allocations, and a throw), for the flight recorder's "dump before the process dies" tests:
//   main        Main lets it escape (no handler)
//   handler     Main lets it escape while an AppDomain.UnhandledException handler exists (it prints)
//   thread      a second thread dies of it while Main waits (the runtime ends the process)
//   pool        a thread-pool work item dies of it while Main waits
//   failfast    the UnhandledException handler calls Environment.FailFast (abort: no exit handlers)
//   failfast-trigger  the same, but the handler first calls Mono.Profiler.Log.LogProfiler.TriggerHeapshot()
//               (through reflection: no reference to Mono.Profiler.Log.dll), which in the flight
//               recorder's ring mode returns once the ring is dumped
// Prints "working" then, from the handler, "handler saw ..." (handler and failfast modes).
using System;
using System.Threading;

class Crumb { public int Value; }

static class UnhandledModes {
  static Crumb[] keep = new Crumb[200];

  static void Fail(int depth) {
    if (depth == 0) throw new InvalidOperationException("deliberately unhandled");
    Fail(depth - 1);
  }

  static int Main(string[] args) {
    string mode = args.Length > 0 ? args[0] : "main";
    for (int i = 0; i < keep.Length; i++) keep[i] = new Crumb { Value = i };
    Console.WriteLine("working");
    Console.Out.Flush();
    if (mode == "handler" || mode.StartsWith("failfast")) {
      AppDomain.CurrentDomain.UnhandledException += (sender, e) => {
        Console.WriteLine("handler saw " + e.ExceptionObject.GetType().Name);
        Console.Out.Flush();
        if (mode == "failfast-trigger") {
          var lp = Type.GetType("Mono.Profiler.Log.LogProfiler, Mono.Profiler.Log, Version=4.0.0.0, Culture=neutral, PublicKeyToken=0738eb9f132ed756", true);
          if ((bool)lp.GetProperty("IsAttached").GetValue(null, null)) lp.GetMethod("TriggerHeapshot").Invoke(null, null);
        }
        if (mode.StartsWith("failfast")) Environment.FailFast("fail fast from the handler");
      };
    }
    switch (mode) {
      case "thread": {
        var t = new Thread(() => Fail(3));
        t.Start();
        t.Join();
        Thread.Sleep(5000);
        break;
      }
      case "pool":
        ThreadPool.QueueUserWorkItem(_ => Fail(3));
        Thread.Sleep(5000);
        break;
      default:
        Fail(3);
        break;
    }
    Console.WriteLine("not reached");
    return 0;
  }
}

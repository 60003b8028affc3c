// Allocates exactly 100 `Quiet` objects, says "ready", then sleeps (argv[0] ms, default 3000) without
// any further event: the profiler must get those allocations into the file while it sleeps.
using System;
using System.Threading;

class Quiet { public int Value; }

static class QuietProgram {
  static Quiet[] keep = new Quiet[100];

  static void Main(string[] args) {
    int sleep = args.Length > 0 ? int.Parse(args[0]) : 3000;
    for (int i = 0; i < keep.Length; i++) keep[i] = new Quiet { Value = i };
    Console.WriteLine("ready");
    Console.Out.Flush();
    Thread.Sleep(sleep);
    Console.WriteLine("done");
  }
}

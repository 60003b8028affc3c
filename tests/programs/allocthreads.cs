// Four threads allocating together (issue 22, item 3): each allocates N small arrays, keeping a few
// alive so that collections happen all the time while the others allocate.
using System;
using System.Threading;

class AllocThreads {
  static object[] keep = new object[4 * 64];
  static void Work(int id, int n) {
    for (int i = 0; i < n; ++i) {
      var a = new int[4];
      a[0] = i;
      if ((i & 1023) == 0) keep[id * 64 + ((i >> 10) & 63)] = a;
    }
  }
  static int Main(string[] args) {
    int threads = args.Length > 0 ? int.Parse(args[0]) : 4;
    int n = args.Length > 1 ? int.Parse(args[1]) : 1500000;
    var ts = new Thread[threads];
    using (var go = new ManualResetEvent(false)) {
      for (int t = 0; t < threads; ++t) {
        int id = t;
        ts[t] = new Thread(() => { go.WaitOne(); Work(id, n); });
        ts[t].Start();
      }
      go.Set();
      foreach (var t in ts) t.Join();
    }
    Console.WriteLine("allocated " + (threads * n));
    return 0;
  }
}

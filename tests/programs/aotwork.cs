// A threaded program whose hot path runs through mscorlib's code (List<T>, Dictionary, LINQ, string
// building and formatting, sorting): with an AOT-compiled mscorlib (Debian's aot-cache) most of its
// CPU is in AOT code, which sends no jit_done (test_aot.py, issue 33).
//
//   aotwork [seconds] [threads]
// Each worker calls Handle() in a loop for `seconds` of wall time; Handle's frames are the request
// path whose inclusive share test_aot.py compares with the -O=-aot run. Prints "requests N" at the end.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;
using System.Threading;

class AotWork {
  static long requests;

  // The "request handler": everything a request does happens below this frame.
  static int Handle(int seed) {
    var items = new List<string>(64);
    for (int i = 0; i < 64; i++) items.Add(string.Format("item-{0}-{1}", seed, (i * 7919) % 1000));
    var counts = new Dictionary<string, int>();
    foreach (var s in items) {
      var key = s.Substring(0, s.LastIndexOf('-'));
      int n;
      counts.TryGetValue(key, out n);
      counts[key] = n + 1;
    }
    items.Sort(StringComparer.Ordinal);
    var sb = new StringBuilder();
    foreach (var s in items.Where(x => x.EndsWith("7") || x.Contains("3")).OrderBy(x => x.Length).Take(20)) sb.Append(s).Append(',');
    var joined = string.Join(";", counts.Keys.ToArray());
    return sb.ToString().GetHashCode() ^ joined.Length ^ items.Select(x => x.Length).Sum();
  }

  static void Worker(object o) {
    var end = (DateTime)o;
    int seed = Thread.CurrentThread.ManagedThreadId, acc = 0;
    long n = 0;
    while (DateTime.UtcNow < end) {
      acc ^= Handle(seed++);
      n++;
    }
    Interlocked.Add(ref requests, n);
    if (acc == 42) Console.WriteLine("unlikely");
  }

  static int Main(string[] args) {
    double seconds = args.Length > 0 ? double.Parse(args[0], System.Globalization.CultureInfo.InvariantCulture) : 3;
    int threads = args.Length > 1 ? int.Parse(args[1]) : 2;
    var end = DateTime.UtcNow.AddSeconds(seconds);
    var ts = new List<Thread>();
    for (int i = 0; i < threads; i++) {
      var t = new Thread(Worker);
      t.Name = "req-" + i;
      t.Start(end);
      ts.Add(t);
    }
    foreach (var t in ts) t.Join();
    Console.WriteLine("requests " + requests);
    return 0;
  }
}

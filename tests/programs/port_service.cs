// A program that runs until told: the command-port tests (test_port.py) control its life over stdin.
// At start it builds a known live graph (N PortLive objects, default 100000, kept to the end) and
// prints "ready". Then one command per stdin line:
//   alloc K   allocate K PortMarker objects (kept alive), print "allocated K"
//   gc        GC.Collect(), print "collected"
//   exit C    print "live N kept M" and exit with status C
// EOF on stdin exits with status 3. Output is deterministic.
using System;
using System.Collections.Generic;

class PortMarker {
    public int Value;
    public PortMarker(int v) { Value = v; }
}

class PortLive {
    public long A;
}

static class PortService {
    static readonly List<PortLive> live = new List<PortLive>();
    static readonly List<PortMarker> kept = new List<PortMarker>();

    static int Main(string[] args) {
        int n = args.Length > 0 ? int.Parse(args[0]) : 100000;
        for (int i = 0; i < n; i++) live.Add(new PortLive { A = i });
        Console.WriteLine("ready");
        Console.Out.Flush();
        string line;
        while ((line = Console.ReadLine()) != null) {
            string[] parts = line.Split(' ');
            if (parts[0] == "alloc") {
                int k = int.Parse(parts[1]);
                for (int i = 0; i < k; i++) kept.Add(new PortMarker(i));
                Console.WriteLine("allocated " + k);
            } else if (parts[0] == "gc") {
                GC.Collect();
                Console.WriteLine("collected");
            } else if (parts[0] == "exit") {
                Console.WriteLine("live " + live.Count + " kept " + kept.Count);
                return int.Parse(parts[1]);
            } else {
                Console.WriteLine("unknown " + parts[0]);
            }
            Console.Out.Flush();
        }
        return 3;
    }
}

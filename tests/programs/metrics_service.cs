// The metrics tests (tests/integration/agent/test_metrics.py): a program that runs until told, so
// that a Prometheus server can scrape it while it is in a known state. One command per stdin line:
//   work G N E   G full collections (GC.Collect()), N nursery collections (GC.Collect(0)), E
//                exceptions thrown and caught; prints "counts gen0=A gen1=B thrown=T jitted" with
//                GC.CollectionCount(0) and (1) and the exceptions this program threw so far
//   exit C       prints "bye" and exits with status C
// EOF on stdin exits with status 3. Nothing else runs: the counts only change by these commands.
using System;

static class MetricsService {
    static long thrown;

    static void Throw(int i) {
        try {
            throw new InvalidOperationException("counted " + i);
        } catch (InvalidOperationException) {
            thrown++;
        }
    }

    static int Main(string[] args) {
        Console.WriteLine("ready");
        Console.Out.Flush();
        string line;
        while ((line = Console.ReadLine()) != null) {
            string[] parts = line.Split(' ');
            if (parts[0] == "work") {
                int g = int.Parse(parts[1]), n = int.Parse(parts[2]), e = int.Parse(parts[3]);
                for (int i = 0; i < g; i++) GC.Collect();
                for (int i = 0; i < n; i++) GC.Collect(0);
                for (int i = 0; i < e; i++) Throw(i);
                Console.WriteLine("counts gen0=" + GC.CollectionCount(0) + " gen1=" + GC.CollectionCount(1) +
                                  " thrown=" + thrown);
            } else if (parts[0] == "exit") {
                Console.WriteLine("bye");
                return int.Parse(parts[1]);
            } else {
                Console.WriteLine("unknown " + parts[0]);
            }
            Console.Out.Flush();
        }
        return 3;
    }
}

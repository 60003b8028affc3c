// heapshot_live.cs - a known live graph for heapshot tests: exactly 100000 LiveNode objects held in
// a static array (each pointing to the next, the last to the first), plus garbage: 50000 more LiveNode
// objects dropped before any heapshot can see them alive, and byte arrays dropped at once.
// Compiled with -r:Mono.Profiler.Log.dll (for `trigger`).
//
// Usage: heapshot_live.exe [collect N | trigger N | idle]
//   collect N: N forced major collections (GC.Collect), garbage between them
//   trigger N: N calls of LogProfiler.TriggerHeapshot(), garbage between them (GC.Collect() instead
//              when no profiler is attached; the runtime then prints its missing-icall warning)
//   idle:      neither (heapshot-on-shutdown)
//   churn N:   N allocations of Kept objects (200-byte payload), at most 150000 kept at a time: the
//              major heap fills, so the runtime starts major collections itself (concurrent ones
//              with major=marksweep-conc)
// Output: "live: 100000", "checksum: ..." and "done"; exit status 3 (checked by the tests: a
// profiler must leave it unchanged).
using System;
using System.Runtime.CompilerServices;
using Mono.Profiler.Log;

sealed class Kept
{
    public byte[] Payload;
}

sealed class LiveNode
{
    public LiveNode Next;
    public int Id;
}

static class HeapshotLiveProgram
{
    const int Live = 100000;
    static LiveNode[] nodes;
    static long sink;

    static void Garbage(int rounds)
    {
        for (int i = 0; i < rounds; i++) {
            byte[] b = new byte[256];
            sink += b.Length;
        }
    }

    static void Build()
    {
        nodes = new LiveNode[Live];
        LiveNode[] dead = new LiveNode[Live / 2];
        for (int i = 0; i < Live; i++) {
            nodes[i] = new LiveNode { Id = i };
            if (i % 2 == 0) dead[i / 2] = new LiveNode { Id = -i };
        }
        for (int i = 0; i < Live; i++) nodes[i].Next = nodes[(i + 1) % Live];
        dead = null;
    }

    static void Churn(int n)
    {
        var kept = new System.Collections.Generic.List<Kept>();
        for (int i = 0; i < n; i++) {
            kept.Add(new Kept { Payload = new byte[200] });
            if (kept.Count > 150000) kept.RemoveRange(0, 50000);
        }
        sink += kept.Count;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Trigger() { LogProfiler.TriggerHeapshot(); }

    static int Main(string[] args)
    {
        string mode = args.Length > 0 ? args[0] : "collect";
        int n = args.Length > 1 ? int.Parse(args[1]) : 3;
        Build();
        Garbage(20000);
        if (mode == "churn") Churn(n);
        for (int i = 0; i < n && (mode == "collect" || mode == "trigger"); i++) {
            if (mode == "trigger" && LogProfiler.IsAttached)
                Trigger();
            else
                GC.Collect();
            Garbage(20000);
        }
        long sum = 0;
        foreach (LiveNode x in nodes) sum += x.Next.Id;
        Console.WriteLine("live: " + nodes.Length);
        Console.WriteLine("checksum: " + sum);
        Console.WriteLine("done");
        return 3;
    }
}

// callcounts.cs - the calls a `calls` profile must record, as Mono's own profiler records them
// (tests/integration/agent/test_callcounts.py). Argument "threads": four threads calling small
// methods in loops while allocating (collections stop them often); "alloc": one thread allocating
// objects, boxed values, arrays and strings (string concatenation, StringBuilder, Substring).
using System;
using System.Collections.Generic;
using System.Text;
using System.Threading;

class Node
{
    public Node Next;
    public int Value;
    public Node(int v, Node next) { Value = v; Next = next; }
}

static class CallCounts
{
    static int Square(int x) { return x * x; }

    static long Worker(int seed)
    {
        long s = 0;
        Node head = null;
        for (int i = 0; i < 20000; i++) {
            s += Square(i + seed);
            head = new Node(i, (i & 63) == 0 ? null : head);
            var a = new byte[64 + (i & 127)];
            s += a.Length + head.Value;
        }
        return s;
    }

    static long Threads()
    {
        var results = new long[4];
        var threads = new Thread[4];
        for (int t = 0; t < threads.Length; t++) {
            int idx = t;
            threads[t] = new Thread(() => { results[idx] = Worker(idx); });
        }
        foreach (var th in threads) th.Start();
        foreach (var th in threads) th.Join();
        long sum = 0;
        foreach (long r in results) sum += r;
        return sum;
    }

    static string Word(int i) { return "w" + i.ToString(); }

    static long Alloc()
    {
        long s = 0;
        var list = new List<object>();
        for (int i = 0; i < 20000; i++) {
            string w = Word(i);
            var sb = new StringBuilder();
            sb.Append(w).Append('-').Append(i & 7);
            string t = sb.ToString();
            s += t.Substring(1).Length + string.Concat(w, t).Length;
            object boxed = i;
            list.Add(boxed);
            if (list.Count > 1000) list.Clear();
            var arr = new int[i & 31];
            s += arr.Length + (int)boxed;
        }
        return s;
    }

    static int Main(string[] args)
    {
        string mode = args.Length > 0 ? args[0] : "threads";
        long r = mode == "alloc" ? Alloc() : Threads();
        Console.WriteLine(mode + " " + r);
        return 0;
    }
}

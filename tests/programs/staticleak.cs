// staticleak.cs - a static leak touched by request threads, for `mlpd heapshots --dominators/--paths/
// --suspects` (tests/integration/cli/test_retained.py, issue 33 item 2). A server-shaped program: a
// static List<Item> (StaticLeakProgram.Items) grows every round; four request threads (req-0..req-3)
// add to it and iterate it. At each heapshot one request thread, a different one each round, holds the
// list's backing array in a local (a transient copy of the static's reference, as a request that is in
// the middle of List.Add or of indexing the list has one in a register or stack slot), and another is
// in the middle of a foreach over the list. Beside it a small, steady growth held by another static
// (StaticLeakProgram.Timers, a Dictionary<int, TimerEntry>: what a timer wheel keeps) that is not the leak.
//
// `staticleak.exe [ROUNDS]` (default 6): each round the request threads add 2000 Items (each with a
// 64-byte payload) and the timers grow by 20 entries; then the round's holder takes the array, the
// main thread forces a full collection (a heapshot under `heapshot`) and lets the threads go on.
// Prints "items N rounds R" at the end.
using System;
using System.Collections.Generic;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Threading;

sealed class Item { public byte[] Payload = new byte[64]; public int Key; }
sealed class TimerEntry { public long Due; public int Id; }

static class StaticLeakProgram
{
    static List<Item> Items = new List<Item>();
    static Dictionary<int, TimerEntry> Timers = new Dictionary<int, TimerEntry>();
    static readonly object Gate = new object();
    static readonly FieldInfo ItemsArray =
        typeof(List<Item>).GetField("_items", BindingFlags.NonPublic | BindingFlags.Instance) ??
        typeof(List<Item>).GetField("items", BindingFlags.NonPublic | BindingFlags.Instance);

    const int Threads = 4;
    const int ItemsPerRound = 2000;
    static int round = -1;
    static int holder = -1, iterator = -1;
    static readonly Barrier Added = new Barrier(Threads + 1);  // every thread added its round's items
    static readonly Barrier Parked = new Barrier(3);           // holder and iterator are in place
    static readonly ManualResetEvent[] Go = new ManualResetEvent[Threads];
    static readonly ManualResetEvent Taken = new ManualResetEvent(false);  // the heapshot was taken
    static readonly Barrier Finished = new Barrier(3);         // holder and iterator are done
    static long sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AddItems(int n)
    {
        for (int i = 0; i < n; i++)
        {
            var item = new Item();
            lock (Gate) { item.Key = Items.Count; Items.Add(item); }
        }
    }

    // The request that holds the backing array while the heapshot is taken.
    [MethodImpl(MethodImplOptions.NoInlining)]
    static long HoldArray()
    {
        Item[] array;
        lock (Gate) array = (Item[])ItemsArray.GetValue(Items);
        Parked.SignalAndWait();
        Taken.WaitOne();
        long sum = 0;
        for (int i = 0; i < array.Length; i += 97)
            if (array[i] != null) sum += array[i].Key;
        GC.KeepAlive(array);
        return sum;
    }

    // The request in the middle of a foreach over the list while the heapshot is taken.
    [MethodImpl(MethodImplOptions.NoInlining)]
    static long IterateList()
    {
        long sum = 0;
        bool parked = false;
        foreach (Item item in Items)  // nobody adds until the round is over
        {
            sum += item.Key;
            if (!parked)
            {
                parked = true;
                Parked.SignalAndWait();
                Taken.WaitOne();
            }
        }
        return sum;
    }

    static void Request(object o)
    {
        int me = (int)o;
        while (true)
        {
            Go[me].WaitOne();
            Go[me].Reset();
            if (Volatile.Read(ref round) < 0) return;
            AddItems(ItemsPerRound / Threads);
            Added.SignalAndWait();
            if (me == holder) { sink += HoldArray(); Finished.SignalAndWait(); }
            else if (me == iterator) { sink += IterateList(); Finished.SignalAndWait(); }
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void AddTimers(int r)
    {
        for (int i = 0; i < 20; i++) Timers[r * 20 + i] = new TimerEntry { Due = r, Id = i };
    }

    static int Main(string[] args)
    {
        int rounds = args.Length > 0 ? int.Parse(args[0]) : 6;
        if (ItemsArray == null) { Console.Error.WriteLine("List<T> has no _items field"); return 2; }
        var threads = new Thread[Threads];
        for (int i = 0; i < Threads; i++)
        {
            Go[i] = new ManualResetEvent(false);
            threads[i] = new Thread(Request) { Name = "req-" + i };
            threads[i].Start(i);
        }
        int[] holders = { 3, 1, 3, 2, 0, 1 };
        for (int r = 0; r < rounds; r++)
        {
            holder = holders[r % holders.Length];
            iterator = (holder + 2) % Threads;
            Taken.Reset();
            Volatile.Write(ref round, r);
            for (int i = 0; i < Threads; i++) Go[i].Set();
            AddTimers(r);
            Added.SignalAndWait();
            Parked.SignalAndWait();
            GC.Collect();
            Taken.Set();
            Finished.SignalAndWait();
        }
        Volatile.Write(ref round, -1);
        Taken.Set();
        for (int i = 0; i < Threads; i++) Go[i].Set();
        foreach (Thread t in threads) t.Join();
        Console.WriteLine("items " + Items.Count + " rounds " + rounds + " timers " + Timers.Count);
        return 0;
    }
}

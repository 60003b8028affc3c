// retention.cs - memory held by known holders, for `mlpd heapshots --retained/--paths/--dominators`
// (tests/integration/cli/test_retained.py). `retention.exe MODE [MODE...]` builds the leaks named,
// each of its own classes so that its retained size is the sum of their bytes in the heapshot:
//   event     a static event whose 400 handlers are methods of forgotten EventSubscriber objects,
//             each holding a SubscriberData (held by: static; the holder class: LeakHandler)
//   cache     a static List<CacheItem> of 3000 items, each with a CacheData (static; List<CacheItem>)
//   list      a linked list of 20000 ListNode objects on a local of Main (stack; ListNode)
//   handle    a HandleTarget holding a HandleData[2000] of HandleData, kept only by a normal
//             GCHandle (gc_handle; HandleTarget)
//   finalizer 500 FinalObject objects, each with a FinalData, unreachable but with finalizers; the
//             first finalizer blocks until the heapshot is taken, so the rest wait in the finalizer
//             queue (finalizer_queue; FinalObject)
//   grow      three rounds of: 200 more event handlers, 1000 more cache items, 100000 Garbage
//             objects made and dropped, a full collection (a heapshot under `heapshot`)
// Then (except for grow) two full collections: heapshots under `heapshot`.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

delegate void LeakHandler(int value);

sealed class SubscriberData { public long A, B, C, D; }
sealed class EventSubscriber
{
    public SubscriberData Data = new SubscriberData();
    public int Seen;
    public void OnChanged(int value) { Seen += value; }
}

sealed class CacheData { public long A, B, C, D, E, F; }
sealed class CacheItem { public CacheData Data = new CacheData(); public int Key; }

sealed class ListNode { public ListNode Next; public long Value; }

sealed class HandleData { public long A, B; }
sealed class HandleTarget { public HandleData[] Items; }

sealed class FinalData { public long A, B, C; }
sealed class FinalObject
{
    public static ManualResetEvent Release = new ManualResetEvent(false);
    public static int Finalized;
    public FinalData Data = new FinalData();
    ~FinalObject()
    {
        if (Interlocked.Increment(ref Finalized) == 1) Release.WaitOne();
    }
}

sealed class Garbage { public long A, B, C, D, E, F, G, H; }

static class RetentionProgram
{
    static event LeakHandler Changed;
    static List<CacheItem> cache = new List<CacheItem>();
    static GCHandle handle;
    static object sink;

    // The leaks are built in methods of their own, so that no stale reference to their objects stays
    // in Main's frame (the stack is scanned conservatively) -- except the list, which Main holds.
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Subscribe(int n)
    {
        for (int i = 0; i < n; i++) Changed += new EventSubscriber().OnChanged;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Fill(int n)
    {
        for (int i = 0; i < n; i++) cache.Add(new CacheItem { Key = cache.Count });
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static ListNode MakeList(int n)
    {
        ListNode head = null;
        for (int i = 0; i < n; i++) head = new ListNode { Next = head, Value = i };
        return head;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeHandle(int n)
    {
        var t = new HandleTarget { Items = new HandleData[n] };
        for (int i = 0; i < t.Items.Length; i++) t.Items[i] = new HandleData();
        handle = GCHandle.Alloc(t);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeFinalizable(int n)
    {
        for (int i = 0; i < n; i++) sink = new FinalObject();
        sink = null;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void MakeGarbage()
    {
        for (int i = 0; i < 100000; i++) sink = new Garbage();
        sink = null;
    }

    static int Main(string[] args)
    {
        ListNode head = null;
        bool finalizer = false, grow = false;
        foreach (string mode in args)
        {
            switch (mode)
            {
                case "event": Subscribe(400); break;
                case "cache": Fill(3000); break;
                case "list": head = MakeList(20000); break;
                case "handle": MakeHandle(2000); break;
                case "finalizer": MakeFinalizable(500); finalizer = true; break;
                case "grow": grow = true; break;
                default: Console.Error.WriteLine("unknown mode " + mode); return 2;
            }
        }
        if (finalizer)
        {
            GC.Collect();  // the FinalObjects go to the finalizer queue; the first finalizer blocks
            while (Volatile.Read(ref FinalObject.Finalized) == 0) Thread.Sleep(10);
        }
        if (grow)
        {
            for (int round = 0; round < 3; round++)
            {
                Subscribe(200);
                Fill(1000);
                MakeGarbage();
                GC.Collect();
            }
        }
        else
        {
            GC.Collect();
            if (!finalizer) GC.WaitForPendingFinalizers();
            GC.Collect();
        }
        if (finalizer)
        {
            FinalObject.Release.Set();
            GC.WaitForPendingFinalizers();
        }
        int length = 0;
        for (ListNode n = head; n != null; n = n.Next) length++;
        GC.KeepAlive(head);
        Console.WriteLine("list " + length + ", cache " + cache.Count + ", finalized " + FinalObject.Finalized);
        return 0;
    }
}

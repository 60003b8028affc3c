// gchandles.cs - allocates and frees GC handles of every type with known counts:
// 100 Weak, 50 WeakTrackResurrection, 200 Normal, 25 Pinned; all are freed.
// (The runtime itself creates/destroys some handles too, so profiler totals
// are >= these numbers.)
using System;
using System.Runtime.InteropServices;

sealed class Target
{
    public int Id;
}

static class GCHandlesProgram
{
    static int Make(GCHandleType type, int n)
    {
        var handles = new GCHandle[n];
        for (int i = 0; i < n; i++) {
            object o = type == GCHandleType.Pinned ? (object)new byte[16] : new Target { Id = i };
            handles[i] = GCHandle.Alloc(o, type);
        }
        int alive = 0;
        for (int i = 0; i < n; i++) {
            if (handles[i].Target != null) alive++;
            handles[i].Free();
        }
        return n;
    }

    static int Main()
    {
        int w = Make(GCHandleType.Weak, 100);
        int wt = Make(GCHandleType.WeakTrackResurrection, 50);
        int nn = Make(GCHandleType.Normal, 200);
        int p = Make(GCHandleType.Pinned, 25);
        Console.WriteLine("Weak: " + w);
        Console.WriteLine("WeakTrackResurrection: " + wt);
        Console.WriteLine("Normal: " + nn);
        Console.WriteLine("Pinned: " + p);
        Console.WriteLine("total: " + (w + wt + nn + p));
        return 0;
    }
}

// heapshot.cs - keeps a known live graph: exactly 5000 Leaf objects reachable
// from a static list (each Leaf has one Twig child, 5000 Twig objects), then
// forces major collections so a `heapshot` run records heapshots.
using System;
using System.Collections.Generic;

sealed class Twig
{
    public int Id;
}

sealed class Leaf
{
    public Twig Child;
    public int Id;
}

static class HeapshotProgram
{
    static List<Leaf> leaves = new List<Leaf>();

    static int Main()
    {
        const int Count = 5000;
        for (int i = 0; i < Count; i++)
            leaves.Add(new Leaf { Id = i, Child = new Twig { Id = i } });
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
        long sum = 0;
        foreach (var l in leaves) sum += l.Id + l.Child.Id;
        Console.WriteLine("Leaf objects: " + leaves.Count);
        Console.WriteLine("Twig objects: " + Count);
        Console.WriteLine("sum: " + sum);
        return 0;
    }
}

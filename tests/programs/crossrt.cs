// One program for both runtimes (issue 35, dotnet_crossruntime): compiled once by mcs against mscorlib,
// run by `mono` and by `dotnet` (with a runtimeconfig.json beside it); its methods carry the same names
// in both files, so `mlpd diff --managed` lines them up.
using System;
using System.Collections.Generic;

namespace CrossRt
{
    public sealed class Item
    {
        public long A;
        public Item(long a) { A = a; }
    }

    public static class Work
    {
        static List<Item> kept = new List<Item>();

        public static Item Make(long i) { return new Item(i); }

        public static long Leaf(long x, int n)
        {
            for (int i = 0; i < n; i++) x += i ^ (x >> 3);
            return x;
        }

        public static int Main(string[] args)
        {
            int count = args.Length > 0 ? int.Parse(args[0]) : 10000;
            long s = 0;
            for (int i = 0; i < count; i++)
            {
                kept.Add(Make(i));
                s += Leaf(i, 40000);
            }
            Console.WriteLine("crossrt " + kept.Count + " " + (s != 42 ? "done" : "odd"));
            return 0;
        }
    }
}

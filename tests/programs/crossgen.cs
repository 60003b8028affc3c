// Generic methods and types on both runtimes (issue 35, dotnet_generics): compiled once by mcs against
// mscorlib, run by `mono` and by `dotnet` (a runtimeconfig.json beside it). Each generic method is
// instantiated over value types (one body per instantiation on both runtimes) and over a reference type
// (one shared body): the profiles name them in Mono's style under both.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;

namespace CrossGen
{
    public struct Pair<A, B>
    {
        public A First;
        public B Second;
        public Pair(A first, B second) { First = first; Second = second; }
    }

    public sealed class Box<T>
    {
        public T Value;
        public Box(T value) { Value = value; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Box<T> Make(T value) { return new Box<T>(value); }

        // CPU in a method of a generic type: n steps mixed with the value's hash.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public long Churn(int n)
        {
            long x = Value.GetHashCode();
            for (int i = 0; i < n; i++) x += i ^ (x >> 3);
            return x;
        }
    }

    public static class Gen
    {
        // CPU in a generic method.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Spin<T>(T seed, int n)
        {
            long x = seed.GetHashCode();
            for (int i = 0; i < n; i++) x += i ^ (x >> 2);
            return x;
        }

        // Allocations in a generic method: a List<T> of n copies.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static List<T> Fill<T>(T value, int n)
        {
            var list = new List<T>(n);
            for (int i = 0; i < n; i++) list.Add(value);
            return list;
        }

        public static int Main(string[] args)
        {
            int count = args.Length > 0 ? int.Parse(args[0]) : 2000;
            long s = 0;
            var kept = new List<object>();
            for (int i = 0; i < count; i++)
            {
                kept.Add(Box<int>.Make(i));
                kept.Add(Box<string>.Make("s"));
                kept.Add(Fill<double>(i, 4));
                s += Spin<int>(i, 40000);
                s += Spin<Pair<int, long>>(new Pair<int, long>(i, 2), 40000);
                s += Spin<string>("x", 40000);
                s += Box<long>.Make(i).Churn(40000);
                if (kept.Count > 30000) kept.Clear();
            }
            Console.WriteLine("crossgen " + count + " " + (s != 42 ? "done" : "odd"));
            return 0;
        }
    }
}

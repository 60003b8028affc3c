// `frameless MS`: Main -> Frameless.Run -> Round (called again and again, so it and its callees reach
// tier 1) -> Outer -> Wrap -> Work, and Round -> MakeItem. Outer, Wrap and MakeItem are so small that
// their tier-1 code makes no frame record (the JIT's "rsp based frame"): a frame-pointer walk from Work,
// or from MakeItem's allocation, skips their callers (tests/integration/dotnet/test_shapes.py: samples
// in Work keep Wrap, Outer, Round, Run and Main; every FramelessItem MakeItem allocates keeps Round).
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace MlpdTests
{
    public sealed class FramelessItem
    {
        public long Value;
    }

    public static class Frameless
    {
        static readonly FramelessItem[] Kept = new FramelessItem[1024];

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Work(long x)
        {
            for (int i = 0; i < 20_000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
            return x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Wrap(long x) => Work(x) + 1;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Outer(long x) => Wrap(x) ^ 3;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static FramelessItem MakeItem(long v) => new FramelessItem { Value = v };

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Round(long x, int n)
        {
            for (int i = 0; i < 8; i++)
            {
                x = Outer(x);
                Kept[(n + i) & 1023] = MakeItem(x);
            }
            return x;
        }

        public static int Run(int ms)
        {
            var sw = Stopwatch.StartNew();
            long x = 1;
            int n = 0;
            while (sw.ElapsedMilliseconds < ms) x = Round(x, n++ * 8);
            Console.WriteLine("frameless " + (x != 42 ? "done" : "odd"));
            return 0;
        }
    }
}

// `osr MS`: Main -> Osr.Run -> Osr.Outer -> Osr.Hot, where Hot is entered once and loops for MS
// milliseconds: its tier-0 code is replaced mid-run by an OSR body, which runs over the tier-0 frame
// (tests/integration/dotnet/test_shapes.py: every sample in Hot, and every OsrItem Hot allocates, keeps
// Outer and Main below it).
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace MlpdTests
{
    public sealed class OsrItem
    {
        public long Value;
    }

    public static class Osr
    {
        static readonly System.Collections.Generic.List<OsrItem> Kept = new System.Collections.Generic.List<OsrItem>();

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Hot(int ms)
        {
            var sw = Stopwatch.StartNew();
            long x = 1;
            while (sw.ElapsedMilliseconds < ms)
            {
                for (int i = 0; i < 1_000_000; i++) x = x * 6364136223846793005L + 1442695040888963407L;
                Kept.Add(new OsrItem { Value = x });  // allocated in the OSR body once it runs
            }
            return x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Outer(int ms) => Hot(ms) + 1;

        public static int Run(int ms)
        {
            Console.WriteLine("osr " + (Outer(ms) != 42 ? "done" : "odd"));
            return 0;
        }
    }
}

// Allocation-heavy program for alloc-sample (test_issue15.py, measurements): a deterministic mix of
// object sizes, interleaved, in BLOCKS blocks (argv[0], default 200) of 2000 AhSmall (2 longs), 500
// AhMedium (20 longs), 100 int[250] and one double[8000] each.
using System;

class AhSmall { public long A, B; }
class AhMedium {
    public long A0, A1, A2, A3, A4, A5, A6, A7, A8, A9;
    public long B0, B1, B2, B3, B4, B5, B6, B7, B8, B9;
}

static class AllocHeavy {
    static object keep;

    static void Main(string[] args) {
        int blocks = args.Length > 0 ? int.Parse(args[0]) : 200;
        long sum = 0;
        {
            for (int i = 0; i < blocks; i++) {
                for (int j = 0; j < 2000; j++) { var o = new AhSmall { A = j }; sum += o.A; keep = o; }
                for (int j = 0; j < 500; j++) { var o = new AhMedium { A0 = j }; sum += o.A0; keep = o; }
                for (int j = 0; j < 100; j++) { var a = new int[250]; a[0] = j; sum += a[0]; keep = a; }
                var d = new double[8000];
                d[1] = i;
                sum += (long)d[1];
                keep = d;
            }
        }
        Console.WriteLine("allocheavy " + sum);
    }
}

// samplestress.cs - the sampling stress program: loads and unloads native libraries (dlopen/dlclose
// through P/Invoke, calling into them between), allocates with malloc/free, and starts short-lived
// threads, in loops. Sampled at 5 kHz wall clock with `calls`, it must finish with this output.
using System;
using System.Runtime.InteropServices;
using System.Threading;

static class SampleStress
{
    [DllImport("libc.so.6")] static extern IntPtr dlopen(string file, int mode);
    [DllImport("libc.so.6")] static extern int dlclose(IntPtr handle);
    [DllImport("libc.so.6")] static extern IntPtr dlsym(IntPtr handle, string name);
    [DllImport("libc.so.6")] static extern IntPtr malloc(UIntPtr size);
    [DllImport("libc.so.6")] static extern void free(IntPtr p);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    delegate ulong Spin(ulong x, int iters);

    static readonly string[] Libraries = { "libz.so.1", "liblzma.so.5", null };

    static int Churn(int round)
    {
        int ok = 0;
        foreach (string name in Libraries) {
            string file = name ?? System.IO.Path.Combine(AppDomain.CurrentDomain.BaseDirectory, "libmlpdhot.so");
            IntPtr h = dlopen(file, 2 /* RTLD_NOW */);
            if (h == IntPtr.Zero) continue;
            if (name == null) {
                var spin = (Spin) Marshal.GetDelegateForFunctionPointer(dlsym(h, "mlpd_hot_spin"), typeof(Spin));
                spin((ulong) round + 1, 20000);
            }
            dlclose(h);
            ok++;
        }
        for (int i = 0; i < 200; i++) {
            IntPtr p = malloc((UIntPtr) (16 + (i * 37 + round) % 4000));
            Marshal.WriteByte(p, 1);
            free(p);
        }
        return ok;
    }

    static int Main(string[] args)
    {
        int rounds = args.Length > 0 ? int.Parse(args[0]) : 40;
        int loaded = 0;
        for (int r = 0; r < rounds; r++) {
            var threads = new Thread[4];
            int[] got = new int[threads.Length];
            for (int t = 0; t < threads.Length; t++) {
                int me = t;
                threads[t] = new Thread(() => { got[me] = Churn(r * 10 + me); });
                threads[t].Start();
            }
            loaded += Churn(r);
            foreach (var t in threads) t.Join();
            foreach (int g in got) loaded += g;
        }
        Console.WriteLine("stress: " + rounds + " rounds, libraries " + (loaded == rounds * 5 * 3 ? "ok" : "MISSING " + loaded));
        return 7;
    }
}

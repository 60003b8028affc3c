// Dynamic methods compiled, called and freed, round after round (issue 22, item 6): each round emits
// 8 DynamicMethods named MakeLongs_K that allocate a long[K] (K unique over the run), calls each, and
// every 8th round collects and runs the finalizers, which frees their code and their MonoMethods, so
// later ones reuse that memory. An allocation's size tells K; its backtrace must name MakeLongs_K
// (not a freed method whose code or MonoMethod was at the same address). Then a few compiled
// Expressions and a compiled Regex, freed the same way. Last, 100 int[] allocated by a method whose
// frame is over 4 KiB (BigFrame: its prologue probes the stack page by page, as a form's big
// InitializeComponent's does). argv[0] = rounds (default 300).
using System;
using System.Runtime.CompilerServices;
using System.Linq.Expressions;
using System.Reflection.Emit;
using System.Text.RegularExpressions;

struct B8 { public long a, b, c, d, e, f, g, h; }
struct B64 { public B8 a, b, c, d, e, f, g, h; }
struct B512 { public B64 a, b, c, d, e, f, g, h; }

static class DynFree {
  // Two 4 KiB locals: an 8 KiB frame, probed page by page.
  [MethodImpl(MethodImplOptions.NoInlining)]
  static long BigFrame(int k) {
    B512 x = default(B512);
    B512 y = default(B512);
    x.a.b.c = k;
    y.h.h.h = k;
    var arr = new int[k];
    return arr.Length + Touch(ref x) + Touch(ref y);
  }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static long Touch(ref B512 v) { return v.a.b.c + v.h.h.h; }

  static Func<long[]> Emit(int k) {
    var dm = new DynamicMethod("MakeLongs_" + k, typeof(long[]), Type.EmptyTypes, typeof(DynFree).Module);
    var il = dm.GetILGenerator();
    il.Emit(OpCodes.Ldc_I4, k);
    il.Emit(OpCodes.Newarr, typeof(long));
    il.Emit(OpCodes.Ret);
    return (Func<long[]>)dm.CreateDelegate(typeof(Func<long[]>));
  }

  static int Main(string[] args) {
    int rounds = args.Length > 0 ? int.Parse(args[0]) : 300;
    long total = 0;
    int k = 0;
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < 8; ++i) {
        var f = Emit(++k);
        for (int j = 0; j < 3; ++j) total += f().Length;
      }
      if ((r & 15) == 0) {
        var p = Expression.Parameter(typeof(int), "x");
        var g = Expression.Lambda<Func<int, string>>(
            Expression.Call(Expression.Multiply(p, Expression.Constant(r + 1)), typeof(int).GetMethod("ToString", Type.EmptyTypes)), p).Compile();
        total += g(r).Length;
        var re = new Regex("a{" + (1 + (r & 3)) + "}b", RegexOptions.Compiled);
        total += re.IsMatch("aaaab") ? 1 : 0;
      }
      if ((r & 7) == 7) {
        GC.Collect();
        GC.WaitForPendingFinalizers();
      }
    }
    for (int i = 1; i <= 100; ++i) total += BigFrame(i);
    Console.WriteLine("dynfree " + k + " methods, " + total);
    return 0;
  }
}

// Allocations (and throws, and uncontended locks) under many kinds of managed frames, for comparing
// backtraces between stack walkers: deep recursion (beyond maxframes), frames with and without a frame
// pointer (exception clauses, many locals, stack arguments), generic methods (shared and not),
// virtual and interface calls, delegates and lambdas, iterators, static constructors run from the
// JIT's class-init path, reflection (managed frames above native runtime frames), boxing, strings,
// arrays. Deterministic and single-threaded; prints a checksum.
using System;
using System.Collections.Generic;
using System.Reflection;
using System.Runtime.CompilerServices;

class Leaf { public int V; public Leaf(int v) { V = v; } }
struct Big { public long A, B, C, D, E, F; }

interface IMaker { object Make(int i); }
class Maker : IMaker { public virtual object Make(int i) { return new Leaf(i); } }
class SubMaker : Maker { public override object Make(int i) { return new int[i % 7 + 1]; } }

static class Lazy { public static readonly List<Leaf> Items = Build(); static List<Leaf> Build() { var l = new List<Leaf>(); for (int i = 0; i < 5; i++) l.Add(new Leaf(i)); return l; } }

static class BacktracesProgram {
  static long sum;
  static object sink;

  [MethodImpl(MethodImplOptions.NoInlining)]
  static Leaf Recurse(int depth) { return depth == 0 ? new Leaf(depth) : Keep(Recurse(depth - 1)); }
  [MethodImpl(MethodImplOptions.NoInlining)]
  static Leaf Keep(Leaf l) { sum += l.V; return l; }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static object WithClauses(int i) {
    try { return new Leaf(i); } finally { sum++; }
  }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static object StackArgs(int a, int b, int c, int d, int e, int f, int g, int h, Big big) {
    return new Leaf(a + b + c + d + e + f + g + h + (int)big.F);
  }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static T Generic<T>(T value) { sink = new List<T>(1) { value }; return value; }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static object ManyLocals(int i) {
    long a = i, b = a * 3, c = b ^ 5, d = c + a, e = d * b, f = e - c, g = f + d, h = g ^ e;
    var o = new Leaf((int)(a + b + c + d + e + f + g + h));
    sum += a + b + c + d + e + f + g + h;
    return o;
  }

  static IEnumerable<object> Iterate(int n) { for (int i = 0; i < n; i++) yield return new Leaf(i); }

  [MethodImpl(MethodImplOptions.NoInlining)]
  static void Throw(int i) {
    try { throw new InvalidOperationException("x" + i); } catch (InvalidOperationException) { sum++; }
  }

  public static object ViaReflection(int i) { return new Leaf(i * 2); }

  static int Main() {
    for (int i = 0; i < 200; i++) sink = Recurse(i % 45);
    for (int i = 0; i < 200; i++) sink = WithClauses(i);
    var big = new Big { F = 3 };
    for (int i = 0; i < 200; i++) sink = StackArgs(i, 1, 2, 3, 4, 5, 6, 7, big);
    for (int i = 0; i < 100; i++) { sum += Generic(i); sum += Generic((long)i); sink = Generic("s" + i); sink = Generic(new Leaf(i)); }
    for (int i = 0; i < 200; i++) sink = ManyLocals(i);
    IMaker[] makers = { new Maker(), new SubMaker() };
    for (int i = 0; i < 200; i++) sink = makers[i & 1].Make(i);
    Func<int, object> f = x => new Leaf(x + 1);
    for (int i = 0; i < 200; i++) sink = f(i);
    foreach (var o in Iterate(200)) sink = o;
    sum += Lazy.Items.Count;
    MethodInfo m = typeof(BacktracesProgram).GetMethod("ViaReflection");
    for (int i = 0; i < 50; i++) sink = m.Invoke(null, new object[] { i });
    for (int i = 0; i < 100; i++) { object boxed = i; sink = boxed; sink = new string('a', i % 9 + 1); }
    for (int i = 0; i < 50; i++) Throw(i);
    object gate = new object();
    for (int i = 0; i < 50; i++) lock (gate) { sink = new Leaf(i); }
    Console.WriteLine("backtraces checksum {0}", sum);
    return 0;
  }
}

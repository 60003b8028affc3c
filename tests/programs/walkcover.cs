// Allocation and throw paths whose native chains our stack walker must know (test_walkcover.py):
// strings made by the runtime's native string code (FastAllocateString's icall wrapper: concatenation,
// formatting, StringBuilder, Split, Replace, ToUpper, Substring) and exceptions thrown a few frames deep
// (Mono's throw trampoline), and allocations in shared generic code (frames named from their generic
// context). "throwalloc": throws whose handling allocates (the trace of every throw, the exceptions the
// runtime makes and constructs itself: casts, bounds, overflow, a missing key), with finally, filter and
// rethrow, for allocation backtraces taken while a throw is handled. (Not the exceptions raised from a
// signal, null dereference and division by zero: their throw events' own backtraces go through the
// signal's native chain, which our walker does not learn on Mono 6.8.)
// argv[0] = "strings", "exceptions", "generics" or "throwalloc", argv[1] = thousands of iterations.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Text;

class WalkError : Exception { public int Where; public WalkError(int w) : base("bad") { Where = w; } }

static class WalkCover {
  static int Deep(string s, int depth) {
    if (depth > 0) return Deep(s, depth - 1) + 1;
    int v;
    if (!int.TryParse(s, out v)) throw new WalkError(s.Length);
    return v;
  }

  static long Strings(int n) {
    long acc = 0;
    for (int i = 0; i < n; i++) {
      string a = "w" + i;
      string b = string.Format("{0}-{1}", a, i & 7);
      var sb = new StringBuilder(b);
      sb.Append('+').Append(a.ToUpperInvariant());
      string c = sb.ToString();
      string[] parts = c.Split('-', '+');
      acc += parts[0].Substring(1).Replace('1', 'x').Length + string.Concat(c, a).Length;
    }
    return acc;
  }

  static long Exceptions(int n) {
    long acc = 0;
    for (int i = 0; i < n; i++) {
      string s = (i % 4 == 0) ? i.ToString() : "x" + i;
      try {
        acc += Deep(s, i & 7);
      } catch (WalkError e) when (e.Where > 0) {
        acc--;
      }
    }
    return acc;
  }

  // Allocations in shared generic code (instances over reference types share one compiled body, and
  // Mono's walk names the instantiation it reads from each frame's generic context): `this` of a
  // generic class, a generic method's runtime generic context, a static method's and a struct's vtable.
  sealed class Box<T> where T : class {
    public T Item;
    public Box(T item) { Item = item; }
    public Box<T>[] Pair(Box<T> other) { return new Box<T>[] { this, other }; }
    public static List<T> Many(T a, int k) { var l = new List<T>(); for (int i = 0; i < k; i++) l.Add(a); return l; }
  }
  struct Slot<T> where T : class {
    public T Item;
    public object[] Wrap() { return new object[] { Item }; }
  }
  static KeyValuePair<K, V>[] Entries<K, V>(K k, V v) where K : class where V : class {
    return new[] { new KeyValuePair<K, V>(k, v) };
  }

  static long Generics(int n) {
    long acc = 0;
    var words = new[] { "a", "bb", "ccc" };
    for (int i = 0; i < n; i++) {
      var b = new Box<string>(words[i % 3]);
      acc += b.Pair(new Box<string>("x")).Length;
      acc += new Box<object>(b).Pair(b.Pair(b)[0] == b ? new Box<object>(words) : null).Length;
      acc += Box<string>.Many("m", 3).Count + Box<int[]>.Many(null, 2).Count;
      acc += new Slot<string> { Item = "s" }.Wrap().Length + new Slot<object[]>().Wrap().Length;
      acc += Entries("k", words).Length + Entries(b, (object)b).Length;
      acc += words.Where(w => w.Length > (i & 1)).Select(w => w + "!").ToList().Count;
    }
    return acc;
  }

  static int Raise(int i, int[] small, object o, Dictionary<string, int> map) {
    switch (i % 5) {
      case 0: return ((string)o).Length;                     // InvalidCastException
      case 1: return small[i | 8];                           // IndexOutOfRangeException
      case 2: return checked(int.MaxValue + (i | 1));        // OverflowException
      case 3: return map["k" + i];                           // KeyNotFoundException
      default: throw new InvalidOperationException("op " + i);
    }
  }

  static int Rethrow(int i, int[] small, object o, Dictionary<string, int> map) {
    try {
      return Raise(i, small, o, map);
    } catch (InvalidOperationException) {
      throw;
    }
  }

  static long ThrowAlloc(int n) {
    long acc = 0;
    var small = new int[4];
    object boxed = 42;
    var map = new Dictionary<string, int>();
    for (int i = 0; i < n; i++) {
      try {
        try {
          acc += Rethrow(i, small, boxed, map);
        } finally {
          acc++;
        }
      } catch (Exception e) when (e.Message.Length > (i & 1)) {
        acc += e.GetType().Name.Length;
      }
    }
    return acc;
  }

  static int Main(string[] args) {
    int n = (args.Length > 1 ? int.Parse(args[1]) : 10) * 1000;
    long r = args[0] == "strings" ? Strings(n) : args[0] == "generics" ? Generics(n) :
             args[0] == "throwalloc" ? ThrowAlloc(n) : Exceptions(n);
    Console.WriteLine("walkcover {0} {1}", args[0], r);
    return 0;
  }
}

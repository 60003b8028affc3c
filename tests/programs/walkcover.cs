// Allocation and throw paths whose native chains our stack walker must know (test_walkcover.py):
// strings made by the runtime's native string code (FastAllocateString's icall wrapper: concatenation,
// formatting, StringBuilder, Split, Replace, ToUpper, Substring) and exceptions thrown a few frames deep
// (Mono's throw trampoline). argv[0] = "strings" or "exceptions", argv[1] = thousands of iterations.
using System;
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

  static int Main(string[] args) {
    int n = (args.Length > 1 ? int.Parse(args[1]) : 10) * 1000;
    long r = args[0] == "strings" ? Strings(n) : Exceptions(n);
    Console.WriteLine("walkcover {0} {1}", args[0], r);
    return 0;
  }
}

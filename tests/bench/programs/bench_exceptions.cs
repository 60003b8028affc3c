// Exception benchmark: exceptions thrown a few frames deep and caught (with finally and filter clauses),
// the way parsers and validation code use them. argv[0] = thousands of throws (default 100).
using System;

class ParseError : Exception { public int Where; public ParseError(int w) : base("bad input") { Where = w; } }

static class BenchExceptions {
  static int Parse(string s, int depth) {
    if (depth > 0) return Parse(s, depth - 1) + 1;
    int v;
    if (!int.TryParse(s, out v)) throw new ParseError(s.Length);
    return v;
  }

  static int Main(string[] args) {
    int n = (args.Length > 0 ? int.Parse(args[0]) : 100) * 1000;
    long acc = 0;
    int caught = 0;
    for (int i = 0; i < n; i++) {
      string s = (i % 4 == 0) ? i.ToString() : "x" + i;
      try {
        try {
          acc += Parse(s, i & 7);
        } finally {
          acc++;
        }
      } catch (ParseError e) when (e.Where > 0) {
        caught++;
      } catch (InvalidOperationException) {
        caught--;
      }
    }
    Console.WriteLine("exceptions checksum {0} {1}", acc, caught);
    return 0;
  }
}

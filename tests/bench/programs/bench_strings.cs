// String-heavy benchmark: concatenation, formatting, StringBuilder, Substring, Split, Replace, ToUpper
// and dictionary lookups by string: most allocations are strings and char/string arrays made by the
// runtime's native string paths. argv[0] = thousands of iterations (default 200).
using System;
using System.Collections.Generic;
using System.Text;

static class BenchStrings {
  static int Main(string[] args) {
    int n = (args.Length > 0 ? int.Parse(args[0]) : 200) * 1000;
    var counts = new Dictionary<string, int>();
    long acc = 0;
    for (int i = 0; i < n; i++) {
      string a = "item" + i;
      string b = string.Format("{0}:{1}", a, i & 15);
      var sb = new StringBuilder(b);
      sb.Append('/').Append(a.ToUpperInvariant());
      string c = sb.ToString();
      string[] parts = c.Split(':', '/');
      string d = parts[0].Substring(1).Replace('t', 'T');
      string key = d.Length > 6 ? d.Substring(0, 6) : d;
      counts.TryGetValue(key, out int k);
      counts[key] = k + 1;
      acc += c.Length + parts.Length + string.Concat(d, key).Length;
    }
    Console.WriteLine("strings checksum {0} {1}", acc, counts.Count);
    return 0;
  }
}

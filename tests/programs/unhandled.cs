// Allocates a known number of objects and dies of an unhandled exception: the profile must still
// hold every allocation and the runtime's exit status (1) must be unchanged.
using System;

class Crumb { public int Value; }

static class UnhandledProgram {
  static Crumb[] keep = new Crumb[300];

  static void Fail(int depth) {
    if (depth == 0) throw new InvalidOperationException("deliberately unhandled");
    Fail(depth - 1);
  }

  static void Main() {
    for (int i = 0; i < keep.Length; i++) keep[i] = new Crumb { Value = i };
    Console.WriteLine("allocated {0} crumbs", keep.Length);
    Fail(3);
  }
}

// Allocates a known number of objects, then ends with Environment.Exit(3) from a nested call: the
// profile must still hold every allocation, and the exit status must stay 3.
using System;

class Marker { public int Value; }

static class ExitCodeProgram {
  static Marker[] keep = new Marker[500];

  static void Finish() {
    Console.WriteLine("exiting with 3");
    Environment.Exit(3);
  }

  static void Main() {
    for (int i = 0; i < keep.Length; i++) keep[i] = new Marker { Value = i };
    Console.WriteLine("allocated {0} markers", keep.Length);
    Finish();
    Console.WriteLine("not reached");
  }
}

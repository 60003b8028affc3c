// Starts child processes (fork + exec inside the runtime): a non-Mono one (/bin/echo) and a Mono one
// (argv[0], an .exe run with the same mono), allocating a known number of `Parent` objects around them.
using System;
using System.Diagnostics;

class Parent { public int Value; }

static class SpawnProgram {
  static Parent[] keep = new Parent[200];

  static int Run(string file, string args) {
    var psi = new ProcessStartInfo(file, args) { UseShellExecute = false, RedirectStandardOutput = true };
    using (var p = Process.Start(psi)) {
      string output = p.StandardOutput.ReadToEnd();
      p.WaitForExit();
      Console.Write(output);
      return p.ExitCode;
    }
  }

  static int Main(string[] args) {
    for (int i = 0; i < 100; i++) keep[i] = new Parent { Value = i };
    int a = Run("/bin/echo", "child echo");
    int b = args.Length > 0 ? Run("mono", args[0]) : 0;
    for (int i = 100; i < 200; i++) keep[i] = new Parent { Value = i };
    Console.WriteLine("children exited {0} {1}", a, b);
    return 0;
  }
}

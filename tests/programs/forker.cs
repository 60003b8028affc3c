// Forks with a P/Invoke to fork() and does NOT exec: the child lives on in native code (sleep(SECONDS),
// then _exit) well after the parent has exited. A profiler that kept its output descriptor open in the
// child would hold an `output=|CMD` pipe open that long. Allocates 100 `Forked` objects before the fork
// and 100 after (in the parent only).
using System;
using System.Reflection;
using System.Runtime.InteropServices;

class Forked { public int Value; }

static class ForkerProgram {
  [DllImport("libc")] static extern int fork();
  [DllImport("libc")] static extern uint sleep(uint seconds);
  [DllImport("libc")] static extern void _exit(int status);

  static Forked[] keep = new Forked[200];

  static int Main(string[] args) {
    uint seconds = args.Length > 0 ? uint.Parse(args[0]) : 8;
    for (int i = 0; i < 100; i++) keep[i] = new Forked { Value = i };
    // The child runs nothing that needs the JIT (another thread may have held its locks at fork): the
    // P/Invoke wrappers it calls are made now.
    sleep(0);
    Marshal.Prelink(typeof(ForkerProgram).GetMethod("_exit", BindingFlags.Static | BindingFlags.NonPublic));
    int pid = fork();
    if (pid == 0) {
      sleep(seconds);
      _exit(0);
    }
    for (int i = 100; i < 200; i++) keep[i] = new Forked { Value = i };
    Console.WriteLine(pid > 0 ? "forked" : "fork failed");
    return pid > 0 ? 0 : 1;
  }
}

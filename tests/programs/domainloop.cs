// Creates, uses and unloads 30 AppDomains in a row. Mono frees each domain's vtables on unload and
// reuses their addresses for the next domain's: every domain's `Worker` vtable must still be described
// (31 vtable loads: the root domain's and one per created domain).
using System;

public class Worker : MarshalByRefObject {
  public static object keep;
  public void Run() {
    for (int i = 0; i < 10; i++) keep = new Worker();
  }
}

static class DomainLoopProgram {
  static void Main() {
    for (int i = 0; i < 30; i++) {
      var d = AppDomain.CreateDomain("d" + i);
      var w = (Worker)d.CreateInstanceAndUnwrap(typeof(Worker).Assembly.FullName, "Worker");
      w.Run();
      AppDomain.Unload(d);
    }
    Console.WriteLine("30 domains");
  }
}

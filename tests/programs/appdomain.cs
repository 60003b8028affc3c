// appdomain.cs - creates a second AppDomain, runs code in it, unloads it
// (domain load/unload/name, context, image/assembly unload events).
// NOTE: 6.8 mprof-report mis-parses image *unload* events (see README).
using System;

public sealed class Worker : MarshalByRefObject
{
    public int Compute(int n)
    {
        int s = 0;
        for (int i = 0; i < n; i++) s += i;
        return s;
    }
}

static class AppDomainProgram
{
    static int Main()
    {
        var d = AppDomain.CreateDomain("child-domain");
        var w = (Worker)d.CreateInstanceAndUnwrap(typeof(Worker).Assembly.FullName, typeof(Worker).FullName);
        int r = w.Compute(100);
        AppDomain.Unload(d);
        Console.WriteLine("child result: " + r);
        Console.WriteLine("unloaded: yes");
        return 0;
    }
}

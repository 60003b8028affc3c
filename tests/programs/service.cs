// A service-like program for the rotation and flight-recorder tests (test_files.py): two worker threads
// handle "requests" (calls, allocations, some CPU) for SECONDS seconds (default 8), and every second
// the program loads code it has not run before (a new generic instance: new classes, vtables and
// methods appear late in the run, so a later file needs metadata described in an earlier one only if
// the writer forgets it). Prints "ready", then "done N" with the number of requests, exit status 0.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;

class Request {
    public int Id;
    public string Path;
    public List<int> Items = new List<int>();
}

class Handler<T> where T : new() {
    public static int Handle(Request r) {
        var t = new T();
        int sum = t.GetHashCode() & 1;
        foreach (int i in r.Items) sum += Work(i);
        return sum;
    }
    static int Work(int i) { return (i * 31) ^ (i >> 3); }
}

class A {} class B {} class C {} class D {} class E {} class F {} class G {} class H {}
class I {} class J {} class K {} class L {} class M {} class N {} class O {} class P {}
class Q {} class R {} class S {} class T {} class U {} class V {} class W {} class X {}

static class Service {
    static volatile bool stop;
    static long requests;

    static int Dispatch(int kind, Request r) {
        switch (kind % 24) {
            case 0: return Handler<A>.Handle(r);   case 1: return Handler<B>.Handle(r);
            case 2: return Handler<C>.Handle(r);   case 3: return Handler<D>.Handle(r);
            case 4: return Handler<E>.Handle(r);   case 5: return Handler<F>.Handle(r);
            case 6: return Handler<G>.Handle(r);   case 7: return Handler<H>.Handle(r);
            case 8: return Handler<I>.Handle(r);   case 9: return Handler<J>.Handle(r);
            case 10: return Handler<K>.Handle(r);  case 11: return Handler<L>.Handle(r);
            case 12: return Handler<M>.Handle(r);  case 13: return Handler<N>.Handle(r);
            case 14: return Handler<O>.Handle(r);  case 15: return Handler<P>.Handle(r);
            case 16: return Handler<Q>.Handle(r);  case 17: return Handler<R>.Handle(r);
            case 18: return Handler<S>.Handle(r);  case 19: return Handler<T>.Handle(r);
            case 20: return Handler<U>.Handle(r);  case 21: return Handler<V>.Handle(r);
            case 22: return Handler<W>.Handle(r);  default: return Handler<X>.Handle(r);
        }
    }

    static void Worker(object state) {
        var watch = (Stopwatch)state;
        int id = 0;
        long sink = 0;
        while (!stop) {
            // Kinds seen so far grow by one per second: late requests run code JIT-compiled late.
            int kinds = 1 + (int)(watch.ElapsedMilliseconds / 1000);
            var r = new Request { Id = id, Path = "/item/" + (id % 100) };
            for (int i = 0; i < 50; i++) r.Items.Add(i + id);
            sink += Dispatch(id % kinds, r);
            id++;
            Interlocked.Increment(ref requests);
            if (id % 200 == 0) Thread.Sleep(1);
        }
        if (sink == 42) Console.WriteLine("unlikely");
    }

    static int Main(string[] args) {
        int seconds = args.Length > 0 ? int.Parse(args[0]) : 8;
        var watch = Stopwatch.StartNew();
        var threads = new List<Thread>();
        for (int i = 0; i < 2; i++) {
            var t = new Thread(Worker) { Name = "worker" + i };
            t.Start(watch);
            threads.Add(t);
        }
        Console.WriteLine("ready");
        Console.Out.Flush();
        while (watch.ElapsedMilliseconds < seconds * 1000L) Thread.Sleep(50);
        stop = true;
        foreach (var t in threads) t.Join();
        Console.WriteLine("done " + Interlocked.Read(ref requests));
        return 0;
    }
}

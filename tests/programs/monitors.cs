// monitors.cs - 4 worker threads contend on one lock (Monitor.Enter with the
// holder sleeping inside the lock guarantees contention), plus a producer /
// consumer pair using Monitor.Wait / Monitor.Pulse.
// Output is deterministic; the number of contention events is not (>= 1).
using System;
using System.Collections.Generic;
using System.Threading;

static class MonitorsProgram
{
    static readonly object gate = new object();
    static int counter;

    static readonly object qlock = new object();
    static readonly Queue<int> queue = new Queue<int>();
    static long consumed;

    static void Worker()
    {
        for (int i = 0; i < 10; i++) {
            lock (gate) {
                counter++;
                Thread.Sleep(2); // hold the lock so other threads contend
            }
        }
    }

    static void Producer()
    {
        for (int i = 1; i <= 100; i++) {
            lock (qlock) {
                queue.Enqueue(i);
                Monitor.Pulse(qlock);
            }
        }
        lock (qlock) { queue.Enqueue(-1); Monitor.Pulse(qlock); }
    }

    static void Consumer()
    {
        while (true) {
            int v;
            lock (qlock) {
                while (queue.Count == 0)
                    Monitor.Wait(qlock);
                v = queue.Dequeue();
            }
            if (v < 0) break;
            consumed += v;
        }
    }

    static int Main()
    {
        var threads = new List<Thread>();
        for (int t = 0; t < 4; t++)
            threads.Add(new Thread(Worker) { Name = "worker-" + t });
        threads.Add(new Thread(Consumer) { Name = "consumer" });
        threads.Add(new Thread(Producer) { Name = "producer" });
        foreach (var th in threads) th.Start();
        foreach (var th in threads) th.Join();
        Console.WriteLine("counter: " + counter);
        Console.WriteLine("consumed sum: " + consumed);
        return 0;
    }
}

// mlpd's .NET test programs (tests/integration/dotnet/): `DotnetPrograms NAME [ARGS]`. Each prints
// what the tests compare the profile with (counts the runtime itself reports) and exits with a known
// code, so the tests can check that the agent changes neither.
using System;
using System.Collections.Generic;
using System.Linq.Expressions;
using System.Net;
using System.Reflection;
using System.Reflection.Emit;
using System.Threading.Tasks;
using System.Runtime.CompilerServices;
using System.Threading;

namespace MlpdTests
{
    public static class Programs
    {
        public static int Main(string[] args)
        {
            string name = args.Length > 0 ? args[0] : "hello";
            switch (name)
            {
                case "hello": return Hello.Run();
                case "exceptions": return Exceptions.Run(args.Length > 1 ? int.Parse(args[1]) : 100);
                case "threads": return Threads.Run(args.Length > 1 ? int.Parse(args[1]) : 4);
                case "gc": return Collections.Run(args.Length > 1 ? int.Parse(args[1]) : 5);
                case "busy": return Busy.Run(args.Length > 1 ? int.Parse(args[1]) : 2000);
                case "allocs": return Allocs.Run(args.Length > 1 ? int.Parse(args[1]) : 1000);
                case "crunch": return Crunch.Run(args.Length > 1 ? int.Parse(args[1]) : 100);
                case "exit":
                    // Environment.Exit from a worker thread while the main thread allocates (dotnet_faults).
                    var exiter = new System.Threading.Thread(() => { System.Threading.Thread.Sleep(300); Console.WriteLine("exiting"); Environment.Exit(3); });
                    exiter.Start();
                    var keep = new List<object>();
                    while (true) { keep.Add(new Payload(keep.Count)); if (keep.Count > 100000) keep.Clear(); }
                case "unhandled":
                    // 777 Payloads, then an unhandled exception on the main thread (dotnet_faults): the
                    // runtime aborts the process (exit 134).
                    Unhandled.Allocate(777);
                    Console.WriteLine("throwing");
                    Unhandled.Throw();
                    return 0;
                case "unhandled-thread":
                    // The same on a worker thread, while the main thread waits for it.
                    var crasher = new Thread(() => { Unhandled.Allocate(777); Console.WriteLine("throwing"); Unhandled.Throw(); });
                    crasher.Start();
                    crasher.Join();
                    return 0;
                case "gcwait": return CollectionsThenWait.Run(args.Length > 1 ? int.Parse(args[1]) : 5);
                case "heapexit": return HeapExit.Run(args.Length > 1 ? args[1] : "return", args.Length > 2 ? int.Parse(args[2]) : 1000);
                case "heap": return Heap.Run(args.Length > 1 ? int.Parse(args[1]) : 1000, args.Length > 2 ? int.Parse(args[2]) : 0);
                case "contention": return Contention.Run(args.Length > 1 ? int.Parse(args[1]) : 20);
                case "locks": return Locks.Run(args.Length > 1 ? int.Parse(args[1]) : 1000000);
                case "server": return Server.Run(args.Length > 1 ? int.Parse(args[1]) : 18080);
                case "dynamic": return Dynamic.Run(args.Length > 1 ? int.Parse(args[1]) : 50);
                case "recurse":
                    return Recursion.Run(args.Length > 1 ? int.Parse(args[1]) : 100, args.Length > 2 ? int.Parse(args[2]) : 1000);
                case "calls":
                    return CallCounts.Run(args.Length > 1 ? int.Parse(args[1]) : 1000, args.Length > 2 ? int.Parse(args[2]) : 200);
                case "callbench": return CallBench.Run(args.Length > 1 ? int.Parse(args[1]) : 20000000);
                case "osr": return Osr.Run(args.Length > 1 ? int.Parse(args[1]) : 1500);
                case "frameless": return Frameless.Run(args.Length > 1 ? int.Parse(args[1]) : 1500);
                case "attach_service": return AttachService.Run(args.Length > 1 ? int.Parse(args[1]) : 10);
                case "env":
                    // What a child process would inherit of the profiler's variables (nochildren).
                    Console.WriteLine("CORECLR_PROFILER=" + (Environment.GetEnvironmentVariable("CORECLR_PROFILER") ?? "(unset)"));
                    return 0;
                default:
                    Console.Error.WriteLine("unknown program " + name);
                    return 2;
            }
        }
    }

    public static class Unhandled
    {
        static readonly List<object> Kept = new List<object>();

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Allocate(int count)
        {
            for (int i = 0; i < count; i++) Kept.Add(new Payload(i));
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Throw()
        {
            throw new InvalidOperationException("unhandled on purpose");
        }
    }

    public static class Hello
    {
        public static int Run()
        {
            Console.WriteLine("hello from .NET " + Environment.Version);
            return 7;
        }
    }

    public static class Exceptions
    {
        static void Thrower(int i)
        {
            throw new InvalidOperationException("number " + i);
        }

        public static int Run(int count)
        {
            int caught = 0;
            for (int i = 0; i < count; i++)
            {
                try { Thrower(i); }
                catch (InvalidOperationException) { caught++; }
            }
            Console.WriteLine("thrown " + count + " caught " + caught);
            return 0;
        }
    }

    public static class Threads
    {
        public static int Run(int count)
        {
            var threads = new List<Thread>();
            long total = 0;
            for (int i = 0; i < count; i++)
            {
                int n = i;
                var t = new Thread(() => { Interlocked.Add(ref total, Work.Sum(200000 + n)); });
                t.Name = "mlpd-worker-" + i;
                threads.Add(t);
                t.Start();
            }
            foreach (var t in threads) t.Join();
            Console.WriteLine("threads " + count + " total " + total);
            return 0;
        }
    }

    public static class Work
    {
        public static long Sum(int n)
        {
            long s = 0;
            for (int i = 0; i < n; i++) s += i % 7;
            return s;
        }
    }

    // gcwait N: N full collections and N gen0 ones, then the counts, then waits for a line on stdin
    // (the metrics test scrapes the agent meanwhile); exit status 5.
    public static class CollectionsThenWait
    {
        public static int Run(int count)
        {
            for (int i = 0; i < count; i++) GC.Collect();
            for (int i = 0; i < count; i++) GC.Collect(0);
            Console.WriteLine("counts " + GC.CollectionCount(0) + " " + GC.CollectionCount(1) + " " + GC.CollectionCount(2));
            Console.Out.Flush();
            Console.ReadLine();
            return 5;
        }
    }

    // Known live objects for the heapshot tests (dotnet_heapshot): N HeapA held by a static array, N
    // HeapB in a cycle held only by a strong GC handle, N HeapC held by an array in a local of Run,
    // HeapF objects kept only by the finalizer queue (their finalizers wait behind a blocked finalizer
    // thread), and FILLER extra MB of byte arrays (a larger heap for the pause comparison). Prints each
    // type's size (measured as the bytes allocated per object), then "ready", then answers stdin: "gap"
    // prints the longest stall a ticking thread saw since the last "gap" (the pause a heapshot costs the
    // program), "quit" ends the program (exit 7).
    public sealed class HeapA { public long X; public HeapA Next; }
    public sealed class HeapB { public HeapB Next; public int I; }
    public sealed class HeapC { public long A, B, C, D; }
    public sealed class HeapF
    {
        public long Id;
        ~HeapF() { Heap.FinalizedF++; }
    }
    public sealed class HeapBlocker
    {
        ~HeapBlocker() { Heap.BlockerRunning.Set(); Heap.Release.Wait(); }
    }

    public static class Heap
    {
        public static HeapA[] StaticAs;
        public static volatile int FinalizedF;
        public static readonly ManualResetEventSlim BlockerRunning = new ManualResetEventSlim(false);
        public static readonly ManualResetEventSlim Release = new ManualResetEventSlim(false);
        static long maxGapTicks;
        static byte[][] filler;

        static long PerObject<T>(Func<T> make, int n, T[] into)
        {
            make();  // the first one outside the measure (type loading)
            long before = GC.GetAllocatedBytesForCurrentThread();
            for (int i = 0; i < n; i++) into[i] = make();
            return (GC.GetAllocatedBytesForCurrentThread() - before) / n;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void MakeUnreachableF(int count)
        {
            for (int i = 0; i < count; i++) new HeapF { Id = i };
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void MakeBlocker() { new HeapBlocker(); }

        // Everything but the HeapC array, made in a frame of its own so that no local of Run holds it.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static System.Runtime.InteropServices.GCHandle Setup(int n, int fillerMb, HeapC[] Cs, long[] sizes)
        {
            var As = new HeapA[n];
            var Bs = new HeapB[n];
            sizes[0] = PerObject(() => new HeapA(), n, As);
            sizes[1] = PerObject(() => new HeapB(), n, Bs);
            sizes[2] = PerObject(() => new HeapC(), n, Cs);
            for (int i = 0; i < n; i++) { As[i].X = i; Bs[i].Next = Bs[(i + 1) % n]; Bs[i].I = i; }
            StaticAs = As;
            filler = new byte[fillerMb * 16][];
            for (int i = 0; i < filler.Length; i++) filler[i] = new byte[65536 - 64];
            MakeUnreachableF(3);
            return System.Runtime.InteropServices.GCHandle.Alloc(Bs[0]);
        }

        public static int Run(int n, int fillerMb)
        {
            // The finalizer thread blocked first, so the HeapF objects stay in its queue.
            MakeBlocker();
            GC.Collect();
            BlockerRunning.Wait();
            var Cs = new HeapC[n];
            var sizes = new long[3];
            var handle = Setup(n, fillerMb, Cs, sizes);
            long sizeA = sizes[0], sizeB = sizes[1], sizeC = sizes[2];
            GC.Collect();
            GC.Collect();
            var ticker = new Thread(() =>
            {
                var watch = System.Diagnostics.Stopwatch.StartNew();
                long last = watch.ElapsedTicks;
                while (true)
                {
                    Thread.Sleep(1);
                    long now = watch.ElapsedTicks;
                    long gap = now - last;
                    last = now;
                    long seen = Interlocked.Read(ref maxGapTicks);
                    if (gap > seen) Interlocked.CompareExchange(ref maxGapTicks, gap, seen);
                }
            }) { IsBackground = true };
            ticker.Start();
            Console.WriteLine("size MlpdTests.HeapA " + sizeA);
            Console.WriteLine("size MlpdTests.HeapB " + sizeB);
            Console.WriteLine("size MlpdTests.HeapC " + sizeC);
            Console.WriteLine("ready " + Environment.ProcessId);
            Console.Out.Flush();
            string line;
            while ((line = Console.ReadLine()) != null && line != "quit")
            {
                if (line == "gap")
                {
                    long ticks = Interlocked.Exchange(ref maxGapTicks, 0);
                    Console.WriteLine("gap_us " + ticks * 1000000 / System.Diagnostics.Stopwatch.Frequency);
                    Console.Out.Flush();
                }
            }
            GC.KeepAlive(Cs);
            GC.KeepAlive(filler);
            handle.Free();
            Release.Set();
            return 7;
        }
    }

    // Known live objects as the program ends (dotnet_heapshot_exit, heapshot-on-shutdown): N ExitKept
    // held by a static array, N ExitCycle in a cycle held only by a strong GC handle never freed, N
    // ExitLate made just before the end (a static), N ExitDropped made and then dropped before the end
    // (none live at the end). MODE: "return" (Main returns 5), "exit" (Environment.Exit(6) from a worker
    // thread while the main thread allocates garbage), "unhandled" (an ExitException carrying N
    // ExitCarried thrown through frames without a catch: the runtime aborts the process), "unhandled-thread"
    // (the same on a worker thread while the main thread waits for it), "failfast" (Environment.FailFast:
    // the runtime aborts with no callback to a profiler). Prints each
    // type's bytes per object first, then "end MODE".
    public sealed class ExitKept { public long X; public ExitKept Next; }
    public sealed class ExitCycle { public ExitCycle Next; public int I; }
    public sealed class ExitLate { public long A, B, C; }
    public sealed class ExitDropped { public long A; }
    public sealed class ExitCarried { public int I; }
    public sealed class ExitException : Exception
    {
        public readonly ExitCarried[] Carried;
        public ExitException(ExitCarried[] carried) : base("the end (heapexit)") { Carried = carried; }
    }

    public static class HeapExit
    {
        static ExitKept[] kept;
        static ExitLate[] late;
        static ExitDropped[] dropped;

        static long PerObject<T>(Func<T> make, int n, T[] into)
        {
            make();
            long before = GC.GetAllocatedBytesForCurrentThread();
            for (int i = 0; i < n; i++) into[i] = make();
            return (GC.GetAllocatedBytesForCurrentThread() - before) / n;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Throw(int n)
        {
            var carried = new ExitCarried[n];
            long size = PerObject(() => new ExitCarried(), n, carried);
            Console.WriteLine("size MlpdTests.ExitCarried " + size);
            Console.WriteLine("end unhandled" + (Thread.CurrentThread.IsBackground || Thread.CurrentThread.ManagedThreadId != 1 ? "-thread" : ""));
            Console.Out.Flush();
            throw new ExitException(carried);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Deeper(int n) { Throw(n); }

        public static int Run(string mode, int n)
        {
            kept = new ExitKept[n];
            var cycle = new ExitCycle[n];
            dropped = new ExitDropped[n];
            Console.WriteLine("size MlpdTests.ExitKept " + PerObject(() => new ExitKept(), n, kept));
            Console.WriteLine("size MlpdTests.ExitCycle " + PerObject(() => new ExitCycle(), n, cycle));
            Console.WriteLine("size MlpdTests.ExitDropped " + PerObject(() => new ExitDropped(), n, dropped));
            for (int i = 0; i < n; i++) { kept[i].X = i; cycle[i].Next = cycle[(i + 1) % n]; cycle[i].I = i; }
            System.Runtime.InteropServices.GCHandle.Alloc(cycle[0]);  // never freed
            cycle = null;
            GC.Collect();
            dropped = null;
            late = new ExitLate[n];
            Console.WriteLine("size MlpdTests.ExitLate " + PerObject(() => new ExitLate(), n, late));
            switch (mode)
            {
                case "return":
                    Console.WriteLine("end return");
                    return 5;
                case "exit":
                    var exiter = new Thread(() => { Thread.Sleep(200); Console.WriteLine("end exit"); Console.Out.Flush(); Environment.Exit(6); });
                    exiter.Start();
                    var garbage = new List<object>();
                    while (true) { garbage.Add(new Payload(garbage.Count)); if (garbage.Count > 10000) garbage.Clear(); }
                case "unhandled":
                    Deeper(n);
                    return 0;
                case "failfast":
                    Console.WriteLine("end failfast");
                    Console.Out.Flush();
                    Environment.FailFast("the end (heapexit)");
                    return 0;
                case "unhandled-thread":
                    // The same on a worker thread while the main thread waits for it.
                    var crasher = new Thread(() => Deeper(n));
                    crasher.Start();
                    crasher.Join();
                    return 0;
                default:
                    Console.Error.WriteLine("unknown mode " + mode);
                    return 2;
            }
        }
    }

    public static class Collections
    {
        public static int Run(int count)
        {
            int before0 = GC.CollectionCount(0), before1 = GC.CollectionCount(1), before2 = GC.CollectionCount(2);
            for (int i = 0; i < count; i++) GC.Collect();
            Console.WriteLine("gen0 " + (GC.CollectionCount(0) - before0) + " gen1 " + (GC.CollectionCount(1) - before1) +
                              " gen2 " + (GC.CollectionCount(2) - before2) + " total0 " + GC.CollectionCount(0));
            return 0;
        }
    }

    public static class Busy
    {
        // Spins on the CPU for `ms` milliseconds in a method of its own (the sampling tests look for it).
        public static long Spin(int ms)
        {
            var watch = System.Diagnostics.Stopwatch.StartNew();
            long x = 0;
            while (watch.ElapsedMilliseconds < ms)
                for (int i = 0; i < 100000; i++) x += i ^ (x >> 3);
            return x;
        }

        public static int Run(int ms)
        {
            Console.WriteLine("busy " + (Spin(ms) != 42 ? "done" : "odd"));
            return 0;
        }
    }

    // A fixed amount of CPU work (`rounds` x 10 million steps) through a few levels of calls, on two
    // threads: the overhead runs compare CPU-seconds of the same work (docs/dotnet.md, "Measured").
    public static class Crunch
    {
        static long Leaf(long x, int n)
        {
            for (int i = 0; i < n; i++) x += i ^ (x >> 3);
            return x;
        }

        static long Middle(long x, int n) => Leaf(x, n / 2) + Leaf(x + 1, n - n / 2);

        static long Round(long x) => Middle(x, 10_000_000);

        public static int Run(int rounds)
        {
            long a = 0, b = 0;
            var t = new System.Threading.Thread(() => { for (int r = 0; r < rounds / 2; r++) a += Round(r); });
            t.Start();
            for (int r = rounds / 2; r < rounds; r++) b += Round(r);
            t.Join();
            Console.WriteLine("crunch " + ((a ^ b) != 42 ? "done" : "odd"));
            return 0;
        }
    }

    public sealed class Payload
    {
        public long A, B;
        public Payload(long a) { A = a; B = a * 2; }
    }

    public static class Allocs
    {
        // Exactly `count` Payload objects and `count` int[10] arrays, kept alive in two lists so that
        // nothing is optimized away (the tests compare the file's counts per type with these).
        public static int Run(int count)
        {
            var payloads = new List<Payload>(count);
            var arrays = new List<int[]>(count);
            for (int i = 0; i < count; i++)
            {
                payloads.Add(new Payload(i));
                arrays.Add(new int[10]);
            }
            long sum = 0;
            foreach (var p in payloads) sum += p.B;
            Console.WriteLine("payloads " + payloads.Count + " arrays " + arrays.Count + " sum " + sum);
            return 0;
        }
    }

    public static class Contention
    {
        static readonly object Gate = new object();
        static int entered;

        // Waits for Gate, which Run holds: one contention (and one acquisition after it) per call.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Waiter(ManualResetEventSlim ready)
        {
            ready.Set();
            lock (Gate) { entered++; }
        }

        // `rounds` rounds: Run takes Gate, starts a thread that waits for it, holds it 50 ms (longer
        // than the runtime's spinning, so the waiter blocks: at least `rounds` contentions), lets go.
        public static int Run(int rounds)
        {
            for (int i = 0; i < rounds; i++)
            {
                var ready = new ManualResetEventSlim(false);
                Thread t;
                lock (Gate)
                {
                    t = new Thread(() => Waiter(ready));
                    t.Start();
                    ready.Wait();
                    Thread.Sleep(50);
                }
                t.Join();
            }
            Console.WriteLine("rounds " + rounds + " entered " + entered);
            return 0;
        }
    }

    public static class Locks
    {
        static readonly object Gate = new object();
        static long counter;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Worker(int count)
        {
            for (int i = 0; i < count; i++)
            {
                lock (Gate)
                {
                    counter += i & 7;
                    if ((i & 4095) == 0) Thread.Sleep(1);  // the others block meanwhile: real contentions
                }
            }
        }

        // Four threads taking one lock `count` times each (short critical sections, a 1 ms sleep in one of
        // 4096: contentions);
        // prints the runtime's own count of contentions (Monitor.LockContentionCount) in the run.
        public static int Run(int count)
        {
            long before = Monitor.LockContentionCount;
            var threads = new Thread[4];
            for (int t = 0; t < threads.Length; t++)
            {
                threads[t] = new Thread(() => Worker(count));
                threads[t].Start();
            }
            foreach (var t in threads) t.Join();
            Console.WriteLine("counter " + counter + " contentions " + (Monitor.LockContentionCount - before));
            return 0;
        }
    }

    // server PORT: an HttpListener (no ASP.NET Core) on 127.0.0.1:PORT. Each request to / costs a few
    // milliseconds of CPU on the thread pool (Handle); /quit ends the run. A thread named
    // mlpd-idle blocks for the whole run, and the listener's own threads wait between bursts: the
    // sampling tests check that none of them is charged. Prints "listening" when ready, "server done".
    public static class Server
    {
        static readonly ManualResetEventSlim Done = new ManualResetEventSlim(false);

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Compute(int n)
        {
            long x = n;
            for (int i = 0; i < n; i++) x += i ^ (x >> 3);
            return x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Handle(HttpListenerContext context)
        {
            byte[] body = System.Text.Encoding.ASCII.GetBytes("value " + Compute(1000000) + "\n");
            context.Response.ContentLength64 = body.Length;
            context.Response.OutputStream.Write(body, 0, body.Length);
            context.Response.Close();
        }

        public static int Run(int port)
        {
            var idle = new Thread(() => Done.Wait()) { Name = "mlpd-idle", IsBackground = true };
            idle.Start();
            var listener = new HttpListener();
            listener.Prefixes.Add("http://127.0.0.1:" + port + "/");
            listener.Start();
            Console.WriteLine("listening");
            Console.Out.Flush();
            while (true)
            {
                HttpListenerContext context = listener.GetContext();
                if (context.Request.Url.AbsolutePath == "/quit")
                {
                    context.Response.Close();
                    break;
                }
                ThreadPool.UnsafeQueueUserWorkItem(c => Handle((HttpListenerContext)c), context);
            }
            Done.Set();
            listener.Stop();
            Console.WriteLine("server done");
            return 0;
        }
    }

    // dynamic ROUNDS: each round compiles a new System.Linq.Expressions lambda (a dynamic method: a loop
    // of a few million steps), runs it, and drops it; collections in between unload the dropped ones'
    // code, so later lambdas may be given the same addresses.
    public static class Dynamic
    {
        static Func<long, long> Build(long steps)
        {
            ParameterExpression x = Expression.Parameter(typeof(long), "x");
            ParameterExpression i = Expression.Variable(typeof(long), "i");
            ParameterExpression acc = Expression.Variable(typeof(long), "acc");
            LabelTarget end = Expression.Label(typeof(long));
            Expression body = Expression.Block(new[] { i, acc },
                Expression.Assign(acc, x),
                Expression.Assign(i, Expression.Constant(0L)),
                Expression.Loop(
                    Expression.IfThenElse(
                        Expression.LessThan(i, Expression.Constant(steps)),
                        Expression.Block(
                            Expression.AddAssign(acc, Expression.ExclusiveOr(i, Expression.RightShift(acc, Expression.Constant(3)))),
                            Expression.PostIncrementAssign(i)),
                        Expression.Break(end, acc)),
                    end));
            return Expression.Lambda<Func<long, long>>(body, x).Compile();
        }

        public static int Run(int rounds)
        {
            long total = 0;
            for (int r = 0; r < rounds; r++)
            {
                total += Build(20_000_000 + r)(r);
                if (r % 10 == 9) { GC.Collect(); GC.WaitForPendingFinalizers(); }
            }
            Console.WriteLine("dynamic " + rounds + " " + (total != 42 ? "done" : "odd"));
            return 0;
        }
    }

    // recurse DEPTH MS: Down calls itself DEPTH times (not a tail call), then spins MS milliseconds at the
    // bottom: samples there carry the whole chain up to Main, or are cut with the explicit marker.
    public static class Recursion
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Down(int depth, int ms)
        {
            if (depth == 0) return Busy.Spin(ms);
            return Down(depth - 1, ms) + 1;
        }

        public static int Run(int depth, int ms)
        {
            Console.WriteLine("recurse " + depth + " " + (Down(depth, ms) != 42 ? "done" : "odd"));
            return 0;
        }
    }

    // `calls N DEPTH` (tests/integration/dotnet/test_calls.py): calls whose numbers the program knows,
    // each printed as "calls METHOD COUNT" (METHOD as mlpd names it), for the enter counts of the file:
    // a loop of small methods (inlined unless the profiler stops it), recursion DEPTH deep, exceptions
    // thrown through DEPTH frames, tail calls (IL `tail.` through Reflection.Emit: C# has none),
    // async methods that resume on the thread pool, and a worker thread.
    public static class CallCounts
    {
        static long leaves;

        static int Small(int a) => a + 1;  // small enough for the JIT to inline it

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Rec(int depth) => depth == 0 ? 0 : Rec(depth - 1) + 1;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Deep(int depth)
        {
            if (depth == 0) throw new InvalidOperationException("deep");
            Deep(depth - 1);
        }

        public static void Leaf(int i) { leaves += i; }

        // Arguments and return values in every kind of register the hooks must keep: floating-point
        // arguments (xmm0-7) beside integer ones, and 16-byte structs returned in rax:rdx and xmm0:xmm1.
        // The checksums are printed: a register the stubs lost would change the output.
        struct Two { public long A, B; }
        struct TwoD { public double X, Y; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static double Mix(double a, float b, long c, double d, double e, double f, double g, double h, double i, int j) =>
            a * 0.5 + b + c + d * 2 + e - f + g * h + i + j;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static Two Pair(long a, long b) => new Two { A = a * 3, B = b - 7 };

        [MethodImpl(MethodImplOptions.NoInlining)]
        static TwoD PairD(double x, double y) => new TwoD { X = x * 1.5, Y = y / 4 };

        static string Registers(int n)
        {
            double m = 0;
            long p = 0;
            double q = 0;
            for (int k = 0; k < n; k++)
            {
                m += Mix(k, 0.25f, k * 3L, 1.5, 2.5, 3.5, k * 0.125, 4.5, 5.5, k);
                var two = Pair(k, k + 1);
                p += two.A ^ two.B;
                var d = PairD(k, k + 0.5);
                q += d.X - d.Y;
            }
            return m.ToString("R") + " " + p + " " + q.ToString("R");
        }

        static async Task<int> Step(int i)
        {
            await Task.Yield();
            return i + 1;
        }

        static async Task<int> Steps(int n)
        {
            int s = 0;
            for (int i = 0; i < n; i++) s += await Step(i);
            return s;
        }

        // TailRec(n): `tail. call TailPong(n - 1)`, which does `tail. call TailRec(n - 1)`, down to 0 (n + 1
        // calls of TailRec, n of TailPong, each leaving by a tail call but the last; not a method tail
        // calling itself, which the JIT turns into a loop: docs/dotnet.md); TailLeaf(i): `tail. call
        // CallCounts.Leaf(i)`.
        static (MethodInfo rec, MethodInfo leaf) EmitTailCalls()
        {
            var asm = AssemblyBuilder.DefineDynamicAssembly(new AssemblyName("MlpdTail"), AssemblyBuilderAccess.Run);
            var mod = asm.DefineDynamicModule("MlpdTail");
            var type = mod.DefineType("MlpdTail.Tails", TypeAttributes.Public | TypeAttributes.Abstract | TypeAttributes.Sealed);
            var rec = type.DefineMethod("TailRec", MethodAttributes.Public | MethodAttributes.Static, typeof(int), new[] { typeof(int) });
            var pong = type.DefineMethod("TailPong", MethodAttributes.Public | MethodAttributes.Static, typeof(int), new[] { typeof(int) });
            var il = pong.GetILGenerator();
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Tailcall);
            il.Emit(OpCodes.Call, rec);
            il.Emit(OpCodes.Ret);
            il = rec.GetILGenerator();
            var more = il.DefineLabel();
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Brtrue_S, more);
            il.Emit(OpCodes.Ldc_I4_0);
            il.Emit(OpCodes.Ret);
            il.MarkLabel(more);
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Ldc_I4_1);
            il.Emit(OpCodes.Sub);
            il.Emit(OpCodes.Tailcall);
            il.Emit(OpCodes.Call, pong);
            il.Emit(OpCodes.Ret);
            var leaf = type.DefineMethod("TailLeaf", MethodAttributes.Public | MethodAttributes.Static, typeof(void), new[] { typeof(int) });
            il = leaf.GetILGenerator();
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Tailcall);
            il.Emit(OpCodes.Call, typeof(CallCounts).GetMethod("Leaf"));
            il.Emit(OpCodes.Ret);
            var t = type.CreateType();
            return (t.GetMethod("TailRec"), t.GetMethod("TailLeaf"));
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Worker(int n)
        {
            int s = 0;
            for (int i = 0; i < n; i++) s = Small(s);
            return s;
        }

        public static int Run(int n, int depth)
        {
            int s = 0;
            for (int i = 0; i < n; i++) s = Small(s);
            long r = 0;
            for (int i = 0; i < 10; i++) r += Rec(depth);
            int caught = 0;
            for (int i = 0; i < 10; i++)
            {
                try { Deep(depth); }
                catch (InvalidOperationException) { caught++; }
            }
            var (tailRec, tailLeaf) = EmitTailCalls();
            var rargs = new object[] { depth };
            for (int i = 0; i < 10; i++) tailRec.Invoke(null, rargs);
            for (int i = 0; i < n; i++) tailLeaf.Invoke(null, new object[] { i });
            int a = Steps(n / 10).GetAwaiter().GetResult();
            int w = 0;
            var th = new Thread(() => { w = Worker(n); });
            th.Start();
            th.Join();
            Console.WriteLine("calls MlpdTests.CallCounts:Small (int) " + (2 * n));
            Console.WriteLine("calls MlpdTests.CallCounts:Rec (int) " + 10 * (depth + 1));
            Console.WriteLine("calls MlpdTests.CallCounts:Deep (int) " + 10 * (depth + 1));
            Console.WriteLine("calls MlpdTail.Tails:TailRec (int) " + 10 * (depth + 1));
            Console.WriteLine("calls MlpdTail.Tails:TailPong (int) " + 10 * depth);
            Console.WriteLine("calls MlpdTail.Tails:TailLeaf (int) " + n);
            Console.WriteLine("calls MlpdTests.CallCounts:Leaf (int) " + n);
            Console.WriteLine("calls MlpdTests.CallCounts:Step (int) " + (n / 10));
            Console.WriteLine("calls MlpdTests.CallCounts:Steps (int) 1");
            Console.WriteLine("calls MlpdTests.CallCounts:Worker (int) 1");
            Console.WriteLine("calls MlpdTests.CallCounts:Run (int,int) 1");
            Console.WriteLine("check " + s + " " + r + " " + caught + " " + a + " " + w + " " + leaves + " " + Registers(n));
            return 0;
        }
    }

    // `callbench N` (tests/bench/dotnet_calls.sh): N calls of small methods, the cost of `calls`. The
    // same program is tests/programs/callbench.cs for Mono (compiled by mcs).
    public static class CallBench
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Add(int a, int b) => a + b;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Twice(int a) => Add(a, a) & 0xffff;

        public static int Run(int n)
        {
            int s = 0;
            for (int i = 0; i < n; i++) s = Twice(s + i);
            Console.WriteLine("callbench " + n + " " + s);
            return 0;
        }
    }
}

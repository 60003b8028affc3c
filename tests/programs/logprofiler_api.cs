// Mono.Profiler.Log.LogProfiler, the managed run-time control API of the log profiler, used from a
// program: is a profiler attached, what are its settings, and do changes take effect (allocation events
// switched off and on around known allocations). Compiled with -r:Mono.Profiler.Log.dll.
//
// Output (deterministic for a given profiler and options):
//   attached: True|False
//   get NAME VALUE            a setting as read
//   set NAME VALUE -> READ    a public setter, then the value read back (must be equal)
//   raw NAME(ARG) -> READ     a private internal call reached with reflection, bypassing the managed
//                             argument checks (how a profiler treats bad values: clamp or ignore)
//   rejected NAME(ARG): TYPE  the public setter refused the value itself
//   alloc ...                 the allocation phases
// Allocations: 1000 Hidden with allocation events off, 2000 Visible with them on, 500 Hidden off again.
// Without a profiler only the allocations run (and one setter is tried, to show it fails cleanly).
//
// The `raw` lines are printed only with the argument `raw`: Mono 6.8's own log profiler stores such
// values unchecked, and some of them abort it (a sample mode of 9 trips an assertion in the runtime's
// sampler thread; a heapshot mode of 9 one at the next collection).
using System;
using System.Reflection;
using System.Runtime.CompilerServices;
using Mono.Profiler.Log;

class Hidden {
    public Hidden Next;
    public Hidden(Hidden next) { Next = next; }
}

class Visible {
    public Visible Next;
    public Visible(Visible next) { Next = next; }
}

static class LogProfilerApiProgram {
    static Hidden hidden;
    static Visible visible;

    static void AllocateHidden(int n) {
        for (int i = 0; i < n; i++)
            hidden = new Hidden(hidden);
    }

    static void AllocateVisible(int n) {
        for (int i = 0; i < n; i++)
            visible = new Visible(visible);
    }

    static int Count(Hidden h) { int n = 0; for (; h != null; h = h.Next) n++; return n; }
    static int Count(Visible v) { int n = 0; for (; v != null; v = v.Next) n++; return n; }

    static void PrintSettings(string when) {
        Console.WriteLine("settings " + when);
        Console.WriteLine("get MaxStackTraceFrames " + LogProfiler.MaxStackTraceFrames);
        Console.WriteLine("get StackTraceFrames " + LogProfiler.StackTraceFrames);
        Console.WriteLine("get CallDepth " + LogProfiler.CallDepth);
        Console.WriteLine("get HeapshotMode " + LogProfiler.HeapshotMode);
        Console.WriteLine("get HeapshotMillisecondsFrequency " + LogProfiler.HeapshotMillisecondsFrequency);
        Console.WriteLine("get HeapshotCollectionsFrequency " + LogProfiler.HeapshotCollectionsFrequency);
        Console.WriteLine("get SampleMode " + LogProfiler.SampleMode);
        Console.WriteLine("get SampleFrequency " + LogProfiler.SampleFrequency);
        Console.WriteLine("get ExceptionEventsEnabled " + LogProfiler.ExceptionEventsEnabled);
        Console.WriteLine("get MonitorEventsEnabled " + LogProfiler.MonitorEventsEnabled);
        Console.WriteLine("get GCEventsEnabled " + LogProfiler.GCEventsEnabled);
        Console.WriteLine("get GCAllocationEventsEnabled " + LogProfiler.GCAllocationEventsEnabled);
        Console.WriteLine("get GCMoveEventsEnabled " + LogProfiler.GCMoveEventsEnabled);
        Console.WriteLine("get GCRootEventsEnabled " + LogProfiler.GCRootEventsEnabled);
        Console.WriteLine("get GCHandleEventsEnabled " + LogProfiler.GCHandleEventsEnabled);
        Console.WriteLine("get GCFinalizationEventsEnabled " + LogProfiler.GCFinalizationEventsEnabled);
        Console.WriteLine("get CounterEventsEnabled " + LogProfiler.CounterEventsEnabled);
        Console.WriteLine("get JitEventsEnabled " + LogProfiler.JitEventsEnabled);
    }

    static void Set(string name, object value, object read) {
        Console.WriteLine("set " + name + " " + value + " -> " + read);
    }

    // Flips one event switch and back, reporting both reads.
    static void Toggle(string name, Func<bool> get, Action<bool> set) {
        bool before = get();
        set(!before);
        Set(name, !before, get());
        set(before);
        Set(name, before, get());
    }

    static object Raw(string name, params object[] args) {
        MethodInfo m = typeof(LogProfiler).GetMethod(name, BindingFlags.NonPublic | BindingFlags.Static);
        return m.Invoke(null, args);
    }

    static void Rejected(string name, object arg, Action set) {
        try {
            set();
            Console.WriteLine("accepted " + name + "(" + arg + ")");
        } catch (ArgumentException e) {
            Console.WriteLine("rejected " + name + "(" + arg + "): " + e.GetType().Name);
        }
    }

    static int Main(string[] args) {
        bool attached = LogProfiler.IsAttached;
        Console.WriteLine("attached: " + attached);
        if (attached)
            Exercise(args.Length > 0 && args[0] == "raw");
        else
            Unattached();
        return 0;
    }

    // Separate methods, never inlined: the JIT resolves the internal calls of the methods it compiles
    // (and Mono prints a warning for each missing one), so only the path taken is compiled.
    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Unattached() {
        try {
            LogProfiler.CallDepth = 5;
            Console.WriteLine("CallDepth set without a profiler");
        } catch (MissingMethodException e) {
            Console.WriteLine("without a profiler: " + e.GetType().Name);
        }
        AllocateHidden(1000);
        AllocateVisible(2000);
        AllocateHidden(500);
        Console.WriteLine("alloc Hidden " + Count(hidden) + " Visible " + Count(visible));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    static void Exercise(bool raw) {
        PrintSettings("initial");

        // Allocation events: off, 1000 Hidden; on, 2000 Visible; off, 500 Hidden.
        LogProfiler.GCAllocationEventsEnabled = false;
        bool off1 = LogProfiler.GCAllocationEventsEnabled;
        AllocateHidden(1000);
        LogProfiler.GCAllocationEventsEnabled = true;
        bool on = LogProfiler.GCAllocationEventsEnabled;
        AllocateVisible(2000);
        LogProfiler.GCAllocationEventsEnabled = false;
        bool off2 = LogProfiler.GCAllocationEventsEnabled;
        AllocateHidden(500);
        Set("GCAllocationEventsEnabled", false, off1);
        Set("GCAllocationEventsEnabled", true, on);
        Set("GCAllocationEventsEnabled", false, off2);
        Console.WriteLine("alloc Hidden " + Count(hidden) + " Visible " + Count(visible));

        // Depths.
        LogProfiler.CallDepth = 7;
        Set("CallDepth", 7, LogProfiler.CallDepth);
        LogProfiler.StackTraceFrames = 5;
        Set("StackTraceFrames", 5, LogProfiler.StackTraceFrames);
        LogProfiler.StackTraceFrames = LogProfiler.MaxStackTraceFrames;
        Set("StackTraceFrames", LogProfiler.MaxStackTraceFrames, LogProfiler.StackTraceFrames);
        LogProfiler.StackTraceFrames = 0;
        Set("StackTraceFrames", 0, LogProfiler.StackTraceFrames);
        LogProfiler.StackTraceFrames = 8;
        Set("StackTraceFrames", 8, LogProfiler.StackTraceFrames);

        // Heapshot settings (frequencies first: a mode with a zero frequency divides by zero in Mono 6.8).
        LogProfiler.HeapshotMillisecondsFrequency = 250;
        Set("HeapshotMillisecondsFrequency", 250, LogProfiler.HeapshotMillisecondsFrequency);
        LogProfiler.HeapshotCollectionsFrequency = 3;
        Set("HeapshotCollectionsFrequency", 3, LogProfiler.HeapshotCollectionsFrequency);
        foreach (LogHeapshotMode mode in new[] { LogHeapshotMode.EveryMajor, LogHeapshotMode.OnDemand,
                                                 LogHeapshotMode.Milliseconds, LogHeapshotMode.Collections,
                                                 LogHeapshotMode.None }) {
            LogProfiler.HeapshotMode = mode;
            Set("HeapshotMode", mode, LogProfiler.HeapshotMode);
        }
        LogProfiler.TriggerHeapshot();
        Console.WriteLine("called TriggerHeapshot");

        // Sampling.
        bool applied = LogProfiler.SetSampleParameters(LogSampleMode.Real, 250);
        Console.WriteLine("SetSampleParameters(Real, 250) returned " + applied);
        Set("SampleMode", LogSampleMode.Real, LogProfiler.SampleMode);
        Set("SampleFrequency", 250, LogProfiler.SampleFrequency);
        LogProfiler.SetSampleParameters(LogSampleMode.None, 100);
        Set("SampleMode", LogSampleMode.None, LogProfiler.SampleMode);
        Set("SampleFrequency", 100, LogProfiler.SampleFrequency);

        // Every other event switch, flipped and restored.
        Toggle("ExceptionEventsEnabled", () => LogProfiler.ExceptionEventsEnabled, v => LogProfiler.ExceptionEventsEnabled = v);
        Toggle("MonitorEventsEnabled", () => LogProfiler.MonitorEventsEnabled, v => LogProfiler.MonitorEventsEnabled = v);
        Toggle("GCEventsEnabled", () => LogProfiler.GCEventsEnabled, v => LogProfiler.GCEventsEnabled = v);
        Toggle("GCMoveEventsEnabled", () => LogProfiler.GCMoveEventsEnabled, v => LogProfiler.GCMoveEventsEnabled = v);
        Toggle("GCRootEventsEnabled", () => LogProfiler.GCRootEventsEnabled, v => LogProfiler.GCRootEventsEnabled = v);
        Toggle("GCHandleEventsEnabled", () => LogProfiler.GCHandleEventsEnabled, v => LogProfiler.GCHandleEventsEnabled = v);
        Toggle("GCFinalizationEventsEnabled", () => LogProfiler.GCFinalizationEventsEnabled, v => LogProfiler.GCFinalizationEventsEnabled = v);
        Toggle("CounterEventsEnabled", () => LogProfiler.CounterEventsEnabled, v => LogProfiler.CounterEventsEnabled = v);
        Toggle("JitEventsEnabled", () => LogProfiler.JitEventsEnabled, v => LogProfiler.JitEventsEnabled = v);

        // Bad values: the public setters refuse them ...
        Rejected("CallDepth", -1, () => LogProfiler.CallDepth = -1);
        Rejected("StackTraceFrames", 33, () => LogProfiler.StackTraceFrames = 33);
        Rejected("HeapshotMillisecondsFrequency", -5, () => LogProfiler.HeapshotMillisecondsFrequency = -5);
        Rejected("HeapshotMode", 9, () => LogProfiler.HeapshotMode = (LogHeapshotMode) 9);
        Rejected("SetSampleParameters", 0, () => LogProfiler.SetSampleParameters(LogSampleMode.Process, 0));
        // ... and the internal calls behind them must survive them anyway.
        if (raw)
            RawBadValues();

        // Leave the profiler in a sane state: no heapshots, depths back to sensible values.
        LogProfiler.HeapshotMode = LogHeapshotMode.None;
        LogProfiler.CallDepth = 100;
        LogProfiler.StackTraceFrames = 8;
        PrintSettings("final");
    }

    static void RawBadValues() {
        Raw("SetCallDepth", -1);
        Console.WriteLine("raw SetCallDepth(-1) -> " + LogProfiler.CallDepth);
        Raw("SetStackTraceFrames", -3);
        Console.WriteLine("raw SetStackTraceFrames(-3) -> " + LogProfiler.StackTraceFrames);
        Raw("SetStackTraceFrames", 1000);
        Console.WriteLine("raw SetStackTraceFrames(1000) -> " + LogProfiler.StackTraceFrames);
        Raw("SetHeapshotMillisecondsFrequency", -5);
        Console.WriteLine("raw SetHeapshotMillisecondsFrequency(-5) -> " + LogProfiler.HeapshotMillisecondsFrequency);
        Raw("SetHeapshotCollectionsFrequency", int.MinValue);
        Console.WriteLine("raw SetHeapshotCollectionsFrequency(MinValue) -> " + LogProfiler.HeapshotCollectionsFrequency);
        Raw("SetHeapshotMode", (LogHeapshotMode) 9);
        Console.WriteLine("raw SetHeapshotMode(9) -> " + (int) LogProfiler.HeapshotMode);
        LogProfiler.HeapshotMode = LogHeapshotMode.None;  // at once, before a collection sees it
        object r = Raw("SetSampleMode", (LogSampleMode) 9, 100);
        Console.WriteLine("raw SetSampleMode(9, 100) returned " + r + " -> " + (int) LogProfiler.SampleMode + " " + LogProfiler.SampleFrequency);
        r = Raw("SetSampleMode", LogSampleMode.Process, 0);
        Console.WriteLine("raw SetSampleMode(Process, 0) returned " + r + " -> " + LogProfiler.SampleMode + " " + LogProfiler.SampleFrequency);
        LogProfiler.SetSampleParameters(LogSampleMode.None, 100);
    }
}

// LogCount.cs - counts every event kind in an .mlpd file using Mono 6.8's
// Mono.Profiler.Log.dll (LogProcessor + LogEventVisitor).
//
// Build: mcs -r:/usr/lib/mono/4.5/Mono.Profiler.Log.dll -out:LogCount.exe LogCount.cs
// Usage: mono LogCount.exe FILE.mlpd [--detail]
// Output: one line "NAME COUNT" per kind with COUNT > 0, sorted by NAME (ordinal).
// With --detail, extra lines "detail.KEY VALUE" (sorted, after the normal lines) give
// totals comparable with mprof-report (see README.md):
//   detail.alloc_bytes               sum of AllocationEvent.ObjectSize
//   detail.alloc_no_backtrace        AllocationEvents without a backtrace (absent when none)
//   detail.gc_move_objects           sum of moved objects (pairs) over all GCMoveEvents
//   detail.heap_root_entries         sum of roots over all HeapRootsEvents
//   detail.gc_collections.genG       GCEvent Begin count per generation G
//   detail.gc_handle_created.T / detail.gc_handle_destroyed.T  per handle type
//                                    (weak, weaktrack, normal, pinned)
//   detail.monitor.E                 E = contention, done, fail
//   detail.exception_clause.C        C = catch, filter, finally, fault
//   detail.heapshot.N.objects / .bytes  per heapshot N (0-based, file order):
//                                    HeapObjectEvents with ObjectSize > 0 between
//                                    HeapBegin and HeapEnd (continuation chunks of big
//                                    objects carry size 0 and are not objects)
// Errors: "ERROR: <type>: <message>" on stderr, exit code 2.
//
// Mapping Mono.Profiler.Log event class -> our name (the visitor has one
// Visit overload per class; backtrace variants are the same class):
//   AllocationEvent             -> alloc            (TYPE_ALLOC, with or without backtrace)
//   GCEvent                     -> gc_event         (TYPE_GC_EVENT)
//   GCResizeEvent               -> gc_resize
//   GCMoveEvent                 -> gc_move          (one per TYPE_GC_MOVE event, NOT per object)
//   GCHandleCreationEvent       -> gc_handle_created
//   GCHandleDeletionEvent       -> gc_handle_destroyed
//   GCFinalizeBeginEvent        -> gc_finalize_start
//   GCFinalizeEndEvent          -> gc_finalize_end
//   GCFinalizeObjectBeginEvent  -> gc_finalize_object_start
//   GCFinalizeObjectEndEvent    -> gc_finalize_object_end
//   ClassLoadEvent              -> class_load
//   ImageLoadEvent              -> image_load
//   ImageUnloadEvent            -> image_unload
//   AssemblyLoadEvent           -> assembly_load
//   AssemblyUnloadEvent         -> assembly_unload
//   AppDomainLoadEvent          -> domain_load
//   AppDomainUnloadEvent        -> domain_unload
//   AppDomainNameEvent          -> domain_name
//   ContextLoadEvent            -> context_load
//   ContextUnloadEvent          -> context_unload
//   ThreadStartEvent            -> thread_start
//   ThreadEndEvent              -> thread_end
//   ThreadNameEvent             -> thread_name
//   VTableLoadEvent             -> vtable_load
//   EnterEvent                  -> method_enter
//   LeaveEvent                  -> method_leave
//   ExceptionalLeaveEvent       -> method_exc_leave
//   JitEvent                    -> method_jit       (TYPE_METHOD|TYPE_JIT)
//   ThrowEvent                  -> exception_throw
//   ExceptionClauseEvent        -> exception_clause
//   MonitorEvent                -> monitor          (all of contention/done/fail)
//   HeapBeginEvent              -> heap_start
//   HeapEndEvent                -> heap_end
//   HeapObjectEvent             -> heap_object      (one per event; big objects are split
//                                                    into several events of <=128 refs)
//   HeapRootsEvent              -> heap_root        (one per TYPE_HEAP_ROOT event, not per root)
//   HeapRootRegisterEvent       -> heap_root_register
//   HeapRootUnregisterEvent     -> heap_root_unregister
//   SampleHitEvent              -> sample_hit
//   UnmanagedSymbolEvent        -> sample_usym
//   UnmanagedBinaryEvent        -> sample_ubin      (never written by Mono 6.8; extra name)
//   CounterDescriptionsEvent    -> counter_descriptors
//   CounterSamplesEvent         -> counter_samples
//   JitHelperEvent              -> jit_helper       (TYPE_RUNTIME|JITHELPER)
//   SynchronizationPointEvent   -> sync_point
//   AotIdEvent                  -> aot_id
//
// Notes: LogProcessor needs a seekable stream (EndOfStream compares Position
// with Length) and does not understand gzip; a file starting with the gzip
// magic (1F 8B) is therefore decompressed into memory first, by `gzip -dc`:
// our `zip` files are several gzip members in a row (one per flush round),
// and Mono's GZipStream stops after the first member.
#pragma warning disable 618 // UnmanagedBinaryEvent is obsolete (never produced by 6.8)
using System;
using System.Collections.Generic;
using System.IO;
using System.IO.Compression;
using Mono.Profiler.Log;

sealed class CountingVisitor : LogEventVisitor
{
    public readonly Dictionary<string, long> Counts = new Dictionary<string, long>(StringComparer.Ordinal);

    public readonly Dictionary<string, long> Details = new Dictionary<string, long>(StringComparer.Ordinal);
    int heapshotIndex = -1;
    bool inHeapshot;

    void Add(string name)
    {
        long c;
        Counts.TryGetValue(name, out c);
        Counts[name] = c + 1;
    }

    void AddDetail(string key, long amount)
    {
        long c;
        Details.TryGetValue(key, out c);
        Details[key] = c + amount;
    }

    static string HandleName(LogGCHandleType t)
    {
        switch (t) {
        case LogGCHandleType.Weak: return "weak";
        case LogGCHandleType.WeakTrackResurrection: return "weaktrack";
        case LogGCHandleType.Normal: return "normal";
        case LogGCHandleType.Pinned: return "pinned";
        default: return ((int)t).ToString();
        }
    }

    public override void Visit(AllocationEvent ev) {
        Add("alloc");
        AddDetail("alloc_bytes", ev.ObjectSize);
        if (ev.Backtrace == null || ev.Backtrace.Count == 0) AddDetail("alloc_no_backtrace", 1);
    }
    public override void Visit(GCEvent ev)
    {
        Add("gc_event");
        if (ev.Type == LogGCEvent.Begin)
            AddDetail("gc_collections.gen" + ev.Generation, 1);
    }
    public override void Visit(GCResizeEvent ev) { Add("gc_resize"); }
    public override void Visit(GCMoveEvent ev) { Add("gc_move"); AddDetail("gc_move_objects", ev.OldObjectPointers.Count); }
    public override void Visit(GCHandleCreationEvent ev) { Add("gc_handle_created"); AddDetail("gc_handle_created." + HandleName(ev.Type), 1); }
    public override void Visit(GCHandleDeletionEvent ev) { Add("gc_handle_destroyed"); AddDetail("gc_handle_destroyed." + HandleName(ev.Type), 1); }
    public override void Visit(GCFinalizeBeginEvent ev) { Add("gc_finalize_start"); }
    public override void Visit(GCFinalizeEndEvent ev) { Add("gc_finalize_end"); }
    public override void Visit(GCFinalizeObjectBeginEvent ev) { Add("gc_finalize_object_start"); }
    public override void Visit(GCFinalizeObjectEndEvent ev) { Add("gc_finalize_object_end"); }
    public override void Visit(ClassLoadEvent ev) { Add("class_load"); }
    public override void Visit(ImageLoadEvent ev) { Add("image_load"); }
    public override void Visit(ImageUnloadEvent ev) { Add("image_unload"); }
    public override void Visit(AssemblyLoadEvent ev) { Add("assembly_load"); }
    public override void Visit(AssemblyUnloadEvent ev) { Add("assembly_unload"); }
    public override void Visit(AppDomainLoadEvent ev) { Add("domain_load"); }
    public override void Visit(AppDomainUnloadEvent ev) { Add("domain_unload"); }
    public override void Visit(AppDomainNameEvent ev) { Add("domain_name"); }
    public override void Visit(ContextLoadEvent ev) { Add("context_load"); }
    public override void Visit(ContextUnloadEvent ev) { Add("context_unload"); }
    public override void Visit(ThreadStartEvent ev) { Add("thread_start"); }
    public override void Visit(ThreadEndEvent ev) { Add("thread_end"); }
    public override void Visit(ThreadNameEvent ev) { Add("thread_name"); }
    public override void Visit(VTableLoadEvent ev) { Add("vtable_load"); }
    public override void Visit(EnterEvent ev) { Add("method_enter"); }
    public override void Visit(LeaveEvent ev) { Add("method_leave"); }
    public override void Visit(ExceptionalLeaveEvent ev) { Add("method_exc_leave"); }
    public override void Visit(JitEvent ev) { Add("method_jit"); }
    public override void Visit(ThrowEvent ev) { Add("exception_throw"); }
    public override void Visit(ExceptionClauseEvent ev) { Add("exception_clause"); AddDetail("exception_clause." + ev.Type.ToString().ToLowerInvariant(), 1); }
    public override void Visit(MonitorEvent ev) { Add("monitor"); AddDetail("monitor." + ev.Event.ToString().ToLowerInvariant(), 1); }
    public override void Visit(HeapBeginEvent ev)
    {
        Add("heap_start");
        heapshotIndex++;
        inHeapshot = true;
        AddDetail("heapshot." + heapshotIndex + ".objects", 0);
        AddDetail("heapshot." + heapshotIndex + ".bytes", 0);
    }
    public override void Visit(HeapEndEvent ev) { Add("heap_end"); inHeapshot = false; }
    public override void Visit(HeapObjectEvent ev)
    {
        Add("heap_object");
        if (inHeapshot && ev.ObjectSize > 0) {
            AddDetail("heapshot." + heapshotIndex + ".objects", 1);
            AddDetail("heapshot." + heapshotIndex + ".bytes", ev.ObjectSize);
        }
    }
    public override void Visit(HeapRootsEvent ev) { Add("heap_root"); AddDetail("heap_root_entries", ev.Roots.Count); }
    public override void Visit(HeapRootRegisterEvent ev) { Add("heap_root_register"); }
    public override void Visit(HeapRootUnregisterEvent ev) { Add("heap_root_unregister"); }
    public override void Visit(SampleHitEvent ev) { Add("sample_hit"); }
    public override void Visit(UnmanagedSymbolEvent ev) { Add("sample_usym"); }
    public override void Visit(UnmanagedBinaryEvent ev) { Add("sample_ubin"); }
    public override void Visit(CounterDescriptionsEvent ev) { Add("counter_descriptors"); }
    public override void Visit(CounterSamplesEvent ev) { Add("counter_samples"); }
    public override void Visit(JitHelperEvent ev) { Add("jit_helper"); }
    public override void Visit(SynchronizationPointEvent ev) { Add("sync_point"); }
    public override void Visit(AotIdEvent ev) { Add("aot_id"); }
}

static class LogCount
{
    static Stream Open(string path)
    {
        byte[] data = File.ReadAllBytes(path);
        if (data.Length >= 2 && data[0] == 0x1F && data[1] == 0x8B) {
            var outMs = new MemoryStream();
            var psi = new System.Diagnostics.ProcessStartInfo("gzip", "-dc") {
                UseShellExecute = false, RedirectStandardInput = true, RedirectStandardOutput = true };
            using (var gz = System.Diagnostics.Process.Start(psi)) {
                var feed = new System.Threading.Thread(() => {
                    gz.StandardInput.BaseStream.Write(data, 0, data.Length);
                    gz.StandardInput.Close();
                });
                feed.Start();
                gz.StandardOutput.BaseStream.CopyTo(outMs);
                feed.Join();
                gz.WaitForExit();
                if (gz.ExitCode != 0) throw new InvalidDataException("gzip -dc failed on " + path);
            }
            outMs.Position = 0;
            return outMs;
        }
        return new MemoryStream(data, false);
    }

    static int Main(string[] args)
    {
        try {
            bool detail = args.Length == 2 && args[1] == "--detail";
            if (args.Length != 1 && !detail)
                throw new ArgumentException("usage: LogCount.exe FILE.mlpd [--detail]");
            var visitor = new CountingVisitor();
            using (var stream = new LogStream(Open(args[0]))) {
                var processor = new LogProcessor(stream, visitor, null);
                processor.Process();
            }
            var names = new List<string>(visitor.Counts.Keys);
            names.Sort(StringComparer.Ordinal);
            var stdout = Console.Out;
            foreach (var n in names)
                if (visitor.Counts[n] > 0)
                    stdout.Write(n + " " + visitor.Counts[n] + "\n");
            if (detail) {
                var keys = new List<string>(visitor.Details.Keys);
                keys.Sort(StringComparer.Ordinal);
                foreach (var k in keys)
                    stdout.Write("detail." + k + " " + visitor.Details[k] + "\n");
            }
            stdout.Flush();
            return 0;
        } catch (Exception e) {
            Console.Error.WriteLine("ERROR: " + e.GetType().FullName + ": " + e.Message);
            return 2;
        }
    }
}

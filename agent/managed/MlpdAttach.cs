// The managed agent of `mlpd attach` (docs/attach.md). Mono's attach listener loads this assembly into
// the running program and calls Main on its "Attach receiver" thread with one argument: the path of a
// request file `mlpd attach` wrote in the runtime's own 0700 directory (Mono's protocol carries short
// strings only). The request is three lines: the absolute path of libmlpd.so (the installed one,
// checked by `mlpd attach`), the path of the answer file, and the command ("attach OPTIONS", "detach").
// The library is loaded by that path and its entry called through a function pointer: no DllImport
// search path (nothing is looked for in a writable place). After an attach a background thread serves
// the later commands and the descriptions of methods compiled before the attach (mlpd_attach_serve,
// while profiling runs); Mono's own receiver thread is ended (attach_entry.cpp says why). Once
// detached the control thread ends; a later `mlpd attach` wakes the native side, which calls
// StartControl back (on the runtime's finalizer thread) for a new one.
// Everything is caught: nothing of ours may reach the program.
using System;
using System.Runtime.InteropServices;
using System.Threading;
// (System.IO.File: mscorlib.)

static class MlpdAttach
{
	[DllImport ("libdl.so.2")]
	static extern IntPtr dlopen (string file, int mode);
	[DllImport ("libdl.so.2")]
	static extern IntPtr dlsym (IntPtr handle, string name);

	[UnmanagedFunctionPointer (CallingConvention.Cdecl)]
	delegate int CommandFn ([MarshalAs (UnmanagedType.LPStr)] string command, [MarshalAs (UnmanagedType.LPStr)] string answer);
	[UnmanagedFunctionPointer (CallingConvention.Cdecl)]
	delegate void ServeFn ();
	[UnmanagedFunctionPointer (CallingConvention.Cdecl)]
	delegate void SetRestartFn (IntPtr fn);

	const int RTLD_NOW = 2;
	static bool exitHooked;
	static ServeFn release;  // kept alive: the runtime calls it at exit

	static bool controlStarted;
	static ServeFn serveFn;       // mlpd_attach_serve
	static ServeFn restartFn;     // StartControl, kept alive: the native side calls it when woken

	static void StartControl ()
	{
		try {
			var t = new Thread (() => { try { serveFn (); } catch { } });
			t.IsBackground = true;
			t.Name = "mlpd-control";
			t.Start ();
		} catch {
		}
	}

	static int Main (string[] args)
	{
		try {
			// The receiver thread must never hold up the program's exit.
			Thread.CurrentThread.IsBackground = true;
			if (args.Length != 1)
				return 2;
			string request = System.IO.File.ReadAllText (args [0]);
			System.IO.File.Delete (args [0]);
			string[] parts = request.Split (new char[] { '\n' }, 3);
			if (parts.Length != 3 || !parts [0].StartsWith ("/"))
				return 2;
			IntPtr lib = dlopen (parts [0], RTLD_NOW);
			if (lib == IntPtr.Zero)
				return 3;
			IntPtr command = dlsym (lib, "mlpd_attach_command");
			IntPtr serve = dlsym (lib, "mlpd_attach_serve");
			IntPtr exiting = dlsym (lib, "mlpd_attach_exiting");
			IntPtr releaseListener = dlsym (lib, "mlpd_attach_release");
			IntPtr setRestart = dlsym (lib, "mlpd_attach_set_restart");
			if (command == IntPtr.Zero || serve == IntPtr.Zero || exiting == IntPtr.Zero || releaseListener == IntPtr.Zero || setRestart == IntPtr.Zero)
				return 3;
			// Mono's shutdown waits for every thread it knows, background ones too, once ProcessExit has
			// run: mlpd_attach_exiting ends our control thread (agent/src/attach_entry.cpp).
			if (!exitHooked) {
				exitHooked = true;
				release = (ServeFn) Marshal.GetDelegateForFunctionPointer (exiting, typeof (ServeFn));
				AppDomain.CurrentDomain.ProcessExit += (s, e) => { try { release (); } catch { } };
			}
			var run = (CommandFn) Marshal.GetDelegateForFunctionPointer (command, typeof (CommandFn));
			int rc = run (parts [2], parts [1]);
			if (!controlStarted) {
				controlStarted = true;
				serveFn = (ServeFn) Marshal.GetDelegateForFunctionPointer (serve, typeof (ServeFn));
				restartFn = StartControl;
				((SetRestartFn) Marshal.GetDelegateForFunctionPointer (setRestart, typeof (SetRestartFn))) (
					Marshal.GetFunctionPointerForDelegate (restartFn));
				StartControl ();
			}
			// Mono's receiver stalls every collection while it waits for a connection: it ends when
			// `mlpd attach` disconnects; later commands come through the control thread.
			((ServeFn) Marshal.GetDelegateForFunctionPointer (releaseListener, typeof (ServeFn))) ();
			return rc;
		} catch {
			return 4;
		}
	}
}

#!/usr/bin/env python3
"""The Debian package (issue 12): `cpack -G DEB` in this build directory (argv[1]) makes
mlpd_VERSION_amd64.deb with its dependencies declared; unpacked into a scratch root (`dpkg -x`) it holds
mlpd, libmlpd.so and the Mono profiler module beside Debian's own libmono-profiler-log.so (where
`mono --profile=mlpd` finds it); the unpacked agent profiles a program and the unpacked mlpd verifies the
file; `mlpd --version` and `mlpd --help` are what help2man needs."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mlpdtest as t  # noqa: E402


def clean_env(**kw):
    env = {k: v for k, v in os.environ.items() if k not in ("MLPD_OPTIONS", "LD_PRELOAD", "LD_LIBRARY_PATH")}
    env.update(kw)
    return env


def main():
    build = sys.argv[1]
    if not shutil.which("cpack") or not shutil.which("dpkg-deb"):
        print("skip: cpack or dpkg-deb missing", flush=True)
        t.finish("package")
    with tempfile.TemporaryDirectory(prefix="mlpd-deb-") as work:
        p = t.run(["cpack", "-G", "DEB", "--config", os.path.join(build, "CPackConfig.cmake"), "-B", work],
                  timeout=240)
        t.check(p.returncode == 0, f"cpack failed ({p.returncode}): {p.stdout[-800:]} {p.stderr[-800:]}")
        debs = [f for f in os.listdir(work) if f.endswith(".deb")]
        version = t.run([t.MLPD, "--version"]).stdout.split()[1]
        t.check(debs == [f"mlpd_{version}_amd64.deb"], f"package files {debs}, expected mlpd_{version}_amd64.deb")
        if not debs:
            t.finish("package")
        deb = os.path.join(work, debs[0])
        fields = {}
        for key in ("Package", "Version", "Architecture", "Depends", "Description"):
            fields[key] = t.run(["dpkg-deb", "-f", deb, key]).stdout.strip()
        t.check(fields["Package"] == "mlpd" and fields["Version"] == version and fields["Architecture"] == "amd64",
                f"control fields {fields}")
        for dep in ("libc6", "libstdc++6", "zlib1g", "mono-runtime"):
            t.check(re.search(rf"\b{re.escape(dep)}\b", fields["Depends"]), f"Depends lacks {dep}: {fields['Depends']!r}")
        # Where Debian's Mono keeps its own profiler modules.
        log_module = [l for l in t.run(["dpkg", "-L", "libmono-profiler"]).stdout.splitlines()
                      if l.endswith("/libmono-profiler-log.so")]
        mono_dir = os.path.dirname(log_module[0]) if log_module else "/usr/lib"
        listing = t.run(["dpkg-deb", "-c", deb]).stdout
        for path in ("./usr/bin/mlpd", "./usr/lib/libmlpd.so", f".{mono_dir}/libmono-profiler-mlpd.so",
                     "./usr/lib/mlpd/MlpdAttach.dll"):
            t.check(re.search(rf" {re.escape(path)}( -> libmlpd\.so)?$", listing, re.M),
                    f"the package lacks {path}:\n{listing}")
        if shutil.which("help2man"):
            t.check(" ./usr/share/man/man1/mlpd.1.gz" in listing, f"the package lacks the man page:\n{listing}")
        root = os.path.join(work, "root")
        p = t.run(["dpkg", "-x", deb, root])
        t.check(p.returncode == 0, f"dpkg -x failed: {p.stderr}")
        mlpd = os.path.join(root, "usr", "bin", "mlpd")
        agent = os.path.join(root, "usr", "lib", "libmlpd.so")
        p = t.run([mlpd, "--version"], env=clean_env())
        t.check(p.returncode == 0 and re.fullmatch(rf"mlpd {re.escape(version)}\b.*\n", p.stdout), f"--version: {p.stdout!r}")
        p = t.run([mlpd, "--help"], env=clean_env())
        t.check(p.returncode == 0 and p.stdout.startswith("Usage: mlpd ") and "--version" in p.stdout,
                f"--help (help2man reads 'Usage:' and the options): {p.stdout[:300]!r}")
        # Profile a program with the unpacked agent: LD_PRELOAD, then --profile=mlpd through the module
        # name (found here through LD_LIBRARY_PATH, as the scratch root is not /usr/lib).
        plain = t.run([t.MONO, t.program("alloc")], env=clean_env())
        for how, env, cmd in (
                ("LD_PRELOAD", clean_env(LD_PRELOAD=agent, MLPD_OPTIONS=f"alloc,output={work}/a.mlpd"),
                 [t.MONO, t.program("alloc")]),
                ("--profile=mlpd", clean_env(LD_LIBRARY_PATH=os.path.join(root, mono_dir.lstrip("/"))),
                 [t.MONO, f"--profile=mlpd:alloc,output={work}/b.mlpd", t.program("alloc")])):
            p = t.run(cmd, env=env, timeout=120)
            out = f"{work}/{'a' if how == 'LD_PRELOAD' else 'b'}.mlpd"
            t.check(p.returncode == plain.returncode and p.stdout == plain.stdout, f"{how}: program changed: {p.stderr[-300:]}")
            v = t.run([mlpd, "verify", "--strict", out], env=clean_env())
            t.check(v.returncode == 0, f"{how}: the packaged mlpd does not verify the file: {v.stdout[-300:]} {v.stderr[-300:]}")
            print(f"ok  {how}: profiled with the unpacked package, verified", flush=True)
        # mlpd attach with the unpacked package: its managed agent and libmlpd.so beside it (docs/attach.md).
        svc = subprocess.Popen([t.MONO, t.program("attach_service"), "3"], stdout=subprocess.PIPE, env=clean_env())
        svc.stdout.readline()
        a = t.run([mlpd, "attach", str(svc.pid), "--for", "1", f"sample,output={work}/c.mlpd"], env=clean_env(), timeout=120)
        out, _ = svc.communicate(timeout=60)
        t.check(a.returncode == 0 and "c.mlpd: ok" in a.stdout and svc.returncode == 7,
                f"attach with the package: {a.returncode} {a.stdout!r} {a.stderr!r}, program exit {svc.returncode}")
        print("ok  mlpd attach with the unpacked package", flush=True)
    t.finish("package")


if __name__ == "__main__":
    main()

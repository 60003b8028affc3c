#!/usr/bin/env python3
"""scripts/debian-mirror.sh (issue 34 item 6): the roots' Debian archive is the one the machine's apt is
configured with (one-line and deb822 sources, disabled entries and debian-security skipped), the
override wins, and with nothing configured it is Debian's default.

Usage: test_debian_mirror.py SCRIPT
"""
import os
import subprocess
import sys
import tempfile


def mirror(script, etc, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != "MLPD_DEBIAN_MIRROR"}
    env["APT_ETC"] = etc
    env.update(env_extra or {})
    return subprocess.run([script], capture_output=True, text=True, env=env, timeout=30).stdout.strip()


def main():
    script = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as etc:
        d = os.path.join(etc, "sources.list.d")
        os.makedirs(d)
        cases = []
        cases.append(("nothing configured", {}, "http://deb.debian.org/debian"))
        cases.append(("one-line, options, trailing slash, security first",
                      {"sources.list": "# comment\ndeb http://mirror.local/debian-security bookworm-security main\n"
                                       "deb [arch=amd64 signed-by=/k.gpg] http://mirror.local:3142/debian/ bookworm main\n"},
                      "http://mirror.local:3142/debian"))
        cases.append(("deb822: disabled and security stanzas skipped, second URI",
                      {"sources.list.d/a.sources": "Types: deb\nURIs: http://x.example/debian-security\nSuites: s\n\n"
                                                   "Types: deb\nEnabled: no\nURIs: http://off.example/debian\n\n"
                                                   "Types: deb deb-src\nURIs: http://u.example/ubuntu http://p.example/debian\n"
                                                   "Suites: trixie\n"},
                      "http://p.example/debian"))
        for name, files, want in cases:
            for f in list(os.listdir(d)):
                os.unlink(os.path.join(d, f))
            if os.path.exists(os.path.join(etc, "sources.list")):
                os.unlink(os.path.join(etc, "sources.list"))
            for rel, text in files.items():
                with open(os.path.join(etc, rel), "w") as f:
                    f.write(text)
            got = mirror(script, etc)
            print(("ok   " if got == want else "FAIL ") + f"{name}: {got}")
            if got != want:
                failures.append(name)
        got = mirror(script, etc, {"MLPD_DEBIAN_MIRROR": "http://override.example/debian"})
        print(("ok   " if got == "http://override.example/debian" else "FAIL ") + f"override: {got}")
        if got != "http://override.example/debian":
            failures.append("override")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

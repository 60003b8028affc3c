#!/usr/bin/env python3
"""The door's build test (issue 34): the runtime-neutral rooms compile with no runtime header on their
include path, and none of their files includes one.

For every room given (agent/, writer/, codec/, the capture room, the door's own header folder):
  * each of its translation units in compile_commands.json (the build's real compile lines) has none of
    Mono's include directories among its -I/-isystem/-iquote flags, so an `#include <mono/...>` added
    there fails to compile;
  * none of its files includes <mono/...>, a Mono header by another spelling (mono-2.0, "mono/..."),
    or a header of Mono's room (mlpd/hooks/...), which would bring Mono's types in through the back.
A room that has no translation unit in the build fails the test (it would check nothing).

Usage: check_door.py COMPILE_COMMANDS SOURCE_DIR MONO_INCLUDE_DIRS(;-separated) ROOM...
"""
import json
import os
import re
import shlex
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
FORBIDDEN = (
    re.compile(r'^mono/'),          # Mono's public headers
    re.compile(r'mono-2\.0/'),      # the same through their folder
    re.compile(r'^mlpd/hooks/'),    # Mono's room's headers
    re.compile(r'(^|/)mono_api\.h$'),
)
SOURCE_EXT = ('.c', '.cc', '.cpp', '.h', '.hpp', '.inc')


def include_dirs(entry):
    args = entry.get('arguments') or shlex.split(entry['command'])
    out = []
    i = 0
    while i < len(args):
        a = args[i]
        for flag in ('-I', '-isystem', '-iquote', '-idirafter'):
            if a == flag and i + 1 < len(args):
                out.append(args[i + 1])
                i += 1
                break
            if a.startswith(flag) and len(a) > len(flag):
                out.append(a[len(flag):])
                break
        i += 1
    base = entry.get('directory', '.')
    return [os.path.realpath(os.path.join(base, d)) for d in out]


def main():
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    commands_path, source, mono_dirs, rooms = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    source = os.path.realpath(source)
    mono = {os.path.realpath(d) for d in mono_dirs.split(';') if d}
    if not mono:
        print('check_door: no Mono include directory given (the test would check nothing)')
        return 1
    with open(commands_path) as f:
        commands = json.load(f)
    failures = []
    for room in rooms:
        root = os.path.realpath(os.path.join(source, room))
        if not os.path.isdir(root):
            failures.append(f'{room}: not a folder')
            continue
        units = 0
        for entry in commands:
            path = os.path.realpath(os.path.join(entry.get('directory', '.'), entry['file']))
            if not path.startswith(root + os.sep):
                continue
            units += 1
            bad = sorted(d for d in include_dirs(entry) if d in mono)
            if bad:
                failures.append(f'{os.path.relpath(path, source)}: compiled with Mono\'s include path {bad[0]}')
        # A header-only room (the door's folder) is compiled through the rooms that include it.
        if units == 0 and not all(n.endswith(('.h', '.hpp')) for _, _, fs in os.walk(root) for n in fs):
            failures.append(f'{room}: no translation unit of it in the build')
        for dirpath, _, files in os.walk(root):
            for name in sorted(files):
                if not name.endswith(SOURCE_EXT):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding='utf-8', errors='replace') as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and any(p.search(m.group(2)) for p in FORBIDDEN):
                            failures.append(f'{os.path.relpath(path, source)}:{n}: includes {m.group(1)}{m.group(2)}'
                                            f'{">" if m.group(1) == "<" else chr(34)} (a runtime\'s header)')
        print(f'check_door: {room}: {units} translation units checked')
    for line in failures:
        print('check_door: FAIL ' + line)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())

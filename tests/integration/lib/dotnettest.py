"""What the .NET integration tests (tests/integration/dotnet/) share: the agent, the SDK's `dotnet`,
the test programs built by tests/programs/dotnet/build.sh, mlpd's CLSID, and an environment without
any profiler variable of ours or the runtime's."""
import os
import shutil

AGENT = os.path.realpath(os.environ["MLPD_AGENT"])
DOTNET = os.environ.get("DOTNET") or shutil.which("dotnet")
PROGRAMS = os.environ.get("MLPD_DOTNET_PROGRAMS", "")
DLL = os.path.join(PROGRAMS, "DotnetPrograms.dll")
APPHOST = os.path.join(PROGRAMS, "DotnetPrograms")
CLSID = "{9F52A29B-F34A-4AC8-BF3A-ED27D2C3114B}"  # docs/dotnet.md
OUR_VARS = ("MLPD_OPTIONS", "LD_PRELOAD", "CORECLR_ENABLE_PROFILING", "CORECLR_PROFILER",
            "CORECLR_PROFILER_PATH", "CORECLR_PROFILER_PATH_64")


def env_with(**kw):
    """The test's environment without OUR_VARS, plus `kw`."""
    env = {k: v for k, v in os.environ.items() if k not in OUR_VARS}
    env.update(kw)
    return env

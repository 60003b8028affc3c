#!/usr/bin/env bash
# Builds tests/programs/dotnet/ (DotnetPrograms.dll) with the .NET SDK into OUT_DIR.
# Usage: build.sh OUT_DIR [net8.0]
# - Without a framework: for the SDK's own framework (net10.0), framework-dependent, offline (the SDK's
#   own targeting pack; no package restore is needed for a console app).
# - net8.0: the same programs published self-contained for .NET 8 (linux-x64), so they run on a machine
#   that has only the .NET 10 SDK: the 8.x runtime, host and targeting packs come from NuGet by name (the
#   SDK picks their versions), kept in NuGet's package cache (scripts/install-deps.sh fills it). Where
#   they cannot be had, says why in OUT_DIR/not-built.txt and exits 0: the .NET 8 tests then skip, naming
#   that reason.
# Without `dotnet` on the PATH: says so and exits 0 (the tests then skip).
set -euo pipefail
out="${1:?usage: build.sh OUT_DIR [net8.0]}"
framework="${2:-}"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v dotnet >/dev/null 2>&1; then
  echo "build.sh: no dotnet on the PATH: the .NET test programs are not built"
  exit 0
fi
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
mkdir -p "$out/obj"
rm -f "$out/not-built.txt"
# The project's obj/ and bin/ go under OUT_DIR, never into the source tree.
dirs=(-p:BaseIntermediateOutputPath="$out/obj/" -p:MSBuildProjectExtensionsPath="$out/obj/" -o "$out/bin")
if [ -z "$framework" ]; then
  dotnet build "$src/DotnetPrograms.csproj" -c Release -nologo -v quiet "${dirs[@]}" \
    >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
else
  # Restore first, then publish without it (publish's own restore does not see the framework given
  # on the command line and leaves the assets without it).
  tf=(-p:TargetFramework="$framework" -r linux-x64)
  if ! { dotnet restore "$src/DotnetPrograms.csproj" "${tf[@]}" "${dirs[@]:0:2}" &&
         dotnet publish "$src/DotnetPrograms.csproj" --no-restore -c Release -nologo -v quiet "${tf[@]}" \
           --self-contained -p:OutputPath="$out/build/" "${dirs[@]}"; } >"$out/build.log" 2>&1; then
    cat "$out/build.log"
    { echo "the $framework test programs could not be built (a self-contained publish with the SDK $(dotnet --version)," \
           "restoring the $framework runtime pack from NuGet): see $out/build.log"; } >"$out/not-built.txt"
    cat "$out/not-built.txt"
    rm -f "$out/bin/DotnetPrograms.dll"
    exit 0
  fi
fi
echo "build.sh: $out/bin/DotnetPrograms.dll"

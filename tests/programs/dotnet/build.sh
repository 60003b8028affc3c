#!/usr/bin/env bash
# Builds tests/programs/dotnet/ (DotnetPrograms.dll) with the .NET SDK into OUT_DIR, offline (the
# SDK's own targeting pack; no package restore from the network is needed for a console app).
# Usage: build.sh OUT_DIR. Without `dotnet` on the PATH: says so and exits 0 (the tests then skip).
set -euo pipefail
out="${1:?usage: build.sh OUT_DIR}"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v dotnet >/dev/null 2>&1; then
  echo "build.sh: no dotnet on the PATH: the .NET test programs are not built"
  exit 0
fi
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 DOTNET_SKIP_FIRST_TIME_EXPERIENCE=1
mkdir -p "$out/obj"
# The project's obj/ and bin/ go under OUT_DIR, never into the source tree.
dotnet build "$src/DotnetPrograms.csproj" -c Release -nologo -v quiet \
  -p:BaseIntermediateOutputPath="$out/obj/" -p:MSBuildProjectExtensionsPath="$out/obj/" \
  -o "$out/bin" >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
echo "build.sh: $out/bin/DotnetPrograms.dll"

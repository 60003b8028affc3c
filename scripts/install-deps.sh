#!/usr/bin/env bash
# Installs every build and test dependency of mlpd from Debian's packages (Debian 12 or 13). Safe to run again.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config
  ccache  # scripts/test.sh: the compiler's results kept between clean clones
  zlib1g-dev libdeflate-dev libunwind-dev catch2 libbenchmark-dev
  libc6-dbg  # libc's full symbol table: sampled waits named __futex_abstimed_wait_common, not a gap
  mono-runtime-dbg  # the runtime's (mono-sgen's) full symbol table, by build id: its own frames named (GC, JIT), not "[runtime, unnamed]"
  libmono-2.0-dev
  mono-runtime mono-mcs mono-utils libmono-profiler
  # clang and its runtime (libFuzzer, sanitizers) through Debian's default-version packages: clang 14 on
  # Debian 12, clang 19 on Debian 13. catch2 is v2 on 12 and v3 on 13 (tests/support/mlpd_catch.h).
  clang libclang-rt-dev
  chromium  # headless: the HTML flame graph test (tests/integration/report) and docs/reports.md's picture
  # Exports (issue 10), checked by the tools they are for: go tool pprof, protobuf for writing pprof,
  # jsonschema for speedscope files (chromium above also opens speedscope's viewer).
  golang-go libprotobuf-dev protobuf-compiler python3-jsonschema
  nlohmann-json3-dev  # the unit tests decode the JSON exports back (tests/unit/reader/views/views_export_test.cpp)
  python3 procps time  # time: /usr/bin/time -f %M, peak memory in the reader-limit tests
  help2man  # mlpd.1 from mlpd --help for the Debian package
  file dpkg-dev  # cpack's Debian package: its shared-library dependencies (dpkg-shlibdeps; CPackDeb needs file)
  linux-perf  # perf record/inject/report: the jitdump and perfmap tests (docs/perf.md)
  libcurl4-openssl-dev  # HTTP(S) for `mlpd push` and the agent's push= (Pyroscope's ingest API; docs/fleet.md)
  prometheus  # a real Prometheus server and promtool: the metrics= tests (docs/fleet.md)
  wrk  # HTTP load on the .NET HttpListener server (dotnet_server, docs/dotnet.md)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm comes with Node.js; Debian's own npm package is installed only when no npm is there (a NodeSource
# nodejs carries its own npm and conflicts with Debian's).
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# The .NET SDK (issue 35's tests: tests/programs/dotnet, ctest label dotnet) is not a Debian package: the
# test machines have it on the PATH; without it the .NET tests are skipped (scripts/test.sh says so).
if ! command -v dotnet >/dev/null 2>&1; then
  echo "install-deps: no dotnet (.NET SDK) on the PATH: the .NET tests will be skipped (docs/dotnet.md)"
else
  # .NET 8 (the tests NAME_net8, label dotnet8): the test programs are published self-contained for
  # net8.0 with the SDK; the 8.x runtime, host and targeting packs it needs come from NuGet by name (the
  # SDK picks their versions) into NuGet's package cache, restored here once (later restores find them
  # there).
  root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  restore_dir="$(mktemp -d)"
  if DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 dotnet restore "$root_dir/tests/programs/dotnet/DotnetPrograms.csproj" \
      -p:TargetFramework=net8.0 -r linux-x64 -p:BaseIntermediateOutputPath="$restore_dir/" \
      -p:MSBuildProjectExtensionsPath="$restore_dir/" >"$restore_dir.log" 2>&1; then
    echo "install-deps: .NET 8 runtime pack restored (NuGet cache)"
  else
    cat "$restore_dir.log"
    echo "install-deps: the .NET 8 runtime pack could not be restored from NuGet: the dotnet8 tests will be skipped"
  fi
  rm -rf "$restore_dir" "$restore_dir.log"
  # dotnet-gcdump (NuGet global tool, by name), the peer dotnet_heapshot --pause measures heapshots
  # against (docs/dotnet.md, "Heapshots"): into tests/tools/dotnet (git ignores it), once.
  if [ ! -x "$root_dir/tests/tools/dotnet/dotnet-gcdump" ]; then
    if DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 dotnet tool install --tool-path "$root_dir/tests/tools/dotnet" \
        dotnet-gcdump >/dev/null 2>&1; then
      echo "install-deps: dotnet-gcdump installed (tests/tools/dotnet)"
    else
      echo "install-deps: dotnet-gcdump could not be installed from NuGet: the heapshot pause comparison will be skipped"
    fi
  fi
fi

# npm packages the export tests use, pinned, in a project-local directory git ignores
# (tests/tools/node/node_modules): speedscope (its file-format JSON schema and its offline viewer,
# dist/release/) and playwright-core (drives the system's /usr/bin/chromium; no browser download).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
node_dir="$root/tests/tools/node"
npm_packages=(speedscope@1.25.0 playwright-core@1.56.1)
npm_missing=()
for spec in "${npm_packages[@]}"; do
  name="${spec%@*}" version="${spec##*@}"
  have="$(node -p "require('$node_dir/node_modules/$name/package.json').version" 2>/dev/null || true)"
  [ "$have" = "$version" ] || npm_missing+=("$spec")
done
if [ ${#npm_missing[@]} -eq 0 ]; then
  echo "install-deps: npm packages present"
else
  echo "install-deps: npm install ${npm_missing[*]} into $node_dir"
  mkdir -p "$node_dir"
  # All of them in one command: npm removes packages it was not asked for in this one.
  npm install --prefix "$node_dir" --no-save --no-audit --no-fund --loglevel=error "${npm_packages[@]}"
fi

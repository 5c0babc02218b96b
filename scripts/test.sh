#!/usr/bin/env bash
# The test command (README; .ci/run calls it). Installs what the tests need
# through forkd's own set-up, then runs every test: unit tests everywhere,
# integration tests (real Btrfs, runc, CRIU, processes, HTTP) as root.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
unit_only=0
[ "${1:-}" = "--unit" ] && unit_only=1
if [ "$unit_only" = 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "integration tests need root (use: npm run test:unit)" >&2
    exit 1
  fi
  ./forkd setup
else
  # A lock file newer than the install (a dependency added since) installs again, as ./forkd does.
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
  fi
  npx tsc -b && node scripts/bundle-cli.mjs && make -s -C packages/host-tools
fi
mapfile -t files < <(find packages/*/dist -name '*.test.js' | sort)
if [ "$unit_only" = 1 ]; then
  mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -v '\.int\.test\.js$')
fi
# Integration tests share the machine's two cores and cgroups: run files one at a time.
node --experimental-websocket --no-warnings=ExperimentalWarning --enable-source-maps \
  --test --test-concurrency=1 --test-timeout=900000 --test-reporter=spec "${files[@]}"
if [ "$unit_only" = 0 ]; then
  # The benchmark's quick mode: every measurement, forkd's and Podman's, runs once.
  node --enable-source-maps packages/bench/dist/bench.js --quick
fi

#!/usr/bin/env bash
# `npm run bench [-- --quick]`: builds, makes sure set-up is done, then measures.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./forkd setup >/dev/null
exec node --enable-source-maps packages/bench/dist/bench.js "$@"

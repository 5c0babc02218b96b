#!/usr/bin/env bash
# Prints the Secrets forkd's Kubernetes manifests expect, with new random
# values, for `kubectl apply -f -` (once: running it again makes other keys,
# and a new secrets.key cannot open what the old one sealed):
#   forkd-control-plane-keys  secrets.key (32 bytes: seals tenants' secrets and
#                             node tokens), join.token (for nodes that join by
#                             heartbeat), admin.key (the first admin API key)
#   forkd-node-token          node.token: every node answers it, the control
#                             plane presents it (node discovery)
#   forkd-database            url (and password, for the bundled PostgreSQL)
# Usage: make-secrets.sh --bundled-postgres | --database-url postgres://...
set -euo pipefail
usage() { echo "usage: $0 --bundled-postgres | --database-url URL" >&2; exit 2; }
[ $# -ge 1 ] || usage
password="" url=""
case "$1" in
  --bundled-postgres)
    [ $# = 1 ] || usage
    password="$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    url="postgres://forkd:${password}@forkd-postgres.forkd.svc.cluster.local:5432/forkd" ;;
  --database-url)
    [ $# = 2 ] || usage
    url="$2"
    [[ "$url" =~ ^postgres(ql)?:// ]] || { echo "make-secrets: --database-url wants a postgres:// URL" >&2; exit 2; } ;;
  *) usage ;;
esac
b64() { base64 -w0; }
token() { printf '%s%s' "$1" "$(head -c 32 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')"; }
cat <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: forkd-control-plane-keys
  namespace: forkd
  labels:
    app.kubernetes.io/name: forkd
type: Opaque
data:
  secrets.key: $(head -c 32 /dev/urandom | b64)
  join.token: $(token fjt_ | b64)
  admin.key: $(printf 'forkd_%s' "$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')" | b64)
---
apiVersion: v1
kind: Secret
metadata:
  name: forkd-node-token
  namespace: forkd
  labels:
    app.kubernetes.io/name: forkd
type: Opaque
data:
  node.token: $(token fnt_ | b64)
---
apiVersion: v1
kind: Secret
metadata:
  name: forkd-database
  namespace: forkd
  labels:
    app.kubernetes.io/name: forkd
type: Opaque
data:
  url: $(printf '%s' "$url" | b64)
YAML
if [ -n "$password" ]; then
  echo "  password: $(printf '%s' "$password" | b64)"
fi

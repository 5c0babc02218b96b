#!/usr/bin/env bash
# Builds forkd's container image (deploy/Containerfile) from this checkout,
# with no registry: the Debian root comes from the Debian mirror apt already
# uses (debootstrap), Node.js from this host, CRIU/runc and the `base`
# template's root from `forkd setup`'s cache. Then checks that the image runs
# `forkd --version`. Usage: scripts/build-image.sh [TAG] (default
# localhost/forkd:dev). Needs root, podman, and `./forkd setup` done once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tag="${1:-localhost/forkd:dev}"
cache="${FORKD_CACHE_DIR:-/var/lib/forkd/cache}"
work="${FORKD_IMAGE_WORK:-/var/tmp/forkd-image}"
if [ "$(id -u)" != 0 ]; then
  echo "build-image: needs root (debootstrap, podman)" >&2
  exit 1
fi
for d in "$cache"/criu-forky/usr/sbin/criu "$cache"/criu-forky/usr/sbin/runc "$cache"/rootfs/base-v*/.forkd-recipe; do
  [ -e "$d" ] || { echo "build-image: $d missing: run ./forkd setup first" >&2; exit 1; }
done
npm run -s build
# The packages set-up installs on a host, and the host's release and mirror: said once, in setup.ts.
# debootstrap does not resolve virtual packages: skopeo's golang-github-containers-common needs a
# container-network-stack, which containernetworking-plugins provides (apt picks it on a host).
read -r codename mirror packages < <(node --input-type=module -e "
  const s = await import('./packages/server/dist/setup/setup.js');
  const h = await (await import('./packages/server/dist/setup/host-info.js')).hostInfo();
  console.log(h.codename, h.mirror, [...s.PACKAGES, 'ca-certificates', 'libstdc++6', 'containernetworking-plugins'].join(','));")

# The Debian root, kept between builds while its recipe is the same.
recipe="$(printf '%s %s' "$codename" "$packages" | sha256sum | cut -c1-16)"
rootfs="$work/rootfs-$recipe"
if [ ! -f "$rootfs/.forkd-image-recipe" ]; then
  rm -rf "$rootfs.tmp"
  mkdir -p "$work"
  echo "build-image: debootstrap $codename ($packages)" >&2
  debootstrap --variant=minbase --include="$packages" "$codename" "$rootfs.tmp" "$mirror" >&2
  chroot "$rootfs.tmp" apt-get clean
  echo "$recipe" > "$rootfs.tmp/.forkd-image-recipe"
  rm -rf "$rootfs"
  mv "$rootfs.tmp" "$rootfs"
fi

ctx="$work/context"
rm -rf "$ctx"
mkdir -p "$ctx/app/packages" "$ctx/cache/rootfs"
install -m 0755 "$(readlink -f "$(command -v node)")" "$rootfs/usr/local/bin/node"
tar -C "$rootfs" --numeric-owner --xattrs --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
  --exclude='./var/lib/apt/lists/*' --exclude='./.forkd-image-recipe' -cf "$ctx/rootfs.tar" .
cp -a package.json package-lock.json node_modules "$ctx/app/"
for p in protocol sdk mcp server cli bench; do
  mkdir -p "$ctx/app/packages/$p"
  cp -a "packages/$p/package.json" "packages/$p/dist" "$ctx/app/packages/$p/"
done
# Sources and builds both: set-up's `make` finds the builds up to date.
cp -a packages/guest packages/host-tools "$ctx/app/packages/"
cp -a "$cache/criu-forky" "$ctx/cache/"
cp -a "$cache"/rootfs/base-v* "$ctx/cache/rootfs/"
cp -a deploy/forkd-entrypoint "$ctx/"

old="$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
podman build --quiet -t "$tag" -f deploy/Containerfile "$ctx" >&2
rm -rf "$ctx"
new="$(podman image inspect --format '{{.Id}}' "$tag")"
# The previous build of this tag only: other images are not ours to prune.
if [ -n "$old" ] && [ "$old" != "$new" ]; then podman rmi "$old" >/dev/null 2>&1 || true; fi
# Explicit rlimits: podman's defaults are above what a host without CAP_SYS_RESOURCE may set.
version="$(podman run --rm --network=none --ulimit nofile=1024:4096 --ulimit nproc=4096:4096 "$tag" --version)"
echo "build-image: $tag ($new) runs: $version" >&2

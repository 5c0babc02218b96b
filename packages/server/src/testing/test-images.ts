import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { exec } from '../shared/exec.js';
import { tarOf, type TestTarEntry } from './tar-build.js';

/** An image's config as a test gives it (the OCI config's `config` object). */
export interface TestImageConfig {
  Env?: string[];
  Entrypoint?: string[];
  Cmd?: string[];
  WorkingDir?: string;
  User?: string;
}

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

async function blob(layout: string, data: Buffer): Promise<string> {
  const d = sha(data);
  await writeFile(join(layout, 'blobs/sha256', d.slice(7)), data);
  return d;
}

/**
 * Writes an OCI image layout at `layout` holding one image under `tag`:
 * layers (tars, gzipped as registries serve them), its config. Offline:
 * a test's images are made of files it has.
 */
export async function writeTestImage(layout: string, tag: string, layers: TestTarEntry[][], config: TestImageConfig): Promise<void> {
  await mkdir(join(layout, 'blobs/sha256'), { recursive: true });
  await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const tars = layers.map((l) => tarOf(l));
  const layerDescs = [];
  for (const t of tars) {
    const gz = gzipSync(t);
    layerDescs.push({ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: await blob(layout, gz), size: gz.length });
  }
  const cfg = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config, rootfs: { type: 'layers', diff_ids: tars.map(sha) } }));
  const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: await blob(layout, cfg), size: cfg.length }, layers: layerDescs }));
  const md = await blob(layout, manifest);
  const indexPath = join(layout, 'index.json');
  const index = JSON.parse(await readFile(indexPath, 'utf8').catch(() => '{"schemaVersion":2,"manifests":[]}')) as { manifests: unknown[] };
  index.manifests.push({ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: md, size: manifest.length, annotations: { 'org.opencontainers.image.ref.name': tag } });
  await writeFile(indexPath, JSON.stringify({ schemaVersion: 2, manifests: index.manifests }));
}

/** Host files as layer entries at the same paths (resolved: the image gets the bytes, not the host's symlinks). */
export async function hostFiles(paths: readonly string[], mode = 0o755): Promise<TestTarEntry[]> {
  const out: TestTarEntry[] = [];
  for (const p of paths) out.push({ path: p.replace(/^\//, ''), data: await readFile(p), mode });
  return out;
}

/** The shared libraries a host binary loads (ldd), as paths. */
export async function sharedLibs(binaries: readonly string[]): Promise<string[]> {
  const libs = new Set<string>();
  for (const b of binaries) for (const m of (await exec('ldd', [b])).stdout.matchAll(/(\/[^\s]+\.so[^\s]*)/g)) libs.add(m[1]!);
  return [...libs];
}

/** Compiles a C program (gcc, or musl-gcc) into `out`. */
export async function compileC(source: string, out: string, opts: { compiler?: 'gcc' | 'musl-gcc'; static?: boolean } = {}): Promise<void> {
  const src = `${out}.c`;
  await writeFile(src, source);
  await exec(opts.compiler ?? 'gcc', ['-O1', ...(opts.static ? ['-static'] : []), '-o', out, src], { timeoutMs: 60_000 });
}

/** A Debian-ish root made of the host's own bash and coreutils (usrmerged: /bin and /lib are symlinks the layer's paths go through). */
export async function debianLayer(extraBins: readonly string[] = []): Promise<TestTarEntry[]> {
  const bins = ['/usr/bin/bash', '/usr/bin/sleep', '/usr/bin/cat', '/usr/bin/id', '/usr/bin/env', '/usr/bin/pwd', ...extraBins];
  return [
    { path: 'usr/bin/', type: 'dir' },
    { path: 'usr/lib/x86_64-linux-gnu/', type: 'dir' },
    { path: 'usr/lib64/', type: 'dir' },
    { path: 'bin', type: 'symlink', linkpath: 'usr/bin' },
    { path: 'lib', type: 'symlink', linkpath: 'usr/lib' },
    { path: 'lib64', type: 'symlink', linkpath: 'usr/lib64' },
    { path: 'tmp/', type: 'dir', mode: 0o1777 },
    { path: 'app/', type: 'dir' },
    ...(await hostFiles(bins)),
    ...(await hostFiles(await sharedLibs(bins))),
    { path: 'etc/passwd', data: 'root:x:0:0:root:/root:/bin/bash\napp:x:1001:1001:app:/app:/bin/bash\n' },
    { path: 'etc/group', data: 'root:x:0:\napp:x:1001:\n' },
    { path: 'etc/debian_version', data: '12.0\n' },
    { path: 'etc/removed', data: 'lower layer\n' },
  ];
}

import { readFile } from 'node:fs/promises';

export interface HostInfo {
  debianMajor: number;
  codename: string;
  mirror: string;
}

/** Debian release and the mirror apt already uses (the only package source reachable here). */
export async function hostInfo(env: NodeJS.ProcessEnv = process.env): Promise<HostInfo> {
  const osRelease = await readFile('/etc/os-release', 'utf8').catch(() => '');
  const codename = /^VERSION_CODENAME=(.*)$/m.exec(osRelease)?.[1]?.replace(/"/g, '') ?? 'bookworm';
  const version = (await readFile('/etc/debian_version', 'utf8').catch(() => '12')).trim();
  const debianMajor = Number.parseInt(version, 10) || (codename === 'trixie' ? 13 : 12);
  return { debianMajor, codename, mirror: env.FORKD_DEBIAN_MIRROR || (await aptMirror()) };
}

async function aptMirror(): Promise<string> {
  const deb822 = await readFile('/etc/apt/sources.list.d/debian.sources', 'utf8').catch(() => '');
  for (const stanza of deb822.split(/\n\s*\n/)) {
    const uri = /^URIs:\s*(\S+)/m.exec(stanza)?.[1];
    if (uri && !/security/.test(stanza.match(/^Suites:.*$/m)?.[0] ?? '')) return uri;
  }
  const legacy = await readFile('/etc/apt/sources.list', 'utf8').catch(() => '');
  const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+\s+main/m.exec(legacy);
  return m?.[1] ?? 'http://deb.debian.org/debian';
}

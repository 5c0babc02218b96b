import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IDaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import type { IService } from 'kubernetes-models/v1/Service';
import type { IRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import type { IRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import type { IIoK8sApiCoreV1PodSpec as PodSpec } from 'kubernetes-models/v1/PodSpec';
import { REPO_ROOT } from '../shared/config.js';
import { exec } from '../shared/exec.js';
import { renderKustomization, loadManifests, type KubeObject } from './kustomize.js';
import { kubernetesProblems } from './kubernetes-schema.js';

const K8S = join(REPO_ROOT, 'deploy/kubernetes');
const OVERLAYS = ['bundled-postgres', 'external-postgres'];

function find<T>(objs: readonly KubeObject[], kind: string, name: string): T {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(o, `${kind} ${name} is rendered`);
  return o as unknown as T;
}

/** The Secrets make-secrets.sh prints, as objects. */
async function madeSecrets(...args: string[]): Promise<KubeObject[]> {
  const r = await exec(join(K8S, 'make-secrets.sh'), args);
  return parseAllDocuments(r.stdout).flatMap((d) => (Array.isArray(d) ? [] : [d.toJS() as KubeObject]));
}

/** Every secret name and key a pod spec reads. */
function secretKeysRead(spec: PodSpec): { name: string; key?: string }[] {
  const out: { name: string; key?: string }[] = [];
  for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
    for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef) out.push({ name: e.valueFrom.secretKeyRef.name!, key: e.valueFrom.secretKeyRef.key });
  }
  for (const v of spec.volumes ?? []) {
    if (v.secret) out.push({ name: v.secret.secretName! });
    for (const s of v.projected?.sources ?? []) if (s.secret) out.push({ name: s.secret.name! });
  }
  return out;
}

const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) =>
  !!selector && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

for (const overlay of OVERLAYS) {
  test(`kubernetes ${overlay}: every rendered object is valid against the Kubernetes API schemas, no unknown field`, async () => {
    const objs = await renderKustomization(join(K8S, 'overlays', overlay));
    assert.ok(objs.length >= 9, `${objs.length} objects`);
    assert.deepEqual(await kubernetesProblems(objs), []);
    for (const o of objs) if (o.kind !== 'Namespace') assert.equal(o.metadata.namespace, 'forkd', `${o.kind} ${o.metadata.name}`);
  });

  test(`kubernetes ${overlay}: the control plane is replicated and probed, the node agent privileged on the host, the Secrets it reads are the ones make-secrets.sh makes`, async () => {
    const objs = await renderKustomization(join(K8S, 'overlays', overlay));
    const cp = find<IDeployment>(objs, 'Deployment', 'forkd-control-plane');
    assert.ok((cp.spec!.replicas ?? 1) >= 2);
    const api = cp.spec!.template.spec!.containers[0]!;
    assert.equal(api.readinessProbe?.httpGet?.path, '/v1/health');
    // Liveness does not depend on the database (a PostgreSQL outage must not restart every replica).
    assert.equal(api.livenessProbe?.tcpSocket?.port, 'api');
    assert.ok(api.resources?.requests && api.resources.limits);
    assert.ok(matches(cp.spec!.selector.matchLabels, cp.spec!.template.metadata!.labels));
    const node = find<IDaemonSet>(objs, 'DaemonSet', 'forkd-node');
    const pod = node.spec!.template.spec!;
    assert.equal(pod.hostPID, true);
    assert.equal(pod.containers[0]!.securityContext?.privileged, true);
    assert.ok(pod.volumes!.some((v) => v.hostPath?.path === '/var/lib/forkd'));
    assert.ok(matches(node.spec!.selector.matchLabels, node.spec!.template.metadata!.labels));
    const svc = find<IService>(objs, 'Service', 'forkd-api');
    assert.ok(matches(svc.spec!.selector, cp.spec!.template.metadata!.labels));
    assert.ok(!matches(svc.spec!.selector, node.spec!.template.metadata!.labels));
    // Discovery: the control plane's account may list pods, and its selector picks the node pods.
    const role = find<IRole>(objs, 'Role', 'forkd-node-discovery');
    assert.ok(role.rules!.some((r) => r.resources?.includes('pods') && r.verbs.includes('list')));
    const binding = find<IRoleBinding>(objs, 'RoleBinding', 'forkd-node-discovery');
    assert.ok(binding.subjects!.some((s) => s.kind === 'ServiceAccount' && s.name === cp.spec!.template.spec!.serviceAccountName));
    const env = Object.fromEntries((api.env ?? []).map((e) => [e.name, e.value]));
    const selector = Object.fromEntries(env.FORKD_KUBERNETES_NODE_SELECTOR!.split(',').map((kv) => kv.split('=') as [string, string]));
    assert.ok(matches(selector, node.spec!.template.metadata!.labels));
    assert.equal(env.FORKD_KUBERNETES_NODE_PORT, pod.containers[0]!.env!.find((e) => e.name === 'FORKD_PORT')!.value);
    const policy = find<INetworkPolicy>(objs, 'NetworkPolicy', 'forkd-control-plane');
    assert.ok(matches(policy.spec!.podSelector.matchLabels, cp.spec!.template.metadata!.labels));

    // Every file a container is told of (FORKD_*_FILE, FORKD_STATE_DIR) lies under one of its mounts.
    for (const spec of [cp.spec!.template.spec!, pod]) {
      for (const c of spec.containers) {
        const mounts = (c.volumeMounts ?? []).map((m) => m.mountPath);
        for (const e of c.env ?? []) {
          if (!/_FILE$|^FORKD_STATE_DIR$/.test(e.name) || !e.value) continue;
          assert.ok(mounts.some((m) => e.value!.startsWith(`${m}/`)), `${c.name}: ${e.name}=${e.value} is under a mount`);
        }
      }
    }

    const secrets = await madeSecrets(...(overlay === 'bundled-postgres' ? ['--bundled-postgres'] : ['--database-url', 'postgres://forkd:pw@db.example/forkd']));
    assert.deepEqual(await kubernetesProblems(secrets), []);
    const pods = objs.flatMap((o) => (o.kind === 'Deployment' || o.kind === 'DaemonSet' || o.kind === 'StatefulSet' ? [(o as unknown as IDeployment).spec!.template.spec!] : []));
    for (const ref of pods.flatMap(secretKeysRead)) {
      const s = secrets.find((x) => x.metadata.name === ref.name) as { data?: Record<string, string> } | undefined;
      assert.ok(s, `Secret ${ref.name} is made by make-secrets.sh`);
      if (ref.key) assert.ok(s.data?.[ref.key], `Secret ${ref.name} has ${ref.key}`);
    }
  });
}

test('kubernetes: the bundled overlay adds PostgreSQL, reachable only from the control plane; the external one does not', async () => {
  const bundled = await renderKustomization(join(K8S, 'overlays/bundled-postgres'));
  find(bundled, 'StatefulSet', 'forkd-postgres');
  const policy = find<INetworkPolicy>(bundled, 'NetworkPolicy', 'forkd-postgres');
  assert.deepEqual(policy.spec!.ingress![0]!.from![0]!.podSelector!.matchLabels, { 'app.kubernetes.io/name': 'forkd', 'app.kubernetes.io/component': 'control-plane' });
  const external = await renderKustomization(join(K8S, 'overlays/external-postgres'));
  assert.ok(!external.some((o) => o.kind === 'StatefulSet'));
});

test('kubernetes: make-secrets.sh makes keys of the shapes forkd reads, new ones each run', async () => {
  const [a, b] = [await madeSecrets('--bundled-postgres'), await madeSecrets('--bundled-postgres')];
  const data = (objs: KubeObject[], name: string) => Object.fromEntries(Object.entries((objs.find((o) => o.metadata.name === name) as unknown as { data: Record<string, string> }).data).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
  const keys = data(a, 'forkd-control-plane-keys');
  assert.equal(keys['secrets.key']!.length, 32);
  assert.match(keys['join.token']!.toString(), /^fjt_[A-Za-z0-9_-]{43}$/);
  assert.match(keys['admin.key']!.toString(), /^forkd_[0-9a-f]{40}$/);
  assert.match(data(a, 'forkd-node-token')['node.token']!.toString(), /^fnt_[A-Za-z0-9_-]{43}$/);
  assert.match(data(a, 'forkd-database').url!.toString(), /^postgres:\/\/forkd:[0-9a-f]{48}@forkd-postgres\.forkd\.svc\.cluster\.local:5432\/forkd$/);
  assert.notDeepEqual(keys['secrets.key'], data(b, 'forkd-control-plane-keys')['secrets.key']);
  await assert.rejects(exec(join(K8S, 'make-secrets.sh'), ['--database-url', 'mysql://x']));
});

test('kubernetes: a misspelled field, a wrong type or a missing required field is a problem', async () => {
  const [cp] = (await loadManifests(join(K8S, 'base/control-plane.yaml'))) as unknown as IDeployment[];
  const copy = () => structuredClone(cp!) as IDeployment;
  const misspelled = copy();
  (misspelled.spec!.template.spec!.containers[0] as unknown as Record<string, unknown>).imagePulPolicy = 'Always';
  const problems = await kubernetesProblems([misspelled as unknown as KubeObject]);
  assert.equal(problems.length, 1, problems.join("\n"));
  assert.match(problems[0]!, /imagePulPolicy/);
  const wrongType = copy();
  (wrongType.spec as unknown as Record<string, unknown>).replicas = 'two';
  assert.ok((await kubernetesProblems([wrongType as unknown as KubeObject])).some((p) => /replicas/.test(p)));
  const missing = copy();
  delete (missing.spec!.template.spec!.containers[0] as unknown as Record<string, unknown>).name;
  assert.ok((await kubernetesProblems([missing as unknown as KubeObject])).some((p) => /name/.test(p)));
  const unknownKind = { apiVersion: 'forkd.dev/v1', kind: 'Sandbox', metadata: { name: 'x' } } as KubeObject;
  assert.equal((await kubernetesProblems([unknownKind])).length, 1);
});

test('kubernetes: the renderer refuses what it does not implement, and duplicate objects', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-kustomize-'));
  try {
    await mkdir(join(dir, 'a'));
    await writeFile(join(dir, 'a/kustomization.yaml'), 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [ns.yaml]\nnamePrefix: x-\n');
    await writeFile(join(dir, 'a/ns.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: forkd\n');
    await assert.rejects(renderKustomization(join(dir, 'a')), /namePrefix/);
    await writeFile(join(dir, 'a/kustomization.yaml'), 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [ns.yaml, ns.yaml]\n');
    await assert.rejects(renderKustomization(join(dir, 'a')), /twice/);
    await writeFile(join(dir, 'a/ns.yaml'), 'apiVersion: v1\nkind: Namespace\nmetadata: {name: [\n');
    await assert.rejects(loadManifests(join(dir, 'a/ns.yaml')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// Where kubectl is installed (not a dependency of the tests): kustomize itself renders the same objects.
const kubectl = await exec('kubectl', ['version', '--client'], { allowFailure: true }).then((r) => r.code === 0, () => false);
test('kubernetes: kubectl kustomize renders the same objects as the test renderer', { skip: !kubectl && 'kubectl not installed' }, async () => {
  for (const overlay of OVERLAYS) {
    const dir = join(K8S, 'overlays', overlay);
    const r = await exec('kubectl', ['kustomize', dir]);
    const theirs = parseAllDocuments(r.stdout).flatMap((d) => (Array.isArray(d) ? [] : [d.toJS() as KubeObject]));
    const key = (o: KubeObject) => `${o.kind}/${o.metadata.name}`;
    const ours = await renderKustomization(dir);
    assert.deepEqual(theirs.map(key).sort(), ours.map(key).sort());
    for (const o of ours) assert.deepEqual(theirs.find((t) => key(t) === key(o)), o, key(o));
  }
});

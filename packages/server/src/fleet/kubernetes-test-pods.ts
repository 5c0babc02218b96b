/** Pods as the Kubernetes API lists them (trimmed from a real `GET /api/v1/namespaces/forkd/pods` answer), for tests. */
export function nodePod(name: string, nodeName: string, podIP: string, o: { ready?: boolean; phase?: string; owner?: string; deleting?: boolean } = {}): unknown {
  return {
    metadata: {
      name,
      generateName: 'forkd-node-',
      namespace: 'forkd',
      uid: '5b0c3c2e-8f0b-4c1e-9a53-0d1f2e3a4b5c',
      resourceVersion: '48213',
      creationTimestamp: '2026-12-03T10:00:00Z',
      ...(o.deleting ? { deletionTimestamp: '2026-12-03T11:00:00Z', deletionGracePeriodSeconds: 60 } : {}),
      labels: { 'app.kubernetes.io/name': 'forkd', 'app.kubernetes.io/component': 'node', 'controller-revision-hash': '6d9f7c8b5', 'pod-template-generation': '1' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: o.owner ?? 'forkd-node', uid: '0a1b2c3d-0000-4000-8000-000000000000', controller: true, blockOwnerDeletion: true }],
    },
    spec: { nodeName, hostNetwork: true, hostPID: true, containers: [{ name: 'forkd', image: 'localhost/forkd:dev', args: ['serve', '--role', 'node'] }] },
    status: {
      phase: o.phase ?? 'Running',
      hostIP: podIP,
      podIP,
      podIPs: [{ ip: podIP }],
      startTime: '2026-12-03T10:00:01Z',
      conditions: [
        { type: 'Initialized', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-12-03T10:00:01Z' },
        { type: 'Ready', status: (o.ready ?? true) ? 'True' : 'False', lastProbeTime: null, lastTransitionTime: '2026-12-03T10:00:30Z' },
        { type: 'ContainersReady', status: (o.ready ?? true) ? 'True' : 'False', lastProbeTime: null, lastTransitionTime: '2026-12-03T10:00:30Z' },
        { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-12-03T10:00:00Z' },
      ],
    },
  };
}

export function podList(items: unknown[]): unknown {
  return { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '48300' }, items };
}

import type { BuildTemplateRequest, TemplateInfo, BuildProgress } from '@forkd/protocol';
import type { ClaimSandbox } from '../../node-contract/node-types.js';
import type { TemplateImage } from '../../store/store.js';
import type { ImageVolumes } from '../images/image-volumes.js';
import type { TemplateRegistry } from './template-registry.js';
import { infoOf, loginShell, runBuild, type TemplateBuildHost } from './template-builder.js';

type ImageRequest = ReturnType<typeof BuildTemplateRequest.parse> & { fromImage: string };

/**
 * A template from an OCI image: the image's root volume (image-volumes.ts,
 * cached by layer chain) becomes the template as it is when there is
 * nothing to run; with setup commands or a start command (the request's,
 * else the image's Entrypoint and Cmd) it is first staged as a template of
 * the build's own, and built from like any other. Its Env, WorkingDir, User
 * and shell become its sandboxes' defaults.
 */
export async function buildFromImage(m: TemplateBuildHost, templates: TemplateRegistry, images: ImageVolumes, req: ImageRequest, progress: BuildProgress, claim?: ClaimSandbox): Promise<TemplateInfo> {
  const img = await images.volumeFor(req.fromImage, { auth: req.registryAuth, progress });
  const d = img.defaults;
  const image: TemplateImage = { ref: img.ref, env: d.env, ...(d.cwd ? { cwd: d.cwd } : {}), ...(d.user ? { user: d.user } : {}), ...(img.shell ? { shell: img.shell } : {}) };
  const start = req.start !== undefined ? loginShell(req.start) : d.start;
  if (!start && req.setup.length === 0) {
    await templates.publish(req.name, { rootfsKey: img.rootKey, from: img.ref, image });
    await progress(`template ${req.name} built from ${img.ref}`);
    return infoOf(templates, req.name);
  }
  const stage = await templates.stage(img.rootKey, image);
  try {
    return await runBuild(m, templates, { name: req.name, source: stage, setup: req.setup, start, ready: req.ready ? loginShell(req.ready) : undefined, from: img.ref, image }, progress, claim);
  } finally {
    await templates.remove(stage).catch((err) => m.logger.warn('staged image template cleanup failed', { template: stage, error: String(err) }));
  }
}

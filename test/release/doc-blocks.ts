// The commands a guide tells an admin to run, read from the Markdown itself: every fenced block whose info string
// is `sh` runs as written; `sh alternative` marks one a test machine cannot run (a registry push, kind, a node's
// containerd, a rollout that needs a kubelet) and the guide says so in its prose. Any other sh info string is
// an error, so a block cannot drop out of the test by a typo.
import { spawn } from 'node:child_process';

export type DocBlock = { readonly kind: 'run' | 'alternative'; readonly script: string; readonly line: number };

/** The guide's sh blocks in order, and its yaml blocks (examples the guide asks to save as files). */
export function docBlocks(markdown: string, file: string): { sh: DocBlock[]; yaml: string[] } {
  const sh: DocBlock[] = [];
  const yaml: string[] = [];
  for (const m of markdown.matchAll(/^```([^\n]*)\n([\s\S]*?)^```$/gm)) {
    const info = (m[1] ?? '').trim();
    const body = m[2] ?? '';
    const line = markdown.slice(0, m.index).split('\n').length;
    if (info === 'yaml') yaml.push(body);
    else if (info === 'sh') sh.push({ kind: 'run', script: body, line });
    else if (info === 'sh alternative') sh.push({ kind: 'alternative', script: body, line });
    else if (info.startsWith('sh')) throw new Error(`${file}:${line}: unknown code block info string "${info}" (sh or sh alternative)`);
  }
  return { sh, yaml };
}

/** The first command of a block, as a test names it. */
export function firstCommand(block: DocBlock): string {
  return (
    block.script
      .split('\n')
      .find((l) => l.trim() !== '' && !l.trim().startsWith('#'))
      ?.trim() ?? ''
  );
}

export type ShellResult = { status: number | null; stdout: string; stderr: string };

/** Runs a block with bash as a careful admin would paste it: stop at the first failing command. */
export function runBlock(block: DocBlock, options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<ShellResult> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', block.script], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 360_000);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

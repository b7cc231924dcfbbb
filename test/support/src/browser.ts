// Chromium for browser tests, from Debian's packages (never a browser download of a test tool's own): installed
// with apt-get when missing and this runs as root, as scripts/toolchain.sh installs git.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const CHROMIUM_PATH = '/usr/bin/chromium';

/** The path of Debian's Chromium, installing the package first when it is missing. */
export function ensureChromium(): string {
  if (existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  if (process.getuid?.() !== 0) throw new Error(`browser tests need Chromium at ${CHROMIUM_PATH}: install it with apt-get install chromium`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env });
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`apt-get install chromium left no ${CHROMIUM_PATH}`);
  return CHROMIUM_PATH;
}

// A packaged chart (`helm package`: a gzipped tar whose entries sit under one directory named after the chart)
// read into memory, with the checks Helm's archive loader makes and a few more: regular files only (a link or
// device is refused), no path that leaves the chart, bounded sizes.
import { gunzipSync } from 'node:zlib';
import { ChartSourceError, ChartSourceErrorCode } from './errors.ts';

export interface ChartFile {
  /** `<chart directory>/<path in the chart>`, as the archive holds it. */
  readonly path: string;
  readonly content: Uint8Array;
}

export interface ArchiveLimits {
  /** Bytes of the unpacked tar. */
  readonly maxBytes: number;
  readonly maxFiles: number;
}

const BLOCK = 512;

function field(block: Uint8Array, offset: number, length: number): string {
  const raw = block.subarray(offset, offset + length);
  const end = raw.indexOf(0);
  return Buffer.from(end === -1 ? raw : raw.subarray(0, end)).toString('utf8');
}

function octal(block: Uint8Array, offset: number, length: number): number {
  const raw = block.subarray(offset, offset + length);
  // GNU base-256 for large sizes: the top bit of the first byte is set.
  if (raw[0] !== undefined && (raw[0] & 0x80) !== 0) {
    let value = raw[0] & 0x7f;
    for (const byte of raw.subarray(1)) value = value * 256 + byte;
    return value;
  }
  const text = field(block, offset, length).trim();
  return text === '' ? 0 : Number.parseInt(text, 8);
}

/** PAX extended header records (`<len> key=value\n`): only `path` matters here. */
function paxPath(data: Uint8Array): string | undefined {
  const text = Buffer.from(data).toString('utf8');
  let path: string | undefined;
  for (const line of text.split('\n')) {
    const match = /^\d+ ([^=]+)=(.*)$/s.exec(line);
    if (match?.[1] === 'path') path = match[2];
  }
  return path;
}

/** The chart's files, paths as in the archive (`web/Chart.yaml`, `web/templates/...`), and the chart directory. */
export function readChartArchive(archive: Uint8Array, where: string, limits: ArchiveLimits): { dir: string; files: ChartFile[] } {
  let tar: Buffer;
  try {
    tar = gunzipSync(archive, { maxOutputLength: limits.maxBytes });
  } catch (error) {
    const over = (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || error instanceof RangeError;
    throw new ChartSourceError(
      over ? ChartSourceErrorCode.LimitExceeded : ChartSourceErrorCode.InvalidChart,
      over ? `${where}: the chart unpacks to more than ${limits.maxBytes} bytes` : `${where}: the chart archive is not gzip`,
    );
  }
  const files: ChartFile[] = [];
  let longName: string | undefined;
  let offset = 0;
  while (offset + BLOCK <= tar.length) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) break;
    const size = octal(header, 124, 12);
    const type = String.fromCharCode(header[156] ?? 0);
    const dataStart = offset + BLOCK;
    if (!Number.isSafeInteger(size) || size < 0 || dataStart + size > tar.length)
      throw new ChartSourceError(ChartSourceErrorCode.InvalidChart, `${where}: the chart archive is truncated or not a tar`);
    const data = tar.subarray(dataStart, dataStart + size);
    offset = dataStart + Math.ceil(size / BLOCK) * BLOCK;
    if (type === 'x') {
      longName = paxPath(data) ?? longName;
      continue;
    }
    if (type === 'L') {
      longName = field(data, 0, data.length);
      continue;
    }
    if (type === 'g') continue;
    const prefix = field(header, 345, 155);
    const name = longName ?? (prefix === '' ? field(header, 0, 100) : `${prefix}/${field(header, 0, 100)}`);
    longName = undefined;
    if (type === '5') continue;
    if (type !== '0' && type !== '\0' && type !== '7')
      throw new ChartSourceError(ChartSourceErrorCode.InvalidChart, `${where}: ${name} is not a regular file (links and devices are refused in a chart)`);
    const parts = name.split('/').filter((p) => p !== '' && p !== '.');
    if (name.startsWith('/') || parts.includes('..') || name.includes('\\') || parts.length < 2) {
      throw new ChartSourceError(ChartSourceErrorCode.InvalidChart, `${where}: ${name} is outside the chart's directory`);
    }
    files.push({ path: parts.join('/'), content: new Uint8Array(data) });
    if (files.length > limits.maxFiles)
      throw new ChartSourceError(ChartSourceErrorCode.LimitExceeded, `${where}: the chart has more than ${limits.maxFiles} files`);
  }
  const dirs = new Set(files.map((f) => f.path.split('/')[0] ?? ''));
  const [dir] = dirs;
  if (dirs.size !== 1 || dir === undefined)
    throw new ChartSourceError(ChartSourceErrorCode.InvalidChart, `${where}: a chart archive holds one directory, this one ${dirs.size}`);
  if (!files.some((f) => f.path === `${dir}/Chart.yaml`))
    throw new ChartSourceError(ChartSourceErrorCode.InvalidChart, `${where}: the archive has no ${dir}/Chart.yaml`);
  return { dir, files };
}

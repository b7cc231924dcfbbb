// Reads a request body under a size limit and a deadline. The limit is enforced while streaming: a
// declared Content-Length over it is refused before one byte is read, and an undeclared (chunked) body is
// cut off at the first chunk that crosses it, so nothing oversized is buffered, parsed or hashed.
import type { IncomingMessage } from 'node:http';

export class BodyError extends Error {
  readonly code: 'too_large' | 'timeout' | 'aborted';
  constructor(code: BodyError['code'], message: string) {
    super(message);
    this.name = 'BodyError';
    this.code = code;
  }
}

export function readBody(req: IncomingMessage, options: { maxBytes: number; timeoutMs: number }): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > options.maxBytes) {
    return Promise.reject(new BodyError('too_large', `the body (${declared} bytes) is over the ${options.maxBytes}-byte limit`));
  }
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error: BodyError | undefined): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (error === undefined) {
        resolve(Buffer.concat(chunks, size));
        return;
      }
      // Stop reading; the caller answers and closes the connection.
      req.pause();
      chunks.length = 0;
      reject(error);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > options.maxBytes) finish(new BodyError('too_large', `the body is over the ${options.maxBytes}-byte limit`));
      else chunks.push(chunk);
    };
    const onEnd = (): void => finish(undefined);
    const onError = (): void => finish(new BodyError('aborted', 'the request was aborted'));
    const onClose = (): void => {
      if (!req.complete) finish(new BodyError('aborted', 'the request was aborted'));
    };
    const timer = setTimeout(() => finish(new BodyError('timeout', `the body did not arrive within ${options.timeoutMs} ms`)), options.timeoutMs);
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

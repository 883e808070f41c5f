import { TensorportError } from '@tensorport/lib';

export interface ServeOptions {
  port: number;
  host: string;
  /** Extra Host header names to accept (`--allow-host`); see serveStatic's host policy. */
  allowHosts?: string[];
}

/**
 * Serves the in-browser inspector (packages/web's built page, through its own static server) and
 * returns its URL and a `close`. Loaded only by `tensorport serve`, so other commands never load it.
 */
export async function startServer(options: ServeOptions): Promise<{ url: string; close(): Promise<void> }> {
  const { pageBuilt, serveStatic, WEB_DIST } = await import('@tensorport/web/server');
  if (!(await pageBuilt(WEB_DIST))) throw new TensorportError('IoError', `the inspector page is not built (${WEB_DIST} has no index.html); run npm run build`, { path: WEB_DIST });
  try {
    return await serveStatic(WEB_DIST, { port: options.port, host: options.host, allowHosts: options.allowHosts ?? [] });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new TensorportError('IoError', `cannot listen on ${options.host}:${options.port}: ${code ?? (e as Error).message}`, { cause: e });
  }
}

/** Resolves on the first SIGINT or SIGTERM (Ctrl-C), after which the server is closed. */
export function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

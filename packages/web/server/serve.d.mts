import type { Server } from 'node:http';

/** The built page (`vite build` output) of @tensorport/web. */
export declare const WEB_DIST: string;
/** True when `dir` (default WEB_DIST) holds a built page (its index.html). */
export declare function pageBuilt(dir?: string): Promise<boolean>;
/** The Content-Security-Policy the page carries as a meta tag and the server sends as a header. */
export declare const CONTENT_SECURITY_POLICY: string;

export interface ServeOptions {
  /** TCP port; 0 (default) picks a free one. */
  port?: number;
  /** Interface to listen on; default 127.0.0.1 (this machine only). */
  host?: string;
  /** Further Host header names accepted (the bound address, loopback names on loopback, and the interface addresses on 0.0.0.0/:: always are). */
  allowHosts?: string[];
}

export interface StaticServer {
  /** e.g. `http://127.0.0.1:8080/` */
  url: string;
  port: number;
  host: string;
  server: Server;
  close(): Promise<void>;
}

/** Serves the files under `dir` (GET/HEAD, only Host names that are this server: 421 otherwise) until `close()`. */
export declare function serveStatic(dir: string, options?: ServeOptions): Promise<StaticServer>;

export { HttpSource, type HttpSourceOptions, type TransferStats } from './http-source.ts';
export { parseContentRange, retryAfterMs, displayUrl, type HttpOptions } from './http.ts';
export { parseHfUri, parseHubUrl, resolveUrl, revisionUrl, hubName, chooseWeights, isRemoteInput, isCommit, DEFAULT_ENDPOINT, type HubAddress } from './hub.ts';
export { openRemote, remoteOptionsFromEnv, RemoteContext, RemoteFolder, type RemoteOptions } from './context.ts';

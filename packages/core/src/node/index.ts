export { nodeZlibCodec } from './zlib.ts';
export { FileSource } from './file-source.ts';
export { FileSink, type FileSinkOptions } from './file-sink.ts';
export { pendingTempFiles } from './cleanup.ts';
export { CommitGroup } from './commit-group.ts';
export { setStaleFileReporter, sweepOnce, sweepStaleFiles, type StaleFileReporter } from './stale.ts';
export { openCheckpointPath, sameFile, writeCheckpointPath, type WriteCheckpointOptions, type WriteCheckpointResult } from './paths.ts';
export { nodeFetch } from './http-fetch.ts';

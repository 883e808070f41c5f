export * from './errors.ts';
export * from './dtype.ts';
export * from './tensor.ts';
export * from './io/source.ts';
export * from './io/sink.ts';
export * from './safetensors/order.ts';
export * from './safetensors/writer.ts';
export * from './zip/index.ts';

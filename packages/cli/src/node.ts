/** `import … from 'tensorport/node'`: the library with paths (@tensorport/lib/node), re-exported whole. */
export * from '@tensorport/lib/node';

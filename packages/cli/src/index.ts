/**
 * `import … from 'tensorport'`: the library (@tensorport/lib), browser-safe, re-exported whole so
 * that the package people install for the command is the library too. The command line itself
 * is `tensorport/cli`; the path forms are `tensorport/node`.
 */
export * from '@tensorport/lib';

/**
 * The command line as a library (`tensorport/cli`): `main(argv, io)` runs it without exiting the
 * process. Importing it runs nothing; the `tensorport` bin is `bin.ts`.
 */
export { VERSION } from './version.ts';
export { main, type CliIO } from './program.ts';
export { EXIT_OK, EXIT_FAILED, EXIT_USAGE, type CommandContext, type RegisterCommand } from './commands/context.ts';
export { parseSize, formatBytes } from './size.ts';

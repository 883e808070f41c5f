/** `tensorport convert` is the library's `convertPath`: the command only maps its flags. */
export { convertPath as convert, type ConvertPathOptions as ConvertOptions, type ConvertPathResult as ConvertResult } from 'tensorport/node';
export type { CastTarget as TargetDtype } from '@tensorport/core';

import pkg from '../package.json' with { type: 'json' }

/** The version of this build, from package.json (bundled in at build time). */
export const VERSION: string = pkg.version
export const NAME = 'pind'

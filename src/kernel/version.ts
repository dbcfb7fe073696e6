import pkg from '../../package.json' with { type: 'json' }

/** The version of this build, from package.json (bundled in at build time). */
export const VERSION: string = pkg.version

// stamped by scripts/bundle.mjs (esbuild `define`); absent when the sources run unbundled
declare const __PIND_COMMIT__: string | undefined
declare const __PIND_BUILD_DATE__: string | undefined

/** The git commit this build was bundled from ("unknown" outside a bundle or a git checkout; "-dirty" when the tree had changes). */
export const COMMIT: string = typeof __PIND_COMMIT__ === 'string' ? __PIND_COMMIT__ : 'unknown'
/** When the bundle was made (UTC, RFC 3339; SOURCE_DATE_EPOCH when set, for reproducible builds). */
export const BUILD_DATE: string = typeof __PIND_BUILD_DATE__ === 'string' ? __PIND_BUILD_DATE__ : 'unknown'

/** `pind --version`: version, commit and build date on one line. */
export function versionLine (): string {
  return `pind ${VERSION} (commit ${COMMIT}, built ${BUILD_DATE})`
}

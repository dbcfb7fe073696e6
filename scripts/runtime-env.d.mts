// Hand-written types for runtime-env.mjs.
export function environmentAssignments (value: string): Record<string, string>
export function unitRuntimeEnv (file?: string): Record<string, string>
export function dockerfileRuntimeEnv (file?: string): Record<string, string>
export function unitEnvironmentWords (value: string): string[]

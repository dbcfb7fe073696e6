/** Runs in every test file (vitest setupFiles): its spawned processes and temp dirs go when it ends. */
import { afterAll } from 'vitest'
import { cleanUpAfterFile } from './pind.js'

afterAll(cleanUpAfterFile)
